/**
 * The loop detector (docs/semantics.md#scheduling): the same tool with the same input — keys in any
 * order, `_meta` ignored — counted within a window of recent calls, warning and then stopping.
 */
import { describe, expect, it } from "vitest";
import { LoopDetector } from "../../src/turns/loop-detector.js";

describe("LoopDetector", () => {
  it("warns at the third and stops at the fifth sighting of one call", () => {
    const detector = new LoopDetector();
    const verdicts = Array.from({ length: 5 }, () => detector.observe("read", { path: "a" }));
    expect(verdicts.map((verdict) => verdict.action)).toEqual(["none", "none", "warn", "warn", "stop"]);
    expect(verdicts.map((verdict) => verdict.repeats)).toEqual([1, 2, 3, 4, 5]);
  });

  it("sees a repeat whatever the key order, at every level, and whatever the _meta", () => {
    const detector = new LoopDetector({ windowSize: 20, warnAt: 2, stopAt: 3 });
    detector.observe("search", { query: "x", options: { limit: 5, deep: true }, _meta: { timeout: 100 } });
    const again = detector.observe("search", { options: { deep: true, limit: 5 }, query: "x" });
    expect(again).toEqual({ repeats: 2, action: "warn" });
  });

  it("tells apart other tools, other inputs and a _meta that is not at the top", () => {
    const detector = new LoopDetector({ windowSize: 20, warnAt: 2, stopAt: 3 });
    detector.observe("read", { path: "a", options: { _meta: 1 } });
    expect(detector.observe("read", { path: "a", options: { _meta: 2 } }).repeats).toBe(1);
    expect(detector.observe("write", { path: "a", options: { _meta: 1 } }).repeats).toBe(1);
    expect(detector.observe("read", { path: "b", options: { _meta: 1 } }).repeats).toBe(1);
    expect(detector.observe("read", { path: "a", options: { _meta: 1 } }).repeats).toBe(2);
  });

  it("forgets calls that left the window", () => {
    const detector = new LoopDetector({ windowSize: 3, warnAt: 2, stopAt: 3 });
    detector.observe("read", { path: "a" });
    detector.observe("read", { path: "b" });
    detector.observe("read", { path: "c" });
    expect(detector.observe("read", { path: "a" })).toEqual({ repeats: 1, action: "none" });
    expect(detector.observe("read", { path: "c" })).toEqual({ repeats: 2, action: "warn" });
  });
});
