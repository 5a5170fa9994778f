/**
 * The TurnManager in-process (docs/semantics.md#cancellation, docs/semantics.md#scheduling,
 * docs/semantics.md#transcript-integrity): abort, exactly one terminal event however abort races completion,
 * synthetic results, the active-turn registry, the snapshot hook, MAX_STEPS, disconnect handling (fake timers
 * for the grace period) and crash recovery.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { parseConfig } from "../../src/config/load.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { TurnAbortedError } from "../../src/errors.js";
import { isTerminalEvent, type TurnEvent } from "../../src/events.js";
import type { HistoryBlock } from "../../src/history/model.js";
import { SqliteHistoryStore, createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import type { HistoryStore } from "../../src/history/store.js";
import type { ModelEngine } from "../../src/providers/engine.js";
import { ScriptedModel } from "../../src/providers/scripted.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import type { ToolDefinition } from "../../src/tools/types.js";
import type { TurnRun } from "../../src/turns/turn-run.js";
import { ToolCallingLoop, type LoopSnapshot } from "../../src/turns/loop.js";
import {
  BlankMessageError,
  SessionBusyError,
  SessionNotFoundError,
  ShuttingDownError,
  UnknownProviderError,
} from "../../src/turns/errors.js";
import { TurnManager } from "../../src/turns/manager.js";
import { recoverInterruptedTurns } from "../../src/turns/recovery.js";
import { PROJECT_ROOT } from "../helpers/server.js";

const silent = pino({ level: "silent" });
const runtimes: Runtime[] = [];
const cleanups: (() => void)[] = [];

function makeRuntime(config: ConfigInput = {}, tools: ToolDefinition[] = []): Runtime {
  let counter = 0;
  const runtime = createRuntime(parseConfig({ logLevel: "silent", ...config }).config, {
    store: createMemoryHistoryStore(),
    logger: silent,
    tools,
    generateId: (prefix) => `${prefix}_${++counter}`,
  });
  runtimes.push(runtime);
  return runtime;
}

afterEach(async () => {
  vi.useRealTimers();
  for (const runtime of runtimes.splice(0)) {
    await runtime.manager.abortAll("shutdown", 1_000);
    runtime.store.close();
  }
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** Waits, one event-loop turn at a time, until `predicate` holds. */
async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let tick = 0; tick < 10_000; tick++) {
    if (predicate()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`never happened: ${what}`);
}

/** Follows a turn from its first event, collecting what a client would see. */
function watch(runtime: Runtime, turn: TurnRun, onEvent: (event: TurnEvent) => void = () => {}) {
  const events: TurnEvent[] = [];
  const followed = runtime.manager.follow(turn, 0, (event) => {
    events.push(event);
    onEvent(event);
  });
  events.unshift(...followed.replay);
  return { events, dispose: followed.dispose };
}

const terminals = (events: readonly TurnEvent[]) => events.filter(isTerminalEvent);

/** Every call of the session, paired with its responses. */
function pairing(history: readonly HistoryBlock[]) {
  return history
    .filter((block) => block.kind === "tool_call")
    .map((block) => ({
      callId: block.callId,
      name: block.name,
      responses: history.flatMap((other) =>
        other.kind === "tool_response" && other.callId === block.callId
          ? [{ status: other.status, result: other.result }]
          : [],
      ),
    }));
}

/** A tool that waits until its signal is aborted, recording the signal it was given. */
function signalWatcher() {
  const seen: { signal?: AbortSignal; abortedInListener?: boolean } = {};
  const tool: ToolDefinition<Record<string, never>> = {
    name: "watch_signal",
    description: "waits for its signal",
    inputSchema: z.strictObject({}),
    concurrency: "parallel",
    execute: (_input, context) =>
      new Promise((_resolve, reject) => {
        seen.signal = context.signal;
        context.signal.addEventListener("abort", () => {
          seen.abortedInListener = context.signal.aborted;
          reject(new Error("aborted"));
        });
      }),
  };
  return { tool: tool as ToolDefinition, seen };
}

describe("TurnManager: shutdown", () => {
  it("aborts the running turns with reason shutdown and starts no turn afterwards, not even a delegated one", async () => {
    const runtime = makeRuntime();
    const running = runtime.manager.startTurn({ message: "/tool hang {}" });
    const { events } = watch(runtime, running);
    await until(() => events.some((event) => event.type === "tool_start"), "tool_start");

    await runtime.manager.shutdown(1_000);
    expect(terminals(events)).toEqual([expect.objectContaining({ type: "turn_abort", reason: "shutdown" })]);
    expect(() => runtime.manager.startTurn({ message: "hi" })).toThrow(ShuttingDownError);
    expect(() => runtime.manager.startTurn({ message: "hi" }, running)).toThrow(ShuttingDownError);
    expect(runtime.store.listTurns().map((turn) => turn.id)).toEqual([running.turnId]);
  });
});

