/**
 * One abort listener per signal (src/tools/abort-fanout.ts): every running call of a turn waits on the
 * turn's signal through one EventTarget listener, in registration order, each callback removable.
 */
import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it, vi } from "vitest";
import { onAbort } from "../../src/tools/abort-fanout.js";

afterEach(() => vi.restoreAllMocks());

describe("onAbort", () => {
  it("puts one listener on the signal however many callbacks wait, and runs them in order when it aborts", () => {
    const controller = new AbortController();
    const ran: number[] = [];
    for (let index = 0; index < 250; index++) onAbort(controller.signal, () => ran.push(index));
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    controller.abort();
    expect(ran).toEqual(Array.from({ length: 250 }, (_, index) => index));
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("never runs a removed callback", () => {
    const controller = new AbortController();
    const ran: string[] = [];
    const removeFirst = onAbort(controller.signal, () => ran.push("first"));
    onAbort(controller.signal, () => ran.push("second"));
    removeFirst();
    removeFirst();
    controller.abort();
    expect(ran).toEqual(["second"]);
  });

  it("runs the callbacks registered when the signal aborts, but not one an earlier callback removed", () => {
    const controller = new AbortController();
    const ran: string[] = [];
    let removeLast = () => {};
    onAbort(controller.signal, () => {
      ran.push("first");
      removeLast();
      onAbort(controller.signal, () => ran.push("added while aborting"));
    });
    onAbort(controller.signal, () => ran.push("middle"));
    removeLast = onAbort(controller.signal, () => ran.push("last"));
    controller.abort();
    // as with listeners: one removed before its turn does not run, one added after the abort never runs
    expect(ran).toEqual(["first", "middle"]);
  });

  it("removes its listener from the signal once no callback waits", () => {
    const controller = new AbortController();
    const removers = [1, 2, 3].map(() => onAbort(controller.signal, () => {}));
    for (const remove of removers) {
      expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
      remove();
    }
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    const ran: string[] = [];
    onAbort(controller.signal, () => ran.push("again"));
    controller.abort();
    expect(ran).toEqual(["again"]);
  });

  it("keeps signals apart", () => {
    const first = new AbortController();
    const second = new AbortController();
    const ran: string[] = [];
    onAbort(first.signal, () => ran.push("first"));
    onAbort(second.signal, () => ran.push("second"));
    second.abort();
    expect(ran).toEqual(["second"]);
    first.abort();
    expect(ran).toEqual(["second", "first"]);
  });

  it("reports a callback that throws as uncaught and still runs the others", () => {
    const reported: (() => void)[] = [];
    vi.spyOn(globalThis, "queueMicrotask").mockImplementation((task) => void reported.push(task));
    const controller = new AbortController();
    const ran: string[] = [];
    onAbort(controller.signal, () => {
      throw new Error("listener failed");
    });
    onAbort(controller.signal, () => ran.push("after"));
    controller.abort();
    expect(ran).toEqual(["after"]);
    expect(reported).toHaveLength(1);
    expect(() => reported[0]?.()).toThrow("listener failed");
  });
});
