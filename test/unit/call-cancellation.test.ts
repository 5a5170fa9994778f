/**
 * Cancelling one call of a running batch (src/tools/call-cancellation.ts, docs/semantics.md#cancellation):
 * only the batch's calls can be cancelled, once; listeners run once; a wait's signal is aborted whether
 * it was asked for before or after the cancel; a finished batch's calls are forgotten.
 */
import { describe, expect, it } from "vitest";
import { CallCancellation } from "../../src/tools/call-cancellation.js";

describe("CallCancellation", () => {
  it("cancels an open call once, with its reason, and runs its listeners once", () => {
    const cancellation = new CallCancellation();
    cancellation.openCalls(["a", "b"]);
    const heard: string[] = [];
    cancellation.onCancel("a", () => heard.push("a"));
    const stop = cancellation.onCancel("b", () => heard.push("b"));
    stop();
    const reason = new Error("by user");

    expect(cancellation.cancel("a", reason)).toBe(true);
    expect(cancellation.cancel("a", reason)).toBe(false);
    expect(cancellation.cancel("b", reason)).toBe(true);
    expect(heard).toEqual(["a"]);
    expect(cancellation.isCancelled("a")).toBe(true);
    expect(cancellation.reasonOf("a")).toBe(reason);
    expect(cancellation.isOpen("a")).toBe(false);
  });

  it("refuses calls outside the running batch and forgets a finished batch", () => {
    const cancellation = new CallCancellation();
    expect(cancellation.cancel("x", new Error())).toBe(false);
    cancellation.openCalls(["x"]);
    expect(cancellation.isOpen("x")).toBe(true);
    cancellation.closeCalls(["x"]);
    expect(cancellation.isOpen("x")).toBe(false);
    expect(cancellation.cancel("x", new Error())).toBe(false);
    expect(cancellation.isCancelled("x")).toBe(false);
  });

  it("aborts a wait's signal made before the cancel, and makes one made after it aborted", () => {
    const cancellation = new CallCancellation();
    cancellation.openCalls(["early", "late"]);
    const early = cancellation.signal("early");
    expect(cancellation.signal("early")).toBe(early);
    expect(early.aborted).toBe(false);
    const reason = new Error("stop");
    cancellation.cancel("early", reason);
    cancellation.cancel("late", reason);
    expect(early.aborted).toBe(true);
    expect(early.reason).toBe(reason);
    expect(cancellation.signal("late").aborted).toBe(true);
  });
});
