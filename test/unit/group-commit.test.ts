/**
 * Batched durable writes (docs/events.md#persistence): the write queue commits what one tick queued
 * in one transaction — at the next microtask once MAX_OPS_PER_BATCH writes wait, and in slices of about
 * COMMIT_SLICE_MS, the rest in the next turn of the event loop — and runs each afterCommit callback
 * only after the commit holding the writes before it; turns run back to back in-process share commits,
 * while a turn someone follows still settles `done` only after its follower had the terminal event.
 */
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import type { TurnEvent } from "../../src/events.js";
import type { SqliteHistoryStore } from "../../src/history/sqlite-store.js";
import { createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import {
  COMMIT_SLICE_MS,
  FIRST_OPS_PER_SLICE,
  MAX_LAG_SLICES,
  MAX_OPS_PER_BATCH,
  MIN_OPS_PER_SLICE,
  WriteQueue,
} from "../../src/history/write-queue.js";
import type { ModelEngine } from "../../src/providers/engine.js";
import { TurnEventBus } from "../../src/turns/event-bus.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import { startTurn, storedEvents } from "../support/history-store.js";

/**
 * A queue over `commit` whose end-of-tick flush runs only when the test says so; `now` is its clock
 * (one that never moves unless the commit moves it: every slice looks instant); `beforeSlice`, if
 * given, is the queue's hook, handed the queue.
 */
function manualQueue(
  commit: (ops: number[]) => void | Promise<void>,
  now: () => number = () => 0,
  beforeSlice?: (queue: WriteQueue<number>) => void,
) {
  let pendingFlush: (() => void) | undefined;
  const queue: WriteQueue<number> = new WriteQueue<number>({
    commit,
    onError: (error) => {
      throw error;
    },
    schedule: (flush) => {
      pendingFlush = flush;
      return { cancel: () => (pendingFlush = undefined) };
    },
    now,
    beforeSlice: beforeSlice && (() => beforeSlice(queue)),
  });
  return { queue, endOfTick: () => pendingFlush?.(), flushScheduled: () => pendingFlush !== undefined };
}

/** Pushes `count` writes (numbered from `first`) in one synchronous run, then lets that run end. */
async function pushRuns(queue: WriteQueue<number>, count: number, first = 0): Promise<void> {
  for (let op = first; op < first + count; op++) queue.push(op);
  await Promise.resolve();
}

/** A queue whose commits take `msPerOp` per write on its clock, recording each slice's size. */
function timedQueue(msPerOp: number) {
  let clockMs = 0;
  let cost = msPerOp;
  const slices: number[][] = [];
  const manual = manualQueue(
    (ops) => {
      slices.push(ops);
      clockMs += ops.length * cost;
    },
    () => clockMs,
  );
  return { ...manual, slices, setMsPerOp: (ms: number) => (cost = ms) };
}

/** Pushes `count` writes numbered from `first`, each in a synchronous run of its own. */
async function pushEach(queue: WriteQueue<number>, count: number, first = 0): Promise<void> {
  for (let op = first; op < first + count; op++) await pushRuns(queue, 1, op);
}

describe("the write queue", () => {
  it("commits everything queued before the end of the tick in one batch, then runs the callbacks", () => {
    const log: string[] = [];
    const { queue, endOfTick } = manualQueue((ops) => void log.push(`commit ${ops.join(",")}`));
    queue.push(1);
    queue.afterCommit(() => log.push("after 1"));
    queue.push(2);
    queue.afterCommit(() => log.push("after 2"));
    expect(log).toEqual([]);
    endOfTick();
    expect(log).toEqual(["commit 1,2", "after 1", "after 2"]);
    expect(queue.pending).toBe(false);
  });

  it("commits a batch that reaches MAX_OPS_PER_BATCH at the next microtask, without the end of the tick", async () => {
    const batches: number[][] = [];
    const { queue } = manualQueue((ops) => void batches.push(ops));
    let delivered = false;
    await pushEach(queue, MAX_OPS_PER_BATCH - 1);
    queue.afterCommit(() => (delivered = true));
    expect(batches).toEqual([]);
    await pushEach(queue, 2, MAX_OPS_PER_BATCH - 1);
    // the first slice takes FIRST_OPS_PER_SLICE writes; the callback waits for the slice holding the
    // writes queued before it
    expect(batches.map((batch) => batch.length)).toEqual([FIRST_OPS_PER_SLICE]);
    expect(delivered).toBe(false);
    queue.flush();
    expect(batches.map((batch) => batch.length)).toEqual([
      FIRST_OPS_PER_SLICE,
      MAX_OPS_PER_BATCH + 1 - FIRST_OPS_PER_SLICE,
    ]);
    expect(delivered).toBe(true);
  });

  it("commits a long tick in slices of about COMMIT_SLICE_MS, each callback after the slice holding its writes", async () => {
    // 20 µs a write: the first slice (FIRST_OPS_PER_SLICE writes) takes 5 ms, so the next is halved,
    // and so on until a slice takes between half and twice COMMIT_SLICE_MS
    const msPerOp = 0.02;
    const { queue, endOfTick, flushScheduled, slices } = timedQueue(msPerOp);
    const delivered: number[] = [];
    for (let op = 0; op < 500; op++) {
      await pushRuns(queue, 1, op);
      if (op % 100 === 99) queue.afterCommit(() => delivered.push(op));
    }
    endOfTick();
    expect(slices.map((slice) => slice.length)).toEqual([FIRST_OPS_PER_SLICE]);
    expect(delivered).toEqual([99, 199]);
    // the rest waits for the next turn of the event loop
    expect(flushScheduled()).toBe(true);
    expect(queue.pending).toBe(true);
    while (flushScheduled()) endOfTick();
    // 256 took 5 ms: halved; 128 took 2.6 ms: halved; 64 takes 1.3 ms, within a factor of two of
    // COMMIT_SLICE_MS: kept; then the last 52
    expect(slices.map((slice) => slice.length)).toEqual([256, 128, 64, 52]);
    expect(64 * msPerOp).toBeGreaterThan(COMMIT_SLICE_MS / 2);
    expect(64 * msPerOp).toBeLessThan(2 * COMMIT_SLICE_MS);
    // every write once, in order; every callback after its writes, in order
    expect(slices.flat()).toEqual(Array.from({ length: 500 }, (_, op) => op));
    expect(delivered).toEqual([99, 199, 299, 399, 499]);
    expect(queue.pending).toBe(false);
  });

  it("never splits what one synchronous run of code wrote: a slice ends where such a run ended", async () => {
    const { queue, endOfTick, flushScheduled, slices } = timedQueue(0.02);
    await pushRuns(queue, 100, 0);
    await pushRuns(queue, 300, 100); // one step that wrote 300 rows at once
    await pushRuns(queue, 100, 400);
    while (flushScheduled()) endOfTick();
    // the first slice (256) would end inside the run of 300: it stops before it; that run commits whole
    expect(slices.map((slice) => slice.length)).toEqual([100, 300, 100]);
  });

  it("shrinks its slices while commits are slow, no lower than MIN_OPS_PER_SLICE, and grows them while they are quick", async () => {
    const { queue, endOfTick, flushScheduled, slices, setMsPerOp } = timedQueue(1);
    await pushEach(queue, 500);
    while (flushScheduled()) endOfTick();
    expect(slices.map((slice) => slice.length)).toEqual([256, 128, 64, 32, 16, 4]);
    // still 16 ms a slice of MIN_OPS_PER_SLICE: no smaller
    slices.length = 0;
    await pushEach(queue, 100);
    while (flushScheduled()) endOfTick();
    expect(slices.map((slice) => slice.length)).toEqual([16, 16, 16, 16, 16, 16, 4]);
    expect(MIN_OPS_PER_SLICE).toBe(16);
    setMsPerOp(0);
    for (const size of [16, 32, 64, 128, 256]) {
      await pushEach(queue, size);
      endOfTick();
      expect(slices.at(-1)?.length).toBe(size);
    }
  });

  it("never leaves more than MAX_LAG_SLICES slices of writes waiting: writes made faster than slices commit them do not pile up", async () => {
    const { queue, endOfTick, flushScheduled, slices } = timedQueue(1);
    await pushEach(queue, 500);
    while (flushScheduled()) endOfTick();
    expect(slices.at(-2)?.length).toBe(MIN_OPS_PER_SLICE);
    // 1,000 more, with no end of the tick between them: the flushes at MAX_OPS_PER_BATCH waiting writes
    // commit all but MAX_LAG_SLICES slices each time
    await pushEach(queue, 1_000);
    endOfTick();
    expect(queue.waiting).toBe(MAX_LAG_SLICES * MIN_OPS_PER_SLICE);
    expect(slices.flat()).toHaveLength(1_500 - MAX_LAG_SLICES * MIN_OPS_PER_SLICE);
  });

  it("runs beforeSlice before each slice's commit, and not before a flush()", async () => {
    const log: string[] = [];
    // every slice looks instant: the slices stay FIRST_OPS_PER_SLICE long
    const { queue, endOfTick, flushScheduled } = manualQueue(
      (ops) => void log.push(`commit ${ops.length}`),
      () => 0,
      () => void log.push("before"),
    );
    await pushEach(queue, FIRST_OPS_PER_SLICE + 10);
    while (flushScheduled()) endOfTick();
    expect(log).toEqual(["before", `commit ${FIRST_OPS_PER_SLICE}`, "before", "commit 10"]);

    log.length = 0;
    await pushEach(queue, 3);
    queue.flush();
    expect(log).toEqual(["commit 3"]);
  });

  it("cuts the slice after beforeSlice, which may write and flush: every write commits once, in order", async () => {
    const batches: number[][] = [];
    let hookCalls = 0;
    let writtenBefore = 0;
    const { queue, endOfTick, flushScheduled } = manualQueue(
      (ops) => void batches.push(ops),
      () => 0,
      // the first time, a deadline's callback writes its event, then something reads (a read flushes)
      (hooked) => {
        if (hookCalls++ > 0) return;
        writtenBefore = batches.flat().length + hooked.waiting;
        hooked.push(600);
        hooked.push(601);
        hooked.flush();
      },
    );
    // (at MAX_OPS_PER_BATCH waiting writes, a slice runs before the rest are written)
    await pushEach(queue, 600);
    while (flushScheduled()) endOfTick();
    expect(hookCalls).toBeGreaterThan(1);
    expect(batches.flat()).toEqual([
      ...Array.from({ length: writtenBefore }, (_, op) => op),
      600,
      601,
      ...Array.from({ length: 600 - writtenBefore }, (_, op) => writtenBefore + op),
    ]);
    expect(queue.pending).toBe(false);
    expect(queue.waiting).toBe(0);
  });

  it("flush() commits everything queued in one batch, however long the tick's slices would be", () => {
    const { queue, flushScheduled, slices } = timedQueue(0.02);
    let delivered = false;
    for (let op = 0; op < 1_000; op++) queue.push(op);
    queue.afterCommit(() => (delivered = true));
    queue.flush();
    expect(slices.map((slice) => slice.length)).toEqual([1_000]);
    expect(delivered).toBe(true);
    expect(flushScheduled()).toBe(false);
  });

  it("commits whole batches once its commit is asynchronous (it does not hold the event loop)", async () => {
    const batches: number[][] = [];
    const { queue, endOfTick } = manualQueue(
      (ops) => {
        batches.push(ops);
        return Promise.resolve();
      },
      () => 0,
    );
    queue.push(0);
    await queue.flush();
    await pushEach(queue, 400, 1);
    endOfTick();
    await Promise.resolve();
    // a synchronous commit would take FIRST_OPS_PER_SLICE of them
    expect(batches.map((batch) => batch.length)).toEqual([1, 400]);
  });

  it("commits asynchronous batches one at a time, in order, each callback after its own batch", async () => {
    const log: string[] = [];
    const finishers: (() => void)[] = [];
    const { queue } = manualQueue(
      (ops) =>
        new Promise<void>((resolve) => {
          log.push(`begin ${ops.join(",")}`);
          finishers.push(() => {
            log.push(`end ${ops.join(",")}`);
            resolve();
          });
        }),
    );
    queue.push(1);
    queue.afterCommit(() => log.push("after 1"));
    const first = queue.flush();
    queue.push(2);
    queue.afterCommit(() => log.push("after 2"));
    const second = queue.flush();
    await Promise.resolve();
    expect(log).toEqual(["begin 1"]);
    finishers.shift()?.();
    await first;
    await vi.waitFor(() => expect(log).toContain("begin 2"));
    finishers.shift()?.();
    await second;
    expect(log).toEqual(["begin 1", "end 1", "after 1", "begin 2", "end 2", "after 2"]);
  });
});

describe("the event bus over a sliced commit", () => {
  it("hands each event to its listeners only after the slice that holds it is committed", async () => {
    const committed = new Set<number>();
    let clockMs = 0;
    let pendingFlush: (() => void) | undefined;
    const queue = new WriteQueue<TurnEvent>({
      commit: (events) => {
        for (const event of events) committed.add(event.seq);
        clockMs += events.length * 0.02;
      },
      onError: (error) => {
        throw error;
      },
      schedule: (flush) => {
        pendingFlush = flush;
        return { cancel: () => (pendingFlush = undefined) };
      },
      now: () => clockMs,
    });
    const bus = new TurnEventBus(
      "turn_sliced",
      { appendEvent: (event) => queue.push(event), afterCommit: (callback) => queue.afterCommit(callback) },
      () => 0,
    );
    const received: number[] = [];
    bus.subscribe((event) => {
      // persist before send: a listener never sees an event the store has not committed
      expect(committed.has(event.seq)).toBe(true);
      received.push(event.seq);
    });
    // one tick's events, each from a step of its own, more than one slice commits
    for (let index = 0; index < 400; index++) {
      bus.emit({ type: "text_delta", text: "x" });
      await Promise.resolve();
    }
    pendingFlush?.();
    expect(received).toHaveLength(FIRST_OPS_PER_SLICE);
    expect(bus.committedSeq).toBe(FIRST_OPS_PER_SLICE);
    while (pendingFlush) pendingFlush();
    expect(received).toEqual(Array.from({ length: 400 }, (_, index) => index + 1));
    expect(bus.committedSeq).toBe(400);
  });
});

describe("the store's commit slices", () => {
  it("run beforeCommitSlice before each slice of a burst, with the slices before it durable, and not on flush()", async () => {
    const durableAtHook: number[] = [];
    const store: SqliteHistoryStore = createMemoryHistoryStore({
      now: () => 1,
      beforeCommitSlice: () => durableAtHook.push(storedEvents(store.db, "turn_1").length),
    });
    try {
      startTurn(store);
      store.flush();
      const bus = new TurnEventBus("turn_1", store, () => 1);
      // a burst: each event written by a step of its own, as a thousand results would be
      for (let index = 0; index < 2 * FIRST_OPS_PER_SLICE + 10; index++) {
        bus.emit({ type: "text_delta", text: "x" });
        await Promise.resolve();
      }
      while (storedEvents(store.db, "turn_1").length < 2 * FIRST_OPS_PER_SLICE + 10) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      // one call before each slice: none committed before the first, the first slice before the second
      expect(durableAtHook.length).toBeGreaterThanOrEqual(2);
      expect(durableAtHook[0]).toBe(0);
      expect(durableAtHook[1]).toBeGreaterThan(0);
      expect(durableAtHook).toEqual([...durableAtHook].sort((left, right) => left - right));

      const calls = durableAtHook.length;
      bus.emit({ type: "text_delta", text: "y" });
      store.flush();
      expect(durableAtHook).toHaveLength(calls);
    } finally {
      store.close();
    }
  });
});

describe("slices and a crash", () => {
  it("never commit a turn's end without its terminal event (one step writes both)", async () => {
    const store = createMemoryHistoryStore({ now: () => 1 });
    try {
      startTurn(store);
      store.flush();
      const bus = new TurnEventBus("turn_1", store, () => 1);
      // the answer's deltas, each from a step of its own, so that the first slice (FIRST_OPS_PER_SLICE
      // writes) would end right after the turn's end
      for (let index = 0; index < FIRST_OPS_PER_SLICE - 1; index++) {
        bus.emit({ type: "text_delta", text: "x" });
        await Promise.resolve();
      }
      // what TurnManager does when a turn completes, in one step: its end, then its terminal event
      store.endTurn("turn_1", { status: "completed", stopReason: "end_turn" });
      bus.emit({
        type: "turn_complete",
        stopReason: "end_turn",
        durationMs: 1,
        toolCallCount: 0,
        usage: { inputTokens: 0, outputTokens: 0 },
      });
      // one turn of the event loop: the first slice commits — a kill -9 could come now
      await new Promise((resolve) => setImmediate(resolve));
      const durable = {
        status: (store.db.prepare("SELECT status FROM turns WHERE id = 'turn_1'").get() as { status: string })
          .status,
        terminal: storedEvents(store.db, "turn_1").filter((event) => event.type === "turn_complete").length,
      };
      // running (recovery ends it at the next start-up) or completed with its terminal event
      expect([
        { status: "running", terminal: 0 },
        { status: "completed", terminal: 1 },
      ]).toContainEqual(durable);
    } finally {
      store.close();
    }
  });
});

/** A model that never waits: one echo call, then an answer once the current turn has its result. */
const immediateEngine: ModelEngine = {
  provider: "immediate",
  defaultModel: "immediate",
  async *stream(request) {
    const last = request.history.at(-1);
    if (last?.kind === "tool_response") {
      yield { type: "text_delta", text: "done" };
      yield { type: "stop", reason: "end_turn" };
      return;
    }
    yield { type: "tool_call", id: "call_echo", name: "echo", input: { text: "hi" } };
    yield { type: "stop", reason: "tool_use" };
  },
};

describe("turns and commits", () => {
  const runtimes: Runtime[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    for (const runtime of runtimes.splice(0)) runtime.store.close();
  });

  function makeRuntime(): { runtime: Runtime; store: SqliteHistoryStore; commits: () => number } {
    const store = createMemoryHistoryStore();
    let counter = 0;
    const runtime = createRuntime(parseConfig({ logLevel: "silent" }).config, {
      store,
      engines: [immediateEngine],
      logger: pino({ level: "silent" }),
      generateId: (prefix) => `${prefix}_${++counter}`,
    });
    runtimes.push(runtime);
    // every statement of the database shares one prototype; the transaction's COMMIT is one of them
    const statementPrototype = Object.getPrototypeOf(store.db.prepare("SELECT 1")) as {
      run: (...args: unknown[]) => unknown;
      source: string;
    };
    const run = vi.spyOn(statementPrototype, "run");
    const commits = () =>
      run.mock.contexts.filter((statement) => (statement as { source: string }).source === "COMMIT").length;
    return { runtime, store, commits };
  }

  it("ten turns run back to back with nobody following, never waiting on I/O, share one commit", async () => {
    const { runtime, commits } = makeRuntime();
    const turns = [];
    for (let index = 0; index < 10; index++) {
      const turn = runtime.manager.startTurn({ message: `turn ${index}`, provider: "immediate" });
      expect(await turn.done).toMatchObject({ status: "completed", toolCallCount: 1 });
      turns.push(turn);
    }
    expect(commits()).toBe(0);
    await Promise.all(turns.map((turn) => turn.delivered));
    expect(commits()).toBe(1);
    for (const turn of turns) {
      expect(runtime.store.getTurn(turn.turnId)).toMatchObject({ status: "completed", toolCallCount: 1 });
      expect(runtime.store.listEvents(turn.turnId).map((event) => event.type)).toEqual([
        "turn_start",
        "tool_start",
        "tool_result",
        "text_delta",
        "turn_complete",
      ]);
    }
  });

  it("a turn's end is readable as soon as done settles, before the end of the tick", async () => {
    const { runtime } = makeRuntime();
    const turn = runtime.manager.startTurn({ message: "once", provider: "immediate" });
    await turn.done;
    expect(runtime.store.getTurn(turn.turnId)).toMatchObject({ status: "completed" });
    expect(runtime.store.getHistory(turn.sessionId).map((block) => block.kind)).toEqual([
      "text",
      "tool_call",
      "tool_response",
      "text",
    ]);
  });

  it("a followed turn settles done only after its follower had turn_complete, which was committed first", async () => {
    const { runtime, store } = makeRuntime();
    const turn = runtime.manager.startTurn({ message: '/tool echo {"text":"hi"}' });
    const received: TurnEvent[] = [];
    const storedWhenReceived: number[] = [];
    const followed = runtime.manager.follow(turn, 0, (event) => {
      received.push(event);
      // what a follower is handed is already in the database (read without committing first)
      storedWhenReceived.push(
        storedEvents(store.db, turn.turnId).filter((stored) => stored.seq === event.seq).length,
      );
    });
    received.unshift(...followed.replay);
    await turn.done;
    followed.dispose();
    expect(received.at(-1)).toMatchObject({ type: "turn_complete" });
    expect(storedWhenReceived.every((count) => count === 1)).toBe(true);
  });
});
