/**
 * The one timer behind every call's deadlines (src/tools/deadline-timers.ts, docs/semantics.md#timeouts):
 * entries fire at their millisecond and not before, cancelling leaves no Node timer behind, entries
 * due together all fire before any follow-up runs, and follow-ups beyond a slice wait for the event
 * loop while later deadlines still fire between slices. Then the runner: a burst of deadlines tells every
 * `tool_timeout` before the first outcome (a Node timer per call told one, finished it, told the next).
 */
import { setMaxListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { hangTool } from "../../src/tools/builtin/index.js";
import { DeadlineTimers } from "../../src/tools/deadline-timers.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import { ToolRunner } from "../../src/tools/runner.js";

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});

afterEach(() => {
  vi.useRealTimers();
});

describe("DeadlineTimers", () => {
  it("fires each entry at its millisecond, not one before, on a single Node timer", async () => {
    const timers = new DeadlineTimers();
    const fired: string[] = [];
    timers.schedule(300, () => void fired.push("c"));
    timers.schedule(100, () => void fired.push("a"));
    timers.schedule(200, () => void fired.push("b"));
    expect(vi.getTimerCount()).toBe(1);

    await vi.advanceTimersByTimeAsync(99);
    expect(fired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(["a"]);
    await vi.advanceTimersByTimeAsync(99);
    expect(fired).toEqual(["a"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(["a", "b"]);
    await vi.advanceTimersByTimeAsync(100);
    expect(fired).toEqual(["a", "b", "c"]);
    expect(timers.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("leaves no Node timer once every entry is cancelled, and a cancelled entry never fires", async () => {
    const timers = new DeadlineTimers();
    const fired: string[] = [];
    const first = timers.schedule(100, () => void fired.push("first"));
    const second = timers.schedule(5_000, () => void fired.push("second"));
    first.cancel();
    expect(vi.getTimerCount()).toBe(1);
    second.cancel();
    second.cancel();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(fired).toEqual([]);
  });

  it("re-arms for an entry earlier than the one it waits for", async () => {
    const timers = new DeadlineTimers();
    const fired: number[] = [];
    timers.schedule(1_000, () => void fired.push(Date.now()));
    timers.schedule(10, () => void fired.push(Date.now()));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(fired).toEqual([10, 1_000]);
  });

  it("fires every entry due together before any follow-up, and skips one cancelled meanwhile", async () => {
    const timers = new DeadlineTimers();
    const order: string[] = [];
    const entries = ["a", "b", "c"].map((name) =>
      timers.schedule(50, () => {
        order.push(`fire ${name}`);
        if (name === "a") entries[2]?.cancel();
        return () => order.push(`follow-up ${name}`);
      }),
    );
    await vi.advanceTimersByTimeAsync(50);
    expect(order).toEqual(["fire a", "fire b", "follow-up a", "follow-up b"]);
  });

  it("runs follow-ups beyond a slice one slice per turn of the event loop, timers due firing between", async () => {
    // every follow-up takes a "millisecond" of the slice clock, so one fits in a slice
    let sliceClockMs = 0;
    const timers = new DeadlineTimers(Date.now, () => sliceClockMs);
    const order: string[] = [];
    for (const name of ["a", "b", "c"]) {
      timers.schedule(50, () => {
        order.push(`fire ${name}`);
        return () => {
          sliceClockMs += 1;
          order.push(`follow-up ${name}`);
        };
      });
    }
    timers.schedule(51, () => void order.push("fire later"));

    await vi.advanceTimersByTimeAsync(50);
    expect(order).toEqual(["fire a", "fire b", "fire c", "follow-up a"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(order.slice(4)).toEqual(["follow-up b", "fire later", "follow-up c"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("gives a burst's later turns fewer follow-ups when what they set off took long, and more when not", async () => {
    // each follow-up is quick itself but sets off half a "millisecond" of promise continuations
    let sliceClockMs = 0;
    const timers = new DeadlineTimers(Date.now, () => sliceClockMs);
    let followedUp = 0;
    for (let index = 0; index < 40; index++) {
      timers.schedule(50, () => () => {
        followedUp++;
        queueMicrotask(() => (sliceClockMs += 0.5));
      });
    }
    const perTurn: number[] = [];
    await vi.advanceTimersByTimeAsync(50);
    perTurn.push(followedUp);
    while (followedUp < 40) {
      const before = followedUp;
      await vi.advanceTimersByTimeAsync(1);
      perTurn.push(followedUp - before);
    }
    // 16 took 8 ms: halve while a turn takes over 2 ms (8, 4), hold at 4 (2 ms), and so on to the end
    expect(perTurn).toEqual([16, 8, 4, 4, 4, 4]);

    // follow-ups that set nothing off double their share each turn of the loop
    sliceClockMs = 0;
    let quick = 0;
    for (let index = 0; index < 100; index++) timers.schedule(10, () => () => void quick++);
    const quickPerTurn: number[] = [];
    await vi.advanceTimersByTimeAsync(10);
    quickPerTurn.push(quick);
    while (quick < 100) {
      const before = quick;
      await vi.advanceTimersByTimeAsync(1);
      quickPerTurn.push(quick - before);
    }
    expect(quickPerTurn).toEqual([16, 32, 52]);
  });

  it("fires nothing early when the wall clock is set forward", async () => {
    const timers = new DeadlineTimers();
    const fired: string[] = [];
    timers.schedule(500, () => void fired.push("soon"));
    timers.schedule(1_000, () => void fired.push("later"));
    vi.setSystemTime(Date.now() + 3_600_000);
    await vi.advanceTimersByTimeAsync(500);
    expect(fired).toEqual(["soon"]);
    await vi.advanceTimersByTimeAsync(499);
    expect(fired).toEqual(["soon"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(["soon", "later"]);
  });

  it("keeps the timer's time when the clock lags behind it (only setTimeout faked)", async () => {
    vi.useRealTimers();
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate"] });
    const frozenNow = Date.now();
    const timers = new DeadlineTimers(() => frozenNow);
    const fired: string[] = [];
    timers.schedule(100, () => void fired.push("first"));
    timers.schedule(300, () => void fired.push("second"));
    await vi.advanceTimersByTimeAsync(100);
    expect(fired).toEqual(["first"]);
    // scheduled "now", which is 100 ms after the frozen clock by the timer's account
    timers.schedule(100, () => void fired.push("third"));
    await vi.advanceTimersByTimeAsync(99);
    expect(fired).toEqual(["first"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(["first", "third"]);
    await vi.advanceTimersByTimeAsync(100);
    expect(fired).toEqual(["first", "third", "second"]);
  });
});

describe("a burst of deadlines in the runner", () => {
  it("tells every call's timeout before the first outcome is published", async () => {
    const runner = new ToolRunner(new ToolRegistry([hangTool]), {
      maxCallTimeoutMs: 600_000,
      overrides: {},
      progressAfterMs: 3_600_000,
      progressIntervalMs: 3_600_000,
      defaults: { timeoutMs: 1_000, idleTimeoutMs: 0 },
    });
    const signal = new AbortController().signal;
    // every call of the burst listens on the turn's signal, as a turn's own does (turn-run.ts)
    setMaxListeners(0, signal);
    const scope = {
      turnId: "t",
      sessionId: "s",
      agentId: "a",
      workspace: undefined,
      allowedRoots: [],
      depth: 0,
      signal,
    };
    const order: string[] = [];
    const runs = Array.from({ length: 20 }, (_, index) =>
      runner
        .run({ callId: `c${index}`, name: "hang", input: {} }, scope, {
          onTimeout: (call) => order.push(`told ${call.callId}`),
        })
        .then((outcome) => order.push(`${outcome.status} c${index}`)),
    );
    await vi.advanceTimersByTimeAsync(1_000);
    // a burst's follow-ups share turns of the event loop, each a (fake) millisecond here
    await vi.advanceTimersByTimeAsync(5);
    await Promise.all(runs);

    expect(order.slice(0, 20)).toEqual(Array.from({ length: 20 }, (_, index) => `told c${index}`));
    expect(order.slice(20)).toEqual(Array.from({ length: 20 }, (_, index) => `timeout c${index}`));
    // the hung tools' zombie grace timers are all that is left
    await vi.advanceTimersByTimeAsync(60_000);
    expect(vi.getTimerCount()).toBe(0);
  });
});