describe("TurnManager: a blank message", () => {
  // the renderer leaves a blank user text out: the turns around it would join into one assistant message
  it("starts no turn, for a library caller and for a delegated turn alike", async () => {
    const runtime = makeRuntime();
    expect(() => runtime.manager.startTurn({ message: " \n " })).toThrow(BlankMessageError);
    const turn = runtime.manager.startTurn({
      message: '/tool delegate {"agentId":"default","message":"  "}',
    });
    const { events } = watch(runtime, turn);
    await turn.done;
    const result = events.find((event) => event.type === "tool_result");
    expect(result).toMatchObject({
      isError: true,
      result: expect.stringContaining("message: must not be only white space"),
    });
    expect(runtime.store.listTurns()).toHaveLength(1);
  });
});

describe("TurnManager: abort", () => {
  it("is idempotent: the second abort returns false and only one turn_abort is sent", async () => {
    const runtime = makeRuntime();
    const turn = runtime.manager.startTurn({ message: "/tool hang {}" });
    const { events } = watch(runtime, turn);
    await until(() => events.some((event) => event.type === "tool_start"), "tool_start");

    expect(runtime.manager.abortTurn(turn.turnId, "user")).toBe(true);
    expect(runtime.manager.abortTurn(turn.turnId, "user")).toBe(false);
    expect(runtime.manager.abortTurn(turn.turnId, "timeout")).toBe(false);
    await turn.done;
    expect(runtime.manager.abortTurn(turn.turnId, "user")).toBe(false);

    expect(terminals(events)).toEqual([expect.objectContaining({ type: "turn_abort", reason: "user" })]);
    expect(terminals(runtime.store.listEvents(turn.turnId))).toHaveLength(1);
    expect(runtime.store.getTurn(turn.turnId)).toMatchObject({ status: "aborted", abortReason: "user" });
  });

  it("gives every open call one [CANCELLED] result and keeps the real ones", async () => {
    const runtime = makeRuntime();
    const turn = runtime.manager.startTurn({
      message: '/tool echo {"text":"real"}\n/tool hang {}\n/tool sleep {"ms":60000}',
    });
    const { events } = watch(runtime, turn);
    await until(
      () => events.some((event) => event.type === "tool_result" && event.toolName === "echo"),
      "echo result",
    );
    runtime.manager.abortTurn(turn.turnId, "user");
    await turn.done;

    expect(pairing(runtime.store.getHistory(turn.sessionId))).toEqual([
      { callId: expect.any(String), name: "echo", responses: [{ status: "complete", result: "real" }] },
      {
        callId: expect.any(String),
        name: "hang",
        responses: [{ status: "cancelled", result: "[CANCELLED] Turn aborted by user." }],
      },
      {
        callId: expect.any(String),
        name: "sleep",
        responses: [{ status: "cancelled", result: "[CANCELLED] Turn aborted by user." }],
      },
    ]);
    const tail = events.slice(-3).map((event) => [event.type, "toolName" in event ? event.toolName : null]);
    expect(tail).toEqual([
      ["tool_result", "hang"],
      ["tool_result", "sleep"],
      ["turn_abort", null],
    ]);
    // what a follower saw is what was persisted, in order
    expect(runtime.store.listEvents(turn.turnId)).toEqual(events);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
  });

  it("words the synthetic results after the reason", async () => {
    const runtime = makeRuntime();
    const turn = runtime.manager.startTurn({ message: "/tool hang {}" });
    const { events } = watch(runtime, turn);
    await until(() => events.some((event) => event.type === "tool_start"), "tool_start");
    runtime.manager.abortTurn(turn.turnId, "shutdown");
    await turn.done;

    expect(pairing(runtime.store.getHistory(turn.sessionId))[0]?.responses).toEqual([
      { status: "cancelled", result: "[CANCELLED] Turn aborted: the server is shutting down." },
    ]);
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "shutdown" });
  });

  it("cancels calls that had not started and sends nothing after turn_abort", async () => {
    const runtime = makeRuntime({ tools: { maxParallelTools: 1 } });
    const turn = runtime.manager.startTurn({ message: '/tool hang {}\n/tool echo {"text":"later"}' });
    const { events } = watch(runtime, turn);
    await until(() => events.some((event) => event.type === "tool_start"), "tool_start");
    runtime.manager.abortTurn(turn.turnId, "user");
    await turn.done;

    expect(pairing(runtime.store.getHistory(turn.sessionId))).toEqual([
      {
        callId: expect.any(String),
        name: "hang",
        responses: [{ status: "cancelled", result: "[CANCELLED] Turn aborted by user." }],
      },
      {
        callId: expect.any(String),
        name: "echo",
        responses: [{ status: "cancelled", result: "[CANCELLED] Turn aborted by user." }],
      },
    ]);
    const log = runtime.store.listEvents(turn.turnId);
    expect(log.at(-1)?.type).toBe("turn_abort");
    expect(log.filter((event) => event.type === "tool_start").map((event) => event.toolName)).toEqual([
      "hang",
    ]);
    expect(events).toEqual(log);
  });

  it("aborts the signal every running tool was given", async () => {
    const { tool, seen } = signalWatcher();
    const runtime = makeRuntime({}, [tool]);
    const turn = runtime.manager.startTurn({ message: "/tool watch_signal {}" });
    await until(() => seen.signal !== undefined, "tool started");
    expect(seen.signal?.aborted).toBe(false);

    runtime.manager.abortTurn(turn.turnId, "user");

    expect(seen.signal?.aborted).toBe(true);
    expect(seen.abortedInListener).toBe(true);
    expect(seen.signal?.reason).toBeInstanceOf(TurnAbortedError);
    expect((seen.signal?.reason as TurnAbortedError).reason).toBe("user");
    await turn.done;
  });

  it("takes the turn out of the active list when it ends", async () => {
    const runtime = makeRuntime();
    const turn = runtime.manager.startTurn({ message: "/tool hang {}" });
    const { events } = watch(runtime, turn);
    await until(() => events.some((event) => event.type === "tool_start"), "tool_start");

    expect(runtime.manager.getActiveTurnDetails()).toEqual([
      {
        turnId: turn.turnId,
        sessionId: turn.sessionId,
        agentId: "default",
        startedAt: turn.startedAt,
        currentTool: "hang",
        runningTools: [{ toolId: expect.any(String), toolName: "hang", elapsedMs: expect.any(Number) }],
        toolCallCount: 1,
        paused: false,
        pause: null,
        pendingApprovals: [],
        parentTurnId: null,
        childTurnIds: [],
        depth: 0,
        zombies: [],
      },
    ]);
    runtime.manager.abortTurn(turn.turnId, "user");
    expect(runtime.manager.getActiveTurnDetails()).toEqual([]);
    expect(runtime.manager.get(turn.turnId)).toBeUndefined();
    await turn.done;
    expect(runtime.manager.getActiveTurnDetails()).toEqual([]);
  });

  it("takes a completed turn out of the active list", async () => {
    const runtime = makeRuntime();
    const turn = runtime.manager.startTurn({ message: "hello" });
    expect(runtime.manager.getActiveTurnDetails().map((details) => details.turnId)).toEqual([turn.turnId]);
    await turn.done;
    expect(runtime.manager.getActiveTurnDetails()).toEqual([]);
    expect(runtime.manager.abortTurn(turn.turnId, "user")).toBe(false);
    expect(runtime.store.getTurn(turn.turnId)).toMatchObject({ status: "completed", stopReason: "end_turn" });
  });
});

