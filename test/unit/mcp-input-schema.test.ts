/**
 * An MCP tool's JSON Schema as reins checks a call's input with it (src/mcp/input-schema.ts): patterns
 * check as JSON Schema says, in linear time; one that cannot run in linear time is left to the server
 * (and said so), so no pattern a server lists and no input a model writes can hold the event loop.
 */
import { describe, expect, it } from "vitest";
import { mcpInputSchema } from "../../src/mcp/input-schema.js";

function schemaWithPattern(pattern: string) {
  const warnings: string[] = [];
  const check = mcpInputSchema(
    { type: "object", properties: { s: { type: "string", pattern } }, required: ["s"] },
    (problem) => warnings.push(problem),
  );
  return { check, warnings };
}

/** Checks `input`, measuring how long the check held the event loop. */
function timed(check: ReturnType<typeof schemaWithPattern>["check"], input: unknown) {
  const startedAt = Date.now();
  const result = check.safeParse(input);
  return { result, elapsedMs: Date.now() - startedAt };
}

/** 31 characters: about 90 s of backtracking for each of these patterns on this machine. */
const ATTACK = `${"a".repeat(31)}!`;

describe("an MCP tool's input schema", () => {
  it("checks a pattern that backtracks exponentially in linear time: the event loop is not held", () => {
    const { check, warnings } = schemaWithPattern("^(a+)+$");
    const { result, elapsedMs } = timed(check, { s: ATTACK });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]).toMatchObject({ path: ["s"], message: 'must match pattern "^(a+)+$"' });
    expect(elapsedMs).toBeLessThan(10_000);
    expect(check.safeParse({ s: "aaaa" }).success).toBe(true);
    expect(warnings).toEqual([]);
  });

  it.each([
    ["a lookahead", "^(?=a)(a+)+$"],
    ["a backreference", "^(a+)+\\1$"],
    ["a property escape, which needs the u flag", "^(\\p{L}+)+$"],
  ])("leaves a pattern with %s to the server, saying so: it cannot run in linear time", (_what, pattern) => {
    const { check, warnings } = schemaWithPattern(pattern);
    const { result, elapsedMs } = timed(check, { s: ATTACK });
    expect(result.success).toBe(true);
    expect(elapsedMs).toBeLessThan(10_000);
    expect(warnings).toEqual([
      `has a pattern that cannot be checked in linear time (${pattern}): the server checks it`,
    ]);
  });

  it("keeps patterns' meaning: anchors, classes, repetition and patternProperties", () => {
    expect(schemaWithPattern("^[0-9]{3}$").check.safeParse({ s: "123" }).success).toBe(true);
    expect(schemaWithPattern("^[0-9]{3}$").check.safeParse({ s: "1234" }).success).toBe(false);
    const byName = mcpInputSchema(
      { type: "object", patternProperties: { "^x_": { type: "number" } }, additionalProperties: false },
      () => {},
    );
    expect(byName.safeParse({ x_a: 1 }).success).toBe(true);
    expect(byName.safeParse({ x_a: "one" }).success).toBe(false);
    expect(byName.safeParse({ y: 1 }).success).toBe(false);
  });
});
