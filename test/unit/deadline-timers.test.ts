/**
 * The one timer behind every call's deadlines (src/tools/deadline-timers.ts, docs/semantics.md#timeouts):
 * entries fire at their millisecond and not before, cancelling leaves no Node timer behind, entries
 * due together all fire before any follow-up runs, and follow-ups beyond a slice wait for the event
 * loop while later deadlines still fire between slices — and between the follow-ups of a share, and
 * (`fireOverdue`) between the slices of a burst's commits, where the Node timer could not. Then the
 * runner: a burst of deadlines tells every `tool_timeout` before the first outcome (a Node timer per
 * call told one, finished it, told the next).
 */
import { setMaxListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { hangTool } from "../../src/tools/builtin/index.js";
import { WriteQueue } from "../../src/history/write-queue.js";
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

  it("never fires before its time when it is scheduled partway through a millisecond", async () => {
    // Node (and the fake clock) truncate a fractional setTimeout delay: the timer armed for an entry
    // due in 10.5 ms must not go off after 10
    vi.useRealTimers();
    vi.useFakeTimers({ now: 0, toFake: ["setTimeout", "clearTimeout", "performance"] });
    await vi.advanceTimersByTimeAsync(0.5);
    const timers = new DeadlineTimers(() => performance.now());
    const scheduledAt = performance.now();
    let firedAfterMs: number | undefined;
    timers.schedule(10, () => void (firedAfterMs = performance.now() - scheduledAt));
    await vi.advanceTimersByTimeAsync(9.5);
    expect(firedAfterMs).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1.5);
    expect(firedAfterMs).toBeGreaterThanOrEqual(10);
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

  it("calls one shared callback with the target each entry was scheduled for, its follow-up after", async () => {
    const timers = new DeadlineTimers();
    const order: string[] = [];
    const expire = (call: { id: string }) => {
      order.push(`fired ${call.id}`);
      return () => void order.push(`followed up ${call.id}`);
    };
    timers.schedule(100, expire, { id: "a" });
    const cancelled = timers.schedule(100, expire, { id: "b" });
    timers.schedule(100, expire, { id: "c" });
    cancelled.cancel();
    await vi.advanceTimersByTimeAsync(99);
    expect(order).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(order).toEqual(["fired a", "fired c", "followed up a", "followed up c"]);
  });

  it("reports a throwing callback or follow-up as uncaught and still runs the others", async () => {
    const timers = new DeadlineTimers();
    const reported: (() => void)[] = [];
    // the report is a microtask that throws, as an uncaught exception of a timer callback would be
    const microtasks = vi.spyOn(globalThis, "queueMicrotask").mockImplementation((task) => {
      reported.push(task);
    });
    const order: string[] = [];
    timers.schedule(10, () => {
      throw new Error("callback failed");
    });
    timers.schedule(10, () => () => {
      throw new Error("follow-up failed");
    });
    timers.schedule(10, () => {
      order.push("fired");
      return () => void order.push("followed up");
    });
    await vi.advanceTimersByTimeAsync(10);
    microtasks.mockRestore();
    expect(order).toEqual(["fired", "followed up"]);
    expect(reported).toHaveLength(2);
    expect(reported[0]).toThrow("callback failed");
    expect(reported[1]).toThrow("follow-up failed");
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

  /**
   * Entries a, b and c due in 50 ms, whose follow-ups each do `work`, and one due a millisecond later;
   * returns the order in which they fire and follow up.
   */
  function threeThenOneLater(timers: DeadlineTimers, work: () => void): string[] {
    const order: string[] = [];
    for (const name of ["a", "b", "c"]) {
      timers.schedule(50, () => {
        order.push(`fire ${name}`);
        return () => {
          work();
          order.push(`follow-up ${name}`);
        };
      });
    }
    timers.schedule(51, () => void order.push("fire later"));
    return order;
  }

  it("runs follow-ups beyond a slice one slice per turn of the event loop, timers due firing between", async () => {
    // every follow-up takes a "millisecond" of the slice clock, so one fits in a slice
    let sliceClockMs = 0;
    const timers = new DeadlineTimers(Date.now, () => sliceClockMs);
    const order = threeThenOneLater(timers, () => (sliceClockMs += 1));

    await vi.advanceTimersByTimeAsync(50);
    expect(order).toEqual(["fire a", "fire b", "fire c", "follow-up a"]);
    // the next share starts with the deadline due by then
    await vi.advanceTimersByTimeAsync(1);
    expect(order.slice(4)).toEqual(["fire later", "follow-up b"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(order.slice(6)).toEqual(["follow-up c"]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("fires a deadline that fell due while earlier follow-ups ran before the next follow-up, not after them", async () => {
    // the follow-ups' work moves the deadline clock on while the (fake) Node timers stand still
    let workMs = 0;
    const timers = new DeadlineTimers(
      () => Date.now() + workMs,
      () => 0,
    );
    const order = threeThenOneLater(timers, () => (workMs += 2));

    await vi.advanceTimersByTimeAsync(50);
    expect(order).toEqual([
      "fire a",
      "fire b",
      "fire c",
      "follow-up a",
      "fire later",
      "follow-up b",
      "follow-up c",
    ]);
    expect(timers.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("fireOverdue fires what is due by now, re-arms for the rest, and runs the follow-ups in a later share", async () => {
    let workMs = 0;
    const timers = new DeadlineTimers(() => Date.now() + workMs);
    const order: string[] = [];
    timers.schedule(10, () => {
      order.push("fire a");
      return () => void order.push("follow-up a");
    });
    timers.schedule(20, () => void order.push("fire b"));

    timers.fireOverdue();
    expect(order).toEqual([]);
    // a commit slice took 12 ms while the Node timer for a could not fire
    workMs = 12;
    timers.fireOverdue();
    expect(order).toEqual(["fire a"]);
    expect(timers.size).toBe(1);
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual(["fire a", "follow-up a"]);
    // one Node timer, for b, which is due 8 ms on (a fires once)
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(7);
    expect(order).toEqual(["fire a", "follow-up a"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(order).toEqual(["fire a", "follow-up a", "fire b"]);
    expect(vi.getTimerCount()).toBe(0);
  });

  /** Schedules `count` entries due in `delayMs` whose follow-ups call `followUp`; returns their count so far. */
  function burst(timers: DeadlineTimers, count: number, delayMs: number, followUp: () => void) {
    let followedUp = 0;
    for (let index = 0; index < count; index++) {
      timers.schedule(delayMs, () => () => {
        followedUp++;
        followUp();
      });
    }
    return () => followedUp;
  }

  /** How many follow-ups each turn of the event loop ran (one fake millisecond each) until `count`. */
  async function sharesUntil(count: number, followedUp: () => number, firstMs: number): Promise<number[]> {
    await vi.advanceTimersByTimeAsync(firstMs);
    const shares = [followedUp()];
    while (followedUp() < count) {
      const before = followedUp();
      await vi.advanceTimersByTimeAsync(1);
      shares.push(followedUp() - before);
    }
    return shares;
  }

  it("gives a burst's later turns fewer follow-ups when what they set off took long, and more when not", async () => {
    let sliceClockMs = 0;
    const timers = new DeadlineTimers(Date.now, () => sliceClockMs);
    // each follow-up is quick itself but sets off half a "millisecond" of promise continuations
    const slow = burst(timers, 60, 50, () => queueMicrotask(() => (sliceClockMs += 0.5)));
    // the first share runs with the deadlines (not measured); 16 then took 8 ms: halve while a share
    // takes over 2 ms (8, 4), then hold at 4 (2 ms)
    expect(await sharesUntil(60, slow, 50)).toEqual([16, 16, 8, 4, 4, 4, 4, 4]);

    // follow-ups that set nothing off double their share each turn of the loop
    const quick = burst(timers, 100, 10, () => {});
    expect(await sharesUntil(100, quick, 10)).toEqual([16, 16, 32, 36]);
  });

  it("does not shrink a burst's share for time the rest of the event loop takes", async () => {
    let sliceClockMs = 0;
    const timers = new DeadlineTimers(Date.now, () => sliceClockMs);
    // other work (streams, I/O) takes 3 "milliseconds" of every turn of the event loop
    let busy = true;
    const otherWork = () => {
      sliceClockMs += 3;
      if (busy) setImmediate(otherWork);
    };
    setImmediate(otherWork);
    const followedUp = burst(timers, 200, 50, () => {});
    expect(await sharesUntil(200, followedUp, 50)).toEqual([16, 16, 32, 64, 72]);
    busy = false;
    await vi.advanceTimersByTimeAsync(1);
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

describe("deadlines during a burst of commit slices", () => {
  it("fire at the slice after they fall due, not once every slice of the burst has committed", async () => {
    // each slice's commit takes 2 ms by the clocks of the queue and the deadlines; the Node timers
    // (fake) stand still, as a real timer waits while the event loop runs slice after slice
    let workMs = 0;
    const timers = new DeadlineTimers(() => Date.now() + workMs);
    const committed: number[][] = [];
    let nextTurn: (() => void) | undefined;
    const queue = new WriteQueue<number>({
      commit: (ops) => {
        committed.push(ops);
        workMs += 2;
      },
      onError: (error) => {
        throw error;
      },
      now: () => workMs,
      beforeSlice: () => timers.fireOverdue(),
      // each slice waits for the next turn of the event loop, which the test runs by hand
      schedule: (flush) => {
        nextTurn = flush;
        return { cancel: () => (nextTurn = undefined) };
      },
    });
    let firedAfterSlices: number | undefined;
    timers.schedule(3, () => void (firedAfterSlices = committed.length));
    // a burst: 4,000 writes, each its own run (a call's result, its event), in one tick
    for (let op = 0; op < 4_000; op++) {
      queue.push(op);
      await Promise.resolve();
    }
    // slice after slice, each in a turn of the event loop, while the (fake) Node timers stand still
    while (nextTurn) nextTurn();
    expect(queue.pending).toBe(false);
    // slices of 2 ms: the deadline was due before the third, and it fired then
    expect(firedAfterSlices).toBe(2);
    expect(committed.length).toBeGreaterThan(4);
    expect(committed.flat()).toHaveLength(4_000);
  });
});