describe("TurnManager: exactly one terminal event", () => {
  it("ignores an abort made by a listener of turn_complete", async () => {
    const runtime = makeRuntime();
    const turn = runtime.manager.startTurn({ message: "hello there" });
    const results: boolean[] = [];
    const { events } = watch(runtime, turn, (event) => {
      if (event.type === "turn_complete") results.push(runtime.manager.abortTurn(turn.turnId, "user"));
    });
    await turn.done;

    expect(results).toEqual([false]);
    expect(terminals(events).map((event) => event.type)).toEqual(["turn_complete"]);
    expect(terminals(runtime.store.listEvents(turn.turnId))).toHaveLength(1);
  });

  it("ignores an abort made while the completion is being recorded", async () => {
    const runtime = makeRuntime();
    const store = runtime.store as HistoryStore;
    const endTurn = store.endTurn.bind(store);
    const results: boolean[] = [];
    let turnId = "";
    store.endTurn = (id, outcome, closeOpen) => {
      if (outcome.status === "completed") results.push(runtime.manager.abortTurn(turnId, "user"));
      return endTurn(id, outcome, closeOpen);
    };
    const turn = runtime.manager.startTurn({ message: '/tool echo {"text":"x"}' });
    turnId = turn.turnId;
    const { events } = watch(runtime, turn);
    await turn.done;

    expect(results).toEqual([false]);
    expect(terminals(events).map((event) => event.type)).toEqual(["turn_complete"]);
    expect(runtime.store.getTurn(turn.turnId)?.status).toBe("completed");
  });

  it("ends with turn_abort alone when aborted right after the last tool result", async () => {
    const runtime = makeRuntime();
    const turn = runtime.manager.startTurn({ message: '/tool echo {"text":"a"}\n/tool echo {"text":"b"}' });
    let results = 0;
    const { events } = watch(runtime, turn, (event) => {
      if (event.type === "tool_result" && ++results === 2) runtime.manager.abortTurn(turn.turnId, "user");
    });
    await turn.done;

    expect(terminals(events)).toEqual([expect.objectContaining({ type: "turn_abort", reason: "user" })]);
    expect(events.at(-1)?.type).toBe("turn_abort");
    expect(events.filter((event) => event.type === "tool_result")).toHaveLength(2);
    for (const call of pairing(runtime.store.getHistory(turn.sessionId))) {
      expect(call.responses).toHaveLength(1);
      expect(call.responses[0]?.status).toBe("complete");
    }
    // Events reach listeners once their batch is committed, so the model may already have begun its
    // answer when the listener sees the result; nothing is produced after the abort itself.
    const abortSeq = events.at(-1)?.seq ?? 0;
    expect(runtime.store.listEvents(turn.turnId, abortSeq)).toEqual([]);
  });

  it("ends with turn_abort alone when aborted during inference", async () => {
    // every word its own event, so the abort lands mid-answer
    const runtime = makeRuntime({ turns: { deltaCoalesceMs: 0 } });
    const turn = runtime.manager.startTurn({ message: "one two three four five six seven eight" });
    let deltas = 0;
    const { events } = watch(runtime, turn, (event) => {
      if (event.type === "text_delta" && ++deltas === 2) runtime.manager.abortTurn(turn.turnId, "user");
    });
    await turn.done;

    expect(events.map((event) => event.type)).toEqual([
      "turn_start",
      "text_delta",
      "text_delta",
      "turn_abort",
    ]);
    expect(runtime.store.listEvents(turn.turnId)).toEqual(events);
    expect(runtime.store.getTurn(turn.turnId)?.status).toBe("aborted");
  });

  it("holds at every abort point of a turn with tools and an answer", async () => {
    const runtime = makeRuntime();
    const message = '/tool echo {"text":"a"}\n/tool sleep {"ms":1}\n/then\nthe final answer is here';
    const outcomes = new Set<string>();
    for (let ticks = 0; ticks < 40; ticks++) {
      const turn = runtime.manager.startTurn({ message });
      for (let tick = 0; tick < ticks; tick++) await new Promise((resolve) => setImmediate(resolve));
      const aborted = runtime.manager.abortTurn(turn.turnId, "user");
      await turn.done;

      const events = runtime.store.listEvents(turn.turnId);
      const ends = terminals(events);
      expect(ends, `abort after ${ticks} ticks`).toHaveLength(1);
      expect(events.at(-1)).toBe(ends[0]);
      expect(ends[0]?.type).toBe(aborted ? "turn_abort" : "turn_complete");
      for (const call of pairing(runtime.store.getHistory(turn.sessionId))) {
        expect(call.responses, `abort after ${ticks} ticks`).toHaveLength(1);
      }
      expect(runtime.manager.getActiveTurnDetails()).toEqual([]);
      outcomes.add(ends[0]?.type ?? "none");
    }
    // the sweep covered both sides of the race
    expect(outcomes).toEqual(new Set(["turn_abort", "turn_complete"]));
  });
});

