/**
 * Batched durable writes (docs/events.md#persistence): the write queue commits what one tick queued
 * in one transaction, at most MAX_OPS_PER_BATCH writes at a time, and runs each afterCommit callback
 * only after the commit holding the writes before it; turns run back to back in-process share commits,
 * while a turn someone follows still settles `done` only after its follower had the terminal event.
 */
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import type { TurnEvent } from "../../src/events.js";
import type { SqliteHistoryStore } from "../../src/history/sqlite-store.js";
import { createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import { MAX_OPS_PER_BATCH, WriteQueue } from "../../src/history/write-queue.js";
import type { ModelEngine } from "../../src/providers/engine.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";

/** A queue over `commit` whose end-of-tick flush runs only when the test says so. */
function manualQueue(commit: (ops: number[]) => void | Promise<void>) {
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
  });
  return { queue, endOfTick: () => pendingFlush?.() };
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
    expect(batches.map((batch) => batch.length)).toEqual([MAX_OPS_PER_BATCH + 1]);
    expect(delivered).toBe(true);
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
