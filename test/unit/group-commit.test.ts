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
  MAX_OPS_PER_SLICE,
  MIN_OPS_PER_SLICE,
  WriteQueue,
} from "../../src/history/write-queue.js";
import type { ModelEngine } from "../../src/providers/engine.js";
import { TurnEventBus } from "../../src/turns/event-bus.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";

/**
 * A queue over `commit` whose end-of-tick flush runs only when the test says so; `now` is its clock
 * (one that never moves unless the commit moves it: every slice looks instant).
 */
function manualQueue(commit: (ops: number[]) => void | Promise<void>, now: () => number = () => 0) {
  let pendingFlush: (() => void) | undefined;
  const queue = new WriteQueue<number>({
    commit,
    onError: (error) => {
      throw error;
    },
    schedule: (flush) => {
      pendingFlush = flush;
      return { cancel: () => (pendingFlush = undefined) };
    },
    now,
  });
  return { queue, endOfTick: () => pendingFlush?.(), flushScheduled: () => pendingFlush !== undefined };
}

/** A queue whose commits take `msPerOp` per write on its clock, recording each slice's size. */
function timedQueue(msPerOp: number) {
  let clockMs = 0;
  const slices: number[][] = [];
  const manual = manualQueue(
    (ops) => {
      slices.push(ops);
      clockMs += ops.length * msPerOp;
    },
    () => clockMs,
  );
  return { ...manual, slices };
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
    for (let op = 0; op < MAX_OPS_PER_BATCH - 1; op++) queue.push(op);
    queue.afterCommit(() => (delivered = true));
    await Promise.resolve();
    expect(batches).toEqual([]);
    queue.push(MAX_OPS_PER_BATCH - 1);
    queue.push(MAX_OPS_PER_BATCH);
    await Promise.resolve();
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

  it("commits a long tick in slices of about COMMIT_SLICE_MS, each callback after the slice holding its writes", () => {
    // 20 µs a write: the first slice (FIRST_OPS_PER_SLICE writes) takes 5 ms, so the next is halved, and so
    // on until a slice takes between half and twice COMMIT_SLICE_MS
    const msPerOp = 0.02;
    const { queue, endOfTick, flushScheduled, slices } = timedQueue(msPerOp);
    const delivered: number[] = [];
    for (let op = 0; op < 1_000; op++) {
      queue.push(op);
      if (op % 100 === 99) queue.afterCommit(() => delivered.push(op));
    }
    endOfTick();
    expect(slices.map((slice) => slice.length)).toEqual([FIRST_OPS_PER_SLICE]);
    expect(delivered).toEqual([99, 199]);
    // the rest waits for the next turn of the event loop
    expect(flushScheduled()).toBe(true);
    expect(queue.pending).toBe(true);
    while (flushScheduled()) endOfTick();
    const sizes = slices.map((slice) => slice.length);
    // 256 took 5 ms: halved; 128 took 2.6 ms: halved; the third takes the 104 writes beyond
    // MAX_LAG_SLICES slices of 64 as well; then slices of 64 (1.3 ms each)
    expect(sizes.slice(0, 5)).toEqual([256, 128, 616 - MAX_LAG_SLICES * 64, 64, 64]);
    for (const size of sizes.slice(3, -1)) {
      expect(size * msPerOp).toBeLessThanOrEqual(2 * COMMIT_SLICE_MS);
      expect(size * msPerOp).toBeGreaterThanOrEqual(COMMIT_SLICE_MS / 2);
    }
    // every write once, in order; every callback after its writes, in order
    expect(slices.flat()).toEqual(Array.from({ length: 1_000 }, (_, op) => op));
    expect(delivered).toEqual([99, 199, 299, 399, 499, 599, 699, 799, 899, 999]);
    expect(queue.pending).toBe(false);
  });

  it("grows its slices while commits are quick, up to MAX_OPS_PER_SLICE, and shrinks them no lower than MIN_OPS_PER_SLICE", () => {
    const quick = timedQueue(0);
    for (let round = 0; round < 10; round++) {
      for (let op = 0; op < MAX_OPS_PER_SLICE; op++) quick.queue.push(op);
      while (quick.flushScheduled()) quick.endOfTick();
    }
    expect(Math.max(...quick.slices.map((slice) => slice.length))).toBe(MAX_OPS_PER_SLICE);

    const slow = timedQueue(1);
    for (let op = 0; op < 500; op++) slow.queue.push(op);
    while (slow.flushScheduled()) slow.endOfTick();
    expect(slow.slices.at(-2)?.length).toBe(MIN_OPS_PER_SLICE);
    expect(slow.slices.flat()).toHaveLength(500);
  });

  it("never leaves more than MAX_LAG_SLICES slices of writes waiting: writes made faster than slices commit them do not pile up", () => {
    const { queue, endOfTick, flushScheduled, slices } = timedQueue(1);
    for (let op = 0; op < 500; op++) queue.push(op);
    while (flushScheduled()) endOfTick();
    expect(slices.at(-2)?.length).toBe(MIN_OPS_PER_SLICE);
    slices.length = 0;
    for (let op = 0; op < 1_000; op++) queue.push(op);
    endOfTick();
    expect(slices.map((slice) => slice.length)).toEqual([1_000 - MAX_LAG_SLICES * MIN_OPS_PER_SLICE]);
    expect(queue.waiting).toBe(MAX_LAG_SLICES * MIN_OPS_PER_SLICE);
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
  it("hands each event to its listeners only after the slice that holds it is committed", () => {
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
    // one tick's events, more than one slice commits
    for (let index = 0; index < 600; index++) bus.emit({ type: "text_delta", text: "x" });
    pendingFlush?.();
    expect(received).toHaveLength(FIRST_OPS_PER_SLICE);
    expect(bus.committedSeq).toBe(FIRST_OPS_PER_SLICE);
    while (pendingFlush) pendingFlush();
    expect(received).toEqual(Array.from({ length: 600 }, (_, index) => index + 1));
    expect(bus.committedSeq).toBe(600);
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
        (
          store.db
            .prepare("SELECT COUNT(*) AS n FROM turn_events WHERE turn_id = ? AND seq = ?")
            .get(turn.turnId, event.seq) as { n: number }
        ).n,
      );
    });
    received.unshift(...followed.replay);
    await turn.done;
    followed.dispose();
    expect(received.at(-1)).toMatchObject({ type: "turn_complete" });
    expect(storedWhenReceived.every((count) => count === 1)).toBe(true);
  });
});