describe("TurnManager: turns", () => {
  it("shows the snapshot hook every phase boundary in order", async () => {
    const runtime = makeRuntime();
    const snapshots: LoopSnapshot[] = [];
    let counter = 0;
    const loop = new ToolCallingLoop({
      registry: runtime.registry,
      scheduler: runtime.scheduler,
      store: runtime.store,
      maxSteps: 25,
      generateCallId: () => `call_${++counter}`,
      snapshot: (snapshot) => snapshots.push(snapshot),
    });
    const manager = new TurnManager({
      store: runtime.store,
      loop,
      engines: new Map([["scripted", new ScriptedModel()]]),
      logger: silent,
      generateId: (prefix) => `${prefix}_${++counter}`,
      settings: {
        defaultProvider: "scripted",
        defaultAgentId: "default",
        onDisconnect: "abort",
        disconnectGraceMs: 0,
        turnTimeoutMs: 0,
        finalAnswerTimeoutMs: 30_000,
        maxDepth: 3,
        stepPauseTimeoutMs: 30_000,
        stepOnTimeout: "continue",
        allowedRoots: [],
        workspace: undefined,
      },
    });
    const turn = manager.startTurn({ message: '/tool echo {"text":"x"}\n/tool echo {"text":"y"}' });
    await turn.done;

    expect(
      snapshots.map((snapshot) => [
        snapshot.step,
        snapshot.phase,
        snapshot.toolCallCount,
        snapshot.calls.map((call) => call.name),
        snapshot.outcomes.map((outcome) => outcome.result),
      ]),
    ).toEqual([
      [0, "pre_inference", 0, [], []],
      [0, "post_inference", 2, ["echo", "echo"], []],
      [0, "post_tools", 2, ["echo", "echo"], ["x", "y"]],
      [1, "pre_inference", 2, [], []],
      [1, "post_inference", 2, [], []],
    ]);
    expect(snapshots.every((snapshot) => snapshot.turnId === turn.turnId)).toBe(true);
  });

  it("stops a turn after MAX_STEPS inferences", async () => {
    const runtime = makeRuntime({ turns: { maxSteps: 3 } });
    const steps = Array.from({ length: 6 }, (_, index) => `/tool echo {"text":"step ${index}"}`);
    const turn = runtime.manager.startTurn({ message: steps.join("\n/then\n") });
    const { events } = watch(runtime, turn);
    await turn.done;

    expect(terminals(events)).toEqual([
      expect.objectContaining({ type: "turn_complete", stopReason: "max_steps", toolCallCount: 3 }),
    ]);
    expect(
      pairing(runtime.store.getHistory(turn.sessionId)).map((call) => call.responses[0]?.result),
    ).toEqual(["step 0", "step 1", "step 2"]);
    expect(runtime.store.getTurn(turn.turnId)).toMatchObject({ stopReason: "max_steps", toolCallCount: 3 });
  });

  it("tells whatever still listens on a completed turn's signal that the turn is over", async () => {
    // An engine that leaves work behind (a keep-alive it stops only on abort) and one that does not.
    const stopped: string[] = [];
    const engine = (provider: string, leaves: boolean): ModelEngine => ({
      provider,
      defaultModel: `${provider}-1`,
      async *stream(_request, signal) {
        if (leaves) signal.addEventListener("abort", () => stopped.push(provider), { once: true });
        yield { type: "text_delta", text: "done" };
        yield { type: "stop", reason: "end_turn" };
      },
    });
    const runtime = createRuntime(parseConfig({ logLevel: "silent" }).config, {
      store: createMemoryHistoryStore(),
      logger: silent,
      engines: [engine("leaky", true), engine("tidy", false)],
    });
    runtimes.push(runtime);

    const leaky = runtime.manager.startTurn({ message: "hi", provider: "leaky" });
    expect(await leaky.done).toMatchObject({ status: "completed" });
    expect(stopped).toEqual(["leaky"]);
    const tidy = runtime.manager.startTurn({ message: "hi", provider: "tidy" });
    expect(await tidy.done).toMatchObject({ status: "completed" });
    expect(stopped).toEqual(["leaky"]);
  });

  it("hands out the turn's signal aborted, with the turn's reason, when it is first read after the end", async () => {
    // the turn's own signal is made on first read: a turn that never needed it must still give an
    // aborted one to whoever asks later, with the reason it ended for
    const runtime = makeRuntime();
    const completed = runtime.manager.startTurn({ message: "hello" });
    expect(completed.aborted).toBe(false);
    expect(await completed.done).toMatchObject({ status: "completed" });
    expect(completed.aborted).toBe(true);
    expect(completed.signal.aborted).toBe(true);
    expect(completed.signal.reason).toBeInstanceOf(TurnAbortedError);
    expect(completed.signal).toBe(completed.signal);

    const aborted = runtime.manager.startTurn({ message: "/tool hang {}" });
    await until(() => aborted.runningCalls.size === 1, "tool started");
    runtime.manager.abortTurn(aborted.turnId, "timeout");
    expect(aborted.aborted).toBe(true);
    expect((aborted.signal.reason as TurnAbortedError).reason).toBe("timeout");
    expect(await aborted.done).toMatchObject({ status: "aborted", reason: "timeout" });
  });

  it("refuses a second turn on a busy session and accepts one after the first ends", async () => {
    const runtime = makeRuntime();
    const first = runtime.manager.startTurn({ message: "/tool hang {}" });
    expect(() => runtime.manager.startTurn({ message: "again", sessionId: first.sessionId })).toThrow(
      SessionBusyError,
    );
    runtime.manager.abortTurn(first.turnId, "user");
    await first.done;

    const second = runtime.manager.startTurn({ message: "again", sessionId: first.sessionId });
    await second.done;
    expect(runtime.store.getTurn(second.turnId)).toMatchObject({
      sessionId: first.sessionId,
      status: "completed",
    });
  });

  it("refuses an unknown session and an unknown provider without creating anything", () => {
    const runtime = makeRuntime();
    expect(() => runtime.manager.startTurn({ message: "hi", sessionId: "ses_missing" })).toThrow(
      SessionNotFoundError,
    );
    expect(() => runtime.manager.startTurn({ message: "hi", provider: "nope" })).toThrow(
      UnknownProviderError,
    );
    expect(runtime.store.listTurns()).toEqual([]);
    expect(runtime.manager.activeCount()).toBe(0);
  });
});

