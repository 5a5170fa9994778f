/**
 * The JSON nesting check (docs/semantics.md#isolation-and-limits): exact at the limit, iterative (no stack
 * overflow however deep), and usable on model tool input as well as request bodies.
 */
import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, jsonDepthExceeds } from "../../src/json-depth.js";

/** `depth` arrays (or objects, alternating) around `inner`, built without recursion. */
function nested(depth: number, inner: unknown = "leaf"): unknown {
  let value = inner;
  for (let level = 0; level < depth; level++) value = level % 2 === 0 ? [value] : { key: value };
  return value;
}

describe("jsonDepthExceeds", () => {
  it("allows 64 levels and refuses 65 by default", () => {
    expect(MAX_JSON_DEPTH).toBe(64);
    expect(jsonDepthExceeds(nested(64))).toBe(false);
    expect(jsonDepthExceeds(nested(65))).toBe(true);
  });

  it.each([
    ["a scalar", "text", 0, false],
    ["null", null, 0, false],
    ["an empty array at max 0", [], 0, true],
    ["an empty array at max 1", [], 1, false],
    ["an empty object at max 1", {}, 1, false],
    ["an object holding an array", { list: [1, 2] }, 1, true],
    ["an object holding an array at max 2", { list: [1, 2] }, 2, false],
  ])("%s", (_name, value, max, expected) => {
    expect(jsonDepthExceeds(value, max)).toBe(expected);
  });

  it("finds the one deep branch among many shallow ones", () => {
    const wide = { shallow: Array.from({ length: 1_000 }, (_, index) => ({ index })), deep: nested(10) };
    expect(jsonDepthExceeds(wide, 10)).toBe(true);
    expect(jsonDepthExceeds(wide, 11)).toBe(false);
  });

  it("measures a value parsed from text nested 1,000,000 levels without overflowing the stack", () => {
    const text = "[".repeat(1_000_000) + "]".repeat(1_000_000);
    const value: unknown = JSON.parse(text);
    // the recursive walk everything downstream does would overflow here
    expect(() => JSON.stringify(value)).toThrow(RangeError);
    expect(jsonDepthExceeds(value)).toBe(true);
  });

  it("counts a cyclic object as too deep instead of looping", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(jsonDepthExceeds(cyclic)).toBe(true);
  });
});