describe("TurnManager: disconnect", () => {
  const GRACE_MS = 1_000;

  /** A runtime whose turn is running a hanging tool, with one follower attached. */
  async function hangingTurn(stream: NonNullable<ConfigInput["stream"]>) {
    const runtime = makeRuntime({ stream });
    const turn = runtime.manager.startTurn({ message: "/tool hang {}" });
    const follower = watch(runtime, turn);
    await until(() => follower.events.some((event) => event.type === "tool_start"), "tool_start");
    const abortOf = () => runtime.store.listEvents(turn.turnId).find((event) => event.type === "turn_abort");
    return { runtime, turn, follower, abortOf };
  }

  it("aborts at once when the last follower leaves and there is no grace period", async () => {
    const { runtime, turn, follower, abortOf } = await hangingTurn({
      onDisconnect: "abort",
      disconnectGraceMs: 0,
    });
    const second = watch(runtime, turn);
    follower.dispose();
    expect(abortOf()).toBeUndefined();

    second.dispose();
    expect(abortOf()).toMatchObject({ reason: "disconnect" });
    expect(runtime.manager.get(turn.turnId)).toBeUndefined();
    await turn.done;
    expect(pairing(runtime.store.getHistory(turn.sessionId))[0]?.responses).toEqual([
      { status: "cancelled", result: "[CANCELLED] Turn aborted: the client disconnected." },
    ]);
  });

  it("aborts when the grace period ends, not a millisecond before", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    const { runtime, turn, follower, abortOf } = await hangingTurn({
      onDisconnect: "abort",
      disconnectGraceMs: GRACE_MS,
    });
    follower.dispose();
    await vi.advanceTimersByTimeAsync(GRACE_MS - 1);
    expect(abortOf()).toBeUndefined();
    expect(runtime.manager.get(turn.turnId)).toBeDefined();

    await vi.advanceTimersByTimeAsync(1);
    expect(abortOf()).toMatchObject({ reason: "disconnect" });
    expect(runtime.manager.get(turn.turnId)).toBeUndefined();
    await turn.done;
  });

  it("does not abort when a follower reattaches within the grace period", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    const { runtime, turn, follower, abortOf } = await hangingTurn({
      onDisconnect: "abort",
      disconnectGraceMs: GRACE_MS,
    });
    follower.dispose();
    await vi.advanceTimersByTimeAsync(GRACE_MS / 2);
    const reattached = runtime.manager.follow(turn, 1, () => {});
    expect(reattached.replay.map((event) => event.type)).toEqual(["tool_start"]);
    await vi.advanceTimersByTimeAsync(GRACE_MS / 4);

    // leaving again starts a fresh grace period: the first one no longer counts
    reattached.dispose();
    await vi.advanceTimersByTimeAsync(GRACE_MS - 1);
    expect(abortOf()).toBeUndefined();
    expect(runtime.manager.get(turn.turnId)).toBeDefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(abortOf()).toMatchObject({ reason: "disconnect" });
    await turn.done;
  });

  it("keeps a turn whose follower came back running for good", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    const { runtime, turn, follower, abortOf } = await hangingTurn({
      onDisconnect: "abort",
      disconnectGraceMs: GRACE_MS,
    });
    follower.dispose();
    await vi.advanceTimersByTimeAsync(GRACE_MS - 1);
    const reattached = watch(runtime, turn);
    await vi.advanceTimersByTimeAsync(10 * GRACE_MS);
    expect(abortOf()).toBeUndefined();
    expect(runtime.manager.get(turn.turnId)).toBeDefined();
    expect(reattached.events.at(-1)?.type).toBe("tool_progress");
  });

  it("lets the turn run on with onDisconnect continue", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    const { runtime, turn, follower, abortOf } = await hangingTurn({
      onDisconnect: "continue",
      disconnectGraceMs: GRACE_MS,
    });
    follower.dispose();
    // the tool's progress reports fall due 5 and 10 s after it started (the defaults), partway through
    // a millisecond of the real clock these timers keep: each fires at the next whole one
    await vi.advanceTimersByTimeAsync(10 * GRACE_MS + 1);
    expect(abortOf()).toBeUndefined();
    expect(runtime.manager.getActiveTurnDetails().map((details) => details.turnId)).toEqual([turn.turnId]);

    // it ran on (progress of its running tool was logged) and can still be followed and ended by a user
    const later = watch(runtime, turn);
    expect(later.events.map((event) => event.type)).toEqual([
      "turn_start",
      "tool_start",
      "tool_progress",
      "tool_progress",
    ]);
    runtime.manager.abortTurn(turn.turnId, "user");
    expect(later.events.at(-1)).toMatchObject({ type: "turn_abort", reason: "user" });
    await turn.done;
  });
});

describe("what a client is told is done is on disk", () => {
  it("a session made for the sessions API, and its step-mode switch, are committed when the call returns", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "reins-acknowledged-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const runtime = createRuntime(parseConfig({ logLevel: "silent", dataDir }).config, { logger: silent });
    runtimes.push(runtime);
    // what a process starting after a crash right now would read
    const disk = new BetterSqlite3(join(dataDir, "reins.db"), { readonly: true });
    cleanups.unshift(() => disk.close());
    const stepModeOnDisk = (id: string) =>
      disk.prepare("SELECT step_mode FROM sessions WHERE id = ?").get(id) as
        { step_mode: number } | undefined;

    const session = runtime.manager.createSession(null, undefined, "notes");
    expect(stepModeOnDisk(session.id)).toEqual({ step_mode: 0 });
    runtime.manager.setSessionStepMode(session.id, true);
    expect(stepModeOnDisk(session.id)).toEqual({ step_mode: 1 });
  });
});

describe("recoverInterruptedTurns", () => {
  /** A database left by a process that crashed during a turn with one finished and two open calls. */
  function crashedDuringTurn(): string {
    const directory = mkdtempSync(join(tmpdir(), "reins-recovery-"));
    const file = join(directory, "reins.db");
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const crashed = new SqliteHistoryStore(file, { now: () => 100 });
    crashed.createSession("ses_1", "default");
    crashed.beginTurn({
      id: "turn_1",
      sessionId: "ses_1",
      agentId: "default",
      provider: "scripted",
      model: "scripted-1",
      startedAt: 100,
      userMessage: "work",
    });
    crashed.appendAssistant("ses_1", "turn_1", [
      { kind: "tool_call", role: "assistant", callId: "call_a", name: "echo", input: { text: "a" } },
      { kind: "tool_call", role: "assistant", callId: "call_b", name: "hang", input: {} },
      { kind: "tool_call", role: "assistant", callId: "call_c", name: "sleep", input: { ms: 10 } },
    ]);
    crashed.recordToolResult("ses_1", "turn_1", {
      kind: "tool_response",
      role: "tool",
      callId: "call_a",
      name: "echo",
      status: "complete",
      result: "a",
      isError: false,
    });
    crashed.appendEvent({
      type: "turn_start",
      sessionId: "ses_1",
      agentId: "default",
      provider: "scripted",
      model: "scripted-1",
      startedAt: 100,
      turnId: "turn_1",
      seq: 1,
      at: 100,
    });
    crashed.appendEvent({
      type: "tool_result",
      toolId: "call_a",
      toolName: "echo",
      result: "a",
      isError: false,
      status: "complete",
      durationMs: 1,
      attempts: 1,
      turnId: "turn_1",
      seq: 2,
      at: 101,
    });
    crashed.close();
    return file;
  }

  it("closes the open calls of a turn left running and ends its event log", () => {
    const file = crashedDuringTurn();
    const store = new SqliteHistoryStore(file, { now: () => 500 });
    cleanups.unshift(() => store.close());
    expect(recoverInterruptedTurns(store, () => 500)).toEqual(["turn_1"]);

    expect(store.getTurn("turn_1")).toMatchObject({
      status: "interrupted",
      abortReason: "interrupted",
      endedAt: 500,
      toolCallCount: 3,
    });
    expect(pairing(store.getHistory("ses_1"))).toEqual([
      { callId: "call_a", name: "echo", responses: [{ status: "complete", result: "a" }] },
      {
        callId: "call_b",
        name: "hang",
        responses: [
          {
            status: "interrupted",
            result: expect.stringMatching(/^\[INTERRUPTED\] Tool "hang" was interrupted by a server restart/),
          },
        ],
      },
      {
        callId: "call_c",
        name: "sleep",
        responses: [
          { status: "interrupted", result: expect.stringMatching(/^\[INTERRUPTED\] Tool "sleep"/) },
        ],
      },
    ]);
    expect(
      store.listEvents("turn_1", 2).map((event) => ({
        seq: event.seq,
        type: event.type,
        at: event.at,
        toolId: "toolId" in event ? event.toolId : undefined,
        status: "status" in event ? event.status : undefined,
        reason: "reason" in event ? event.reason : undefined,
      })),
    ).toEqual([
      { seq: 3, type: "tool_result", at: 500, toolId: "call_b", status: "interrupted", reason: undefined },
      { seq: 4, type: "tool_result", at: 500, toolId: "call_c", status: "interrupted", reason: undefined },
      { seq: 5, type: "turn_abort", at: 500, toolId: undefined, status: undefined, reason: "interrupted" },
    ]);

    // a second start-up finds nothing left to recover
    expect(recoverInterruptedTurns(store, () => 900)).toEqual([]);
    expect(store.lastEventSeq("turn_1")).toBe(5);
  });

  it("a crash in the middle of recovery leaves the turn to the next start, which ends its log", () => {
    const file = crashedDuringTurn();
    // a start-up killed (SIGKILL) the moment its recovery queues the turn's first closing event
    const killed = spawnSync(
      process.execPath,
      [
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        `import { SqliteHistoryStore } from "./src/history/sqlite-store.ts";
         import { recoverInterruptedTurns } from "./src/turns/recovery.ts";
         const store = new SqliteHistoryStore(${JSON.stringify(file)});
         store.appendEvent = () => process.kill(process.pid, "SIGKILL");
         recoverInterruptedTurns(store);`,
      ],
      { cwd: PROJECT_ROOT, encoding: "utf8" },
    );
    expect(killed.signal).toBe("SIGKILL");

    const store = new SqliteHistoryStore(file, { now: () => 700 });
    cleanups.unshift(() => store.close());
    expect(recoverInterruptedTurns(store, () => 700)).toEqual(["turn_1"]);
    expect(store.listEvents("turn_1").map((event) => event.type)).toEqual([
      "turn_start",
      "tool_result",
      "tool_result",
      "tool_result",
      "turn_abort",
    ]);
    expect(store.getTurn("turn_1")).toMatchObject({ status: "interrupted", endedAt: 700 });
  });
});

describe("event order for every follower", () => {
  it("delivers events in seq order even when a listener aborts the turn during delivery", async () => {
    const runtime = makeRuntime();
    const turn = runtime.manager.startTurn({ message: "/tool hang {}" });
    const first = watch(runtime, turn, (event) => {
      if (event.type === "tool_start") runtime.manager.abortTurn(event.turnId, "user");
    });
    const second = watch(runtime, turn);
    await turn.done;
    for (const followed of [first, second]) {
      expect(followed.events.map((event) => event.seq)).toEqual(followed.events.map((_, index) => index + 1));
      expect(followed.events.map((event) => event.type)).toEqual([
        "turn_start",
        "tool_start",
        "tool_result",
        "turn_abort",
      ]);
    }
  });

  it("gives every follower each event once, whether it came before, during or after a commit", async () => {
    const runtime = makeRuntime();
    const turn = runtime.manager.startTurn({ message: '/tool echo {"text":"a"}\n/then\nok' });
    // at once: nothing is committed yet, so all of it comes live
    const first = watch(runtime, turn);
    expect(first.events).toEqual([]);
    await until(() => first.events.some((event) => event.type === "tool_result"), "the tool's result");
    // later: what is committed comes from the store, the rest live
    const second = watch(runtime, turn);
    expect(second.events.length).toBeGreaterThan(0);
    const third = watch(runtime, turn);
    third.dispose();
    await turn.done;
    const seqs = (events: readonly TurnEvent[]) => events.map((event) => event.seq);
    expect(seqs(first.events)).toEqual(first.events.map((_, index) => index + 1));
    expect(seqs(second.events)).toEqual(seqs(first.events));
    expect(third.events.length).toBeGreaterThan(0);
    expect(first.events.at(-1)?.type).toBe("turn_complete");
  });
});
