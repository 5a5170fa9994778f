/**
 * ToolRunner resilience (docs/semantics.md#cancellation zombies, docs/semantics.md#resilience) under fake
 * timers: retries with their exact backoff, the retry caps, cancellation during backoff, the circuit breaker
 * across calls, fallbacks, per-call cancel and zombie tracking. Every test drives a real ToolRunner and
 * checks what the model and the trace would see: the outcome, the hooks and the recorded decisions; and that
 * no timer or abort listener is left behind.
 */
import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { TurnAbortedError } from "../../src/errors.js";
import type { Decision, DecisionRecorder } from "../../src/observability/decision.js";
import { CallCancellation } from "../../src/tools/call-cancellation.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import {
  BreakerRegistry,
  DEFAULT_BREAKER_SETTINGS,
  type BreakerTransition,
} from "../../src/tools/resilience/circuit-breaker.js";
import type { RetryPolicy } from "../../src/tools/resilience/retry-policy.js";
import { PermanentToolError, TransientToolError } from "../../src/tools/resilience/tool-error.js";
import { TOOL_CANCELLED_RESULT } from "../../src/tools/results.js";
import { ToolRunner, ZOMBIE_GRACE_MS, type CallScope, type RunnerSettings } from "../../src/tools/runner.js";
import type {
  ToolCallHooks,
  ToolCallRequest,
  ToolContext,
  ToolDefinition,
  ToolOutcome,
} from "../../src/tools/types.js";

const NO_PROGRESS_MS = 3_600_000;
const OPEN_MS = DEFAULT_BREAKER_SETTINGS.openMs;

type Execute = (input: unknown, context: ToolContext) => Promise<unknown>;

function makeTool(name: string, execute: Execute, extra: Partial<ToolDefinition> = {}): ToolDefinition {
  return {
    name,
    description: `test tool ${name}`,
    inputSchema: z.record(z.string(), z.unknown()),
    concurrency: "parallel",
    execute,
    ...extra,
  };
}

function connectionReset(message = "socket hang up"): Error {
  return Object.assign(new Error(message), { code: "ECONNRESET" });
}

/** Rejects after `ms`, honouring its signal (so it never becomes a zombie). */
function failAfter(ms: number, error: () => unknown): Execute {
  return (_input, context) =>
    new Promise((_resolve, reject) => {
      const timer = setTimeout(() => {
        context.signal.removeEventListener("abort", onAbort);
        reject(error());
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(context.signal.reason);
      };
      context.signal.addEventListener("abort", onAbort, { once: true });
    });
}

/** Resolves with `value` after `ms`, ignoring its signal. */
function resolveAfter(ms: number, value: unknown): Execute {
  return () => new Promise((resolve) => setTimeout(() => resolve(value), ms));
}

type Options = { retry?: Partial<RetryPolicy>; defaults?: Partial<RunnerSettings["defaults"]> };

function makeRunner(tools: ToolDefinition[], options: Options = {}) {
  const decisions: Decision[] = [];
  const turnIds: string[] = [];
  const recorder: DecisionRecorder = {
    record: (turnId, decision) => {
      turnIds.push(turnId);
      decisions.push(decision);
    },
  };
  const transitions: BreakerTransition[] = [];
  const breakers = new BreakerRegistry(
    DEFAULT_BREAKER_SETTINGS,
    () => Date.now(),
    (transition) => transitions.push(transition),
  );
  const settings: RunnerSettings = {
    maxCallTimeoutMs: 600_000,
    overrides: {},
    progressAfterMs: NO_PROGRESS_MS,
    progressIntervalMs: NO_PROGRESS_MS,
    defaults: { timeoutMs: 0, idleTimeoutMs: 0, ...options.defaults },
    ...(options.retry ? { retry: options.retry } : {}),
  };
  const runner = new ToolRunner(new ToolRegistry(tools), settings, {
    now: () => Date.now(),
    breakers,
    recorder,
    // No jitter: delays are exactly 100, 200, 400, 800 ms.
    random: () => 0.5,
  });
  return { runner, decisions, turnIds, transitions, breakers };
}

let callCounter = 0;
function call(name: string, input: Record<string, unknown> = {}): ToolCallRequest {
  callCounter += 1;
  return { callId: `call_${callCounter}`, name, input };
}

function scope(signal: AbortSignal, cancellation?: CallCancellation): CallScope {
  return {
    turnId: "turn_1",
    sessionId: "session_1",
    agentId: "agent_1",
    workspace: undefined,
    allowedRoots: [],
    depth: 0,
    signal,
    cancellation,
  };
}

/** A cancellation where `callIds` are open (the running batch's calls). */
function cancellable(...callIds: string[]): CallCancellation {
  const cancellation = new CallCancellation();
  cancellation.openCalls(callIds);
  return cancellation;
}

/** Starts a call and exposes its outcome once it has settled. */
function start(
  runner: ToolRunner,
  request: ToolCallRequest,
  callScope: CallScope,
  hooks: ToolCallHooks = {},
) {
  let outcome: ToolOutcome | undefined;
  const promise = runner.run(request, callScope, hooks).then((value) => {
    outcome = value;
    return value;
  });
  return {
    promise,
    get outcome() {
      return outcome;
    },
  };
}

const kinds = (decisions: Decision[]) => decisions.map((decision) => decision.kind);

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.clearAllTimers();
  vi.useRealTimers();
});

describe("retries", () => {
  it("a tool failing transiently twice then succeeding runs 3 times, after 100 and 200 ms", async () => {
    const execute = vi
      .fn<Execute>()
      .mockRejectedValueOnce(connectionReset())
      .mockRejectedValueOnce(connectionReset())
      .mockResolvedValue("fetched");
    const { runner, decisions, turnIds } = makeRunner([makeTool("fetch", execute)]);
    const onRetry = vi.fn();
    const turn = new AbortController();
    const request = call("fetch");
    const running = start(runner, request, scope(turn.signal), { onRetry });

    await vi.advanceTimersByTimeAsync(0);
    expect(execute).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(99);
    expect(execute).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(execute).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(199);
    expect(execute).toHaveBeenCalledTimes(2);
    expect(running.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(execute).toHaveBeenCalledTimes(3);

    expect(running.outcome).toEqual({
      status: "complete",
      isError: false,
      result: "fetched",
      durationMs: 300,
      attempts: 3,
    });
    const retry = { error: "socket hang up", classification: "transient" };
    expect(onRetry.mock.calls).toEqual([
      [request, { attempt: 2, delayMs: 100, ...retry }],
      [request, { attempt: 3, delayMs: 200, ...retry }],
    ]);
    const ref = { callId: request.callId, toolName: "fetch" };
    const classification = {
      kind: "classification",
      classification: "transient",
      basis: "code ECONNRESET",
      error: "socket hang up",
      ...ref,
    };
    expect(decisions).toEqual([
      classification,
      { kind: "retry", attempt: 2, delayMs: 100, ...retry, ...ref },
      classification,
      { kind: "retry", attempt: 3, delayMs: 200, ...retry, ...ref },
      { kind: "retry_succeeded", attempts: 3, ...ref },
    ]);
    expect(new Set(turnIds)).toEqual(new Set(["turn_1"]));
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(turn.signal, "abort")).toHaveLength(0);
  });

  it("a success on the first attempt records no decision", async () => {
    const { runner, decisions } = makeRunner([makeTool("fetch", async () => "ok")]);
    const outcome = await runner.run(call("fetch"), scope(new AbortController().signal));
    expect(outcome).toMatchObject({ status: "complete", attempts: 1 });
    expect(decisions).toEqual([]);
  });

  it("a transient failure that never passes is tried 5 times, then reported with why it stopped", async () => {
    const execute = vi.fn<Execute>(() => Promise.reject(new TransientToolError("overloaded")));
    const { runner, decisions } = makeRunner([makeTool("fetch", execute)]);
    const request = call("fetch");
    const running = start(runner, request, scope(new AbortController().signal));

    await vi.advanceTimersByTimeAsync(1499);
    expect(running.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(running.outcome).toEqual({
      status: "error",
      isError: true,
      result: '[ERROR] Tool "fetch" failed: overloaded',
      durationMs: 1500,
      attempts: 5,
      classification: "transient",
    });
    expect(execute).toHaveBeenCalledTimes(5);
    expect(decisions.at(-1)).toEqual({
      kind: "retry_stopped",
      attempts: 5,
      reason: "attempt limit of 5 reached",
      callId: request.callId,
      toolName: "fetch",
    });
    expect(vi.getTimerCount()).toBe(0);
  });

  it.each([
    { label: "PermanentToolError", error: () => new PermanentToolError("bad query"), text: "bad query" },
    {
      label: "HTTP 404",
      error: () => Object.assign(new Error("no such page"), { status: 404 }),
      text: "no such page",
    },
    {
      label: "ENOENT",
      error: () => Object.assign(new Error("no such file"), { code: "ENOENT" }),
      text: "no such file",
    },
  ])("a permanent failure ($label) is tried once and never retried", async ({ error, text }) => {
    const execute = vi.fn<Execute>(() => Promise.reject(error()));
    const { runner, decisions } = makeRunner([makeTool("lookup", execute)]);
    const onRetry = vi.fn();
    const running = start(runner, call("lookup"), scope(new AbortController().signal), { onRetry });

    await vi.advanceTimersByTimeAsync(0);
    expect(running.outcome).toEqual({
      status: "error",
      isError: true,
      result: `[ERROR] Tool "lookup" failed: ${text}`,
      durationMs: 0,
      attempts: 1,
      classification: "permanent",
    });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(execute).toHaveBeenCalledTimes(1);
    expect(onRetry).not.toHaveBeenCalled();
    expect(kinds(decisions)).toEqual(["classification"]);
    expect(decisions[0]).toMatchObject({ classification: "permanent" });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a tool's classifier can make an error permanent, so it is not retried", async () => {
    const execute = vi.fn<Execute>(() => Promise.reject(new Error("quota exceeded")));
    const tool = makeTool("fetch", execute, { classifyError: () => "permanent" });
    const { runner, decisions } = makeRunner([tool]);
    const outcome = await runner.run(call("fetch"), scope(new AbortController().signal));
    expect(outcome).toMatchObject({ status: "error", attempts: 1, classification: "permanent" });
    expect(execute).toHaveBeenCalledTimes(1);
    expect(decisions[0]).toMatchObject({ kind: "classification", basis: "tool classifier" });
  });

  it("the retry-time cap stops retries of slow failing attempts", async () => {
    // Each attempt fails after 600 ms: attempts at 0, 700 (600 + 100) and 1500 (1300 + 200); after the
    // third (at 2100) the next would start at 2100 + 400 > 2000.
    const execute = vi.fn<Execute>(failAfter(600, () => connectionReset()));
    const { runner, decisions } = makeRunner([makeTool("slow", execute)]);
    const request = call("slow");
    const running = start(runner, request, scope(new AbortController().signal));

    await vi.advanceTimersByTimeAsync(1499);
    expect(execute).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(execute).toHaveBeenCalledTimes(3);
    await vi.advanceTimersByTimeAsync(599);
    expect(running.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(running.outcome).toMatchObject({
      status: "error",
      attempts: 3,
      durationMs: 2100,
      classification: "transient",
    });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(execute).toHaveBeenCalledTimes(3);
    expect(decisions.at(-1)).toEqual({
      kind: "retry_stopped",
      attempts: 3,
      reason: "retry time limit of 2000ms reached",
      callId: request.callId,
      toolName: "slow",
    });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a tool's own retry policy overrides the runner's field by field", async () => {
    const execute = vi.fn<Execute>(() => Promise.reject(connectionReset()));
    const tool = makeTool("fetch", execute, { retry: { maxAttempts: 3, initialDelayMs: 50 } });
    const { runner } = makeRunner([tool], { retry: { maxAttempts: 1, multiplier: 4 } });
    const running = start(runner, call("fetch"), scope(new AbortController().signal));
    // Delays 50 and 200 (50 × 4): attempts at 0, 50 and 250.
    await vi.advanceTimersByTimeAsync(249);
    expect(execute).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(execute).toHaveBeenCalledTimes(3);
    expect(running.outcome).toMatchObject({ status: "error", attempts: 3 });
  });
});

describe("timeouts and retries", () => {
  it("a timed-out attempt is transient but not retried by default", async () => {
    const execute = vi.fn<Execute>(failAfter(60_000, () => new Error("never")));
    const { runner, decisions, breakers } = makeRunner([makeTool("slow", execute, { timeoutMs: 300 })]);
    const request = call("slow");
    const running = start(runner, request, scope(new AbortController().signal));
    await vi.advanceTimersByTimeAsync(300);
    expect(running.outcome).toMatchObject({
      status: "timeout",
      attempts: 1,
      classification: "transient",
      timeout: { kind: "total", timeoutMs: 300 },
    });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(execute).toHaveBeenCalledTimes(1);
    const ref = { callId: request.callId, toolName: "slow" };
    expect(decisions).toEqual([
      { kind: "timeout", timeoutKind: "total", timeoutMs: 300, ...ref },
      {
        kind: "classification",
        classification: "transient",
        basis: "timeout (total)",
        error: 'Tool "slow" exceeded wall-clock limit of 0.3s.',
        ...ref,
      },
      { kind: "retry_stopped", attempts: 1, reason: "timeouts are not retried", ...ref },
    ]);
    // It counted as a transient failure for the breaker: four more open it.
    for (let index = 0; index < 4; index++) {
      const more = start(runner, call("slow"), scope(new AbortController().signal));
      await vi.advanceTimersByTimeAsync(300);
      expect(more.outcome?.status).toBe("timeout");
    }
    expect(breakers.get("slow").state).toBe("open");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a tool with retryOnTimeout is retried after a timeout, each attempt under its own limit", async () => {
    const execute = vi.fn<Execute>(failAfter(60_000, () => new Error("never")));
    const tool = makeTool("slow", execute, { timeoutMs: 300, retry: { retryOnTimeout: true } });
    const { runner } = makeRunner([tool]);
    const onTimeout = vi.fn();
    const running = start(runner, call("slow"), scope(new AbortController().signal), { onTimeout });
    // Attempts 0–300, 400–700, 900–1200, 1600–1900; then 1900 + 800 > 2000.
    await vi.advanceTimersByTimeAsync(1899);
    expect(running.outcome).toBeUndefined();
    expect(execute).toHaveBeenCalledTimes(4);
    expect(onTimeout).toHaveBeenCalledTimes(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(running.outcome).toMatchObject({ status: "timeout", attempts: 4, durationMs: 1900 });
    expect(running.outcome?.result).toContain('[TIMEOUT] Tool "slow" exceeded wall-clock limit of 0.3s');
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("cancellation during backoff", () => {
  it("a turn abort during backoff cancels at once; no further attempt, nothing left behind", async () => {
    const execute = vi.fn<Execute>(() => Promise.reject(connectionReset()));
    const { runner } = makeRunner([makeTool("fetch", execute)]);
    const turn = new AbortController();
    const running = start(runner, call("fetch"), scope(turn.signal));

    await vi.advanceTimersByTimeAsync(50);
    expect(execute).toHaveBeenCalledTimes(1);
    expect(running.outcome).toBeUndefined();
    turn.abort(new TurnAbortedError("disconnect"));
    await vi.advanceTimersByTimeAsync(0);
    expect(running.outcome).toEqual({
      status: "cancelled",
      isError: true,
      result: "[CANCELLED] Turn aborted: the client disconnected.",
      durationMs: 50,
      attempts: 1,
    });
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(turn.signal, "abort")).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it("a per-call cancel during backoff gives the tool-cancel result", async () => {
    const execute = vi.fn<Execute>(() => Promise.reject(connectionReset()));
    const { runner } = makeRunner([makeTool("fetch", execute)]);
    const turn = new AbortController();
    const cancellation = new CallCancellation();
    const request = call("fetch");
    cancellation.openCalls([request.callId]);
    const running = start(runner, request, scope(turn.signal, cancellation));

    // Attempts at 0 and 100; the second backoff (200 ms) is under way at 150.
    await vi.advanceTimersByTimeAsync(150);
    expect(execute).toHaveBeenCalledTimes(2);
    expect(cancellation.cancel(request.callId, new Error("cancelled"))).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(running.outcome).toMatchObject({
      status: "cancelled",
      result: TOOL_CANCELLED_RESULT,
      attempts: 2,
    });
    expect(turn.signal.aborted).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(turn.signal, "abort")).toHaveLength(0);
    expect(getEventListeners(cancellation.signal(request.callId), "abort")).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(execute).toHaveBeenCalledTimes(2);
  });
});

describe("circuit breaker", () => {
  /** A tool that fails transiently while `state.failing`, else answers after `state.delayMs`. */
  function unstableTool() {
    const state = { failing: true, delayMs: 0 };
    const execute = vi.fn<Execute>(() =>
      state.failing
        ? Promise.reject(new TransientToolError("upstream unavailable"))
        : new Promise((resolve) => setTimeout(() => resolve("recovered"), state.delayMs)),
    );
    return { tool: makeTool("unstable", execute, { retry: { maxAttempts: 1 } }), execute, state };
  }

  it("opens after 5 failing calls, fails fast while open, probes after 30s and closes after 2 good probes", async () => {
    const { tool, execute, state } = unstableTool();
    const { runner, decisions, breakers } = makeRunner([tool]);
    const turn = new AbortController().signal;

    for (let index = 1; index <= 4; index++) {
      const outcome = await runner.run(call("unstable"), scope(turn));
      expect(outcome).toMatchObject({ status: "error", attempts: 1, classification: "transient" });
    }
    expect(breakers.get("unstable").state).toBe("closed");
    expect(kinds(decisions)).not.toContain("breaker_transition");

    const fifth = call("unstable");
    expect((await runner.run(fifth, scope(turn))).result).toBe(
      '[ERROR] Tool "unstable" failed: upstream unavailable',
    );
    expect(decisions).toContainEqual({
      kind: "breaker_transition",
      toolName: "unstable",
      from: "closed",
      to: "open",
      callId: fifth.callId,
    });
    expect(execute).toHaveBeenCalledTimes(5);

    // Open: the tool is not executed and the model is told why.
    const sixth = call("unstable");
    decisions.length = 0;
    expect(await runner.run(sixth, scope(turn))).toEqual({
      status: "error",
      isError: true,
      result:
        '[CIRCUIT_OPEN] Tool "unstable" has failed repeatedly and is refusing calls for about 30s more. Use another tool or answer with what you have.',
      durationMs: 0,
      attempts: 0,
      classification: "transient",
    });
    expect(execute).toHaveBeenCalledTimes(5);
    expect(decisions).toEqual([
      {
        kind: "breaker_rejected",
        state: "open",
        retryAfterMs: OPEN_MS,
        callId: sixth.callId,
        toolName: "unstable",
      },
    ]);

    await vi.advanceTimersByTimeAsync(OPEN_MS - 1);
    const stillOpen = await runner.run(call("unstable"), scope(turn));
    expect(stillOpen.result).toContain("refusing calls for about 1s more");
    expect(stillOpen.attempts).toBe(0);
    expect(execute).toHaveBeenCalledTimes(5);

    // Half-open: one probe runs; a concurrent call fails fast meanwhile.
    await vi.advanceTimersByTimeAsync(1);
    state.failing = false;
    state.delayMs = 100;
    const probeRequest = call("unstable");
    decisions.length = 0;
    const probe = start(runner, probeRequest, scope(turn));
    await vi.advanceTimersByTimeAsync(0);
    expect(execute).toHaveBeenCalledTimes(6);
    expect(decisions).toEqual([
      {
        kind: "breaker_transition",
        toolName: "unstable",
        from: "open",
        to: "half_open",
        callId: probeRequest.callId,
      },
    ]);

    const concurrent = await runner.run(call("unstable"), scope(turn));
    expect(concurrent).toMatchObject({ status: "error", attempts: 0 });
    expect(concurrent.result).toBe(
      '[CIRCUIT_OPEN] Tool "unstable" has failed repeatedly and is refusing calls until a probe call succeeds. Use another tool or answer with what you have.',
    );
    expect(decisions.at(-1)).toMatchObject({ kind: "breaker_rejected", state: "half_open", retryAfterMs: 0 });
    expect(execute).toHaveBeenCalledTimes(6);

    await vi.advanceTimersByTimeAsync(100);
    expect(probe.outcome).toMatchObject({ status: "complete", result: "recovered", attempts: 1 });
    // One good probe is not enough.
    expect(breakers.get("unstable").state).toBe("half_open");

    const secondProbe = call("unstable");
    const second = start(runner, secondProbe, scope(turn));
    await vi.advanceTimersByTimeAsync(100);
    expect(second.outcome).toMatchObject({ status: "complete", attempts: 1 });
    expect(breakers.get("unstable").state).toBe("closed");
    expect(decisions.at(-1)).toEqual({
      kind: "breaker_transition",
      toolName: "unstable",
      from: "half_open",
      to: "closed",
      callId: secondProbe.callId,
    });

    // Closed: calls run again, concurrently.
    const a = start(runner, call("unstable"), scope(turn));
    const b = start(runner, call("unstable"), scope(turn));
    await vi.advanceTimersByTimeAsync(100);
    expect(a.outcome?.status).toBe("complete");
    expect(b.outcome?.status).toBe("complete");
    // 5 failures, 2 probes and these 2; the rejected calls never ran.
    expect(execute).toHaveBeenCalledTimes(9);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a failed probe reopens the circuit for another 30s", async () => {
    const { tool, execute } = unstableTool();
    const { runner, decisions, breakers } = makeRunner([tool]);
    const turn = new AbortController().signal;
    for (let index = 0; index < 5; index++) await runner.run(call("unstable"), scope(turn));
    await vi.advanceTimersByTimeAsync(OPEN_MS);

    const probe = call("unstable");
    expect(await runner.run(probe, scope(turn))).toMatchObject({ status: "error", attempts: 1 });
    expect(execute).toHaveBeenCalledTimes(6);
    expect(decisions.filter((decision) => decision.kind === "breaker_transition").slice(-2)).toEqual([
      {
        kind: "breaker_transition",
        toolName: "unstable",
        from: "open",
        to: "half_open",
        callId: probe.callId,
      },
      {
        kind: "breaker_transition",
        toolName: "unstable",
        from: "half_open",
        to: "open",
        callId: probe.callId,
      },
    ]);
    const rejected = await runner.run(call("unstable"), scope(turn));
    expect(rejected.result).toContain("for about 30s more");
    expect(breakers.openCircuits()).toEqual(["unstable"]);
  });

  it("permanent failures never open the circuit", async () => {
    const execute = vi.fn<Execute>(() => Promise.reject(new PermanentToolError("bad input")));
    const { runner, breakers } = makeRunner([makeTool("strict", execute)]);
    for (let index = 0; index < 10; index++) {
      const outcome = await runner.run(call("strict"), scope(new AbortController().signal));
      expect(outcome).toMatchObject({ status: "error", classification: "permanent", attempts: 1 });
    }
    expect(execute).toHaveBeenCalledTimes(10);
    expect(breakers.get("strict").state).toBe("closed");
  });

  it("cancelled calls never open the circuit", async () => {
    const execute = vi.fn<Execute>(failAfter(60_000, () => new Error("never")));
    const { runner, breakers } = makeRunner([makeTool("slow", execute)]);
    for (let index = 0; index < 6; index++) {
      const turn = new AbortController();
      const running = start(runner, call("slow"), scope(turn.signal));
      await vi.advanceTimersByTimeAsync(10);
      turn.abort(new TurnAbortedError("user"));
      await vi.advanceTimersByTimeAsync(0);
      expect(running.outcome?.status).toBe("cancelled");
    }
    expect(execute).toHaveBeenCalledTimes(6);
    expect(breakers.get("slow").state).toBe("closed");
  });
});

describe("fallback", () => {
  function tools(primaryExecute: Execute, primaryExtra: Partial<ToolDefinition> = {}) {
    const backupExecute = vi.fn<Execute>(async (input) => `backup answered ${JSON.stringify(input)}`);
    const primary = makeTool("primary", primaryExecute, { fallback: "backup", ...primaryExtra });
    return { list: [primary, makeTool("backup", backupExecute)], backupExecute };
  }

  it("a permanent failure is answered by the fallback tool with the same input", async () => {
    const primaryExecute = vi.fn<Execute>(() => Promise.reject(new PermanentToolError("unsupported region")));
    const { list, backupExecute } = tools(primaryExecute);
    const { runner, decisions } = makeRunner(list);
    const request = call("primary", { q: "weather" });
    const outcome = await runner.run(request, scope(new AbortController().signal));

    expect(outcome).toEqual({
      status: "complete",
      isError: false,
      result:
        '[FALLBACK] Tool "primary" failed permanently; "backup" answered instead: backup answered {"q":"weather"}',
      durationMs: 0,
      attempts: 2, // one of the primary, one of the fallback
    });
    expect(primaryExecute).toHaveBeenCalledTimes(1);
    expect(backupExecute).toHaveBeenCalledTimes(1);
    expect(backupExecute.mock.calls[0]?.[0]).toEqual({ q: "weather" });
    expect(decisions).toContainEqual({
      kind: "fallback",
      fallback: "backup",
      because: "failed permanently",
      callId: request.callId,
      toolName: "primary",
    });
  });

  it("a transient failure with the circuit still closed is not handed to the fallback", async () => {
    const primaryExecute = vi.fn<Execute>(() => Promise.reject(connectionReset()));
    const { list, backupExecute } = tools(primaryExecute, { retry: { maxAttempts: 2 } });
    const { runner, decisions } = makeRunner(list);
    const running = start(runner, call("primary"), scope(new AbortController().signal));
    await vi.advanceTimersByTimeAsync(100);
    expect(running.outcome).toMatchObject({ status: "error", attempts: 2, classification: "transient" });
    expect(running.outcome?.result).toBe('[ERROR] Tool "primary" failed: socket hang up');
    expect(backupExecute).not.toHaveBeenCalled();
    expect(kinds(decisions)).not.toContain("fallback");
  });

  it("the fallback answers when the primary's circuit is open, without running the primary", async () => {
    const primaryExecute = vi.fn<Execute>(() => Promise.reject(new TransientToolError("down")));
    const { list, backupExecute } = tools(primaryExecute, { retry: { maxAttempts: 1 } });
    const { runner, decisions } = makeRunner(list);
    const turn = new AbortController().signal;

    for (let index = 1; index <= 4; index++) {
      const outcome = await runner.run(call("primary"), scope(turn));
      expect(outcome.result).toBe('[ERROR] Tool "primary" failed: down');
    }
    expect(backupExecute).not.toHaveBeenCalled();

    // The fifth failure opens the circuit: this call is already answered by the fallback.
    const fifth = await runner.run(call("primary"), scope(turn));
    expect(fifth.result).toBe(
      '[FALLBACK] Tool "primary" failed and its circuit opened; "backup" answered instead: backup answered {}',
    );
    expect(fifth.attempts).toBe(2); // the primary's failed attempt and the fallback's
    expect(backupExecute).toHaveBeenCalledTimes(1);

    const request = call("primary");
    const sixth = await runner.run(request, scope(turn));
    expect(sixth).toEqual({
      status: "complete",
      isError: false,
      result: '[FALLBACK] Tool "primary" has its circuit open; "backup" answered instead: backup answered {}',
      durationMs: 0,
      attempts: 1, // the primary never ran; the fallback once
    });
    expect(primaryExecute).toHaveBeenCalledTimes(5);
    expect(backupExecute).toHaveBeenCalledTimes(2);
    expect(decisions.slice(-2)).toEqual([
      {
        kind: "breaker_rejected",
        state: "open",
        retryAfterMs: OPEN_MS,
        callId: request.callId,
        toolName: "primary",
      },
      {
        kind: "fallback",
        fallback: "backup",
        because: "has its circuit open",
        callId: request.callId,
        toolName: "primary",
      },
    ]);
  });

  it("a fallback that does not exist leaves the primary's failure as the outcome", async () => {
    const primaryExecute = vi.fn<Execute>(() => Promise.reject(new PermanentToolError("nope")));
    const primary = makeTool("primary", primaryExecute, { fallback: "missing" });
    const { runner, decisions } = makeRunner([primary]);
    const outcome = await runner.run(call("primary"), scope(new AbortController().signal));
    expect(outcome).toMatchObject({
      status: "error",
      result: '[ERROR] Tool "primary" failed: nope',
      attempts: 1,
    });
    expect(kinds(decisions)).not.toContain("fallback");
  });
});

describe("per-call cancel", () => {
  it("cancels only that call with the tool-cancel result; the turn and its other calls go on", async () => {
    const seen: ToolContext[] = [];
    const execute = vi.fn<Execute>((input, context) => {
      seen.push(context);
      return failAfter(1000, () => new Error("unused"))(input, context).catch((error: unknown) => {
        if (context.signal.aborted) throw error;
        return "finished";
      });
    });
    const { runner, decisions } = makeRunner([makeTool("work", execute)]);
    const turn = new AbortController();
    const cancelMe = call("work");
    const other = call("work");
    const cancellation = cancellable(cancelMe.callId, other.callId);
    const callScope = scope(turn.signal, cancellation);
    const cancelled = start(runner, cancelMe, callScope);
    const kept = start(runner, other, callScope);

    await vi.advanceTimersByTimeAsync(400);
    const reason = new Error("cancel requested");
    cancellation.cancel(cancelMe.callId, reason);
    await vi.advanceTimersByTimeAsync(0);

    expect(cancelled.outcome).toEqual({
      status: "cancelled",
      isError: true,
      result: "[CANCELLED] Tool cancelled by user.",
      durationMs: 400,
      attempts: 1,
    });
    expect(turn.signal.aborted).toBe(false);
    expect(seen[0]?.signal.aborted).toBe(true);
    expect(seen[0]?.signal.reason).toBe(reason);
    expect(seen[1]?.signal.aborted).toBe(false);
    expect(kept.outcome).toBeUndefined();

    await vi.advanceTimersByTimeAsync(600);
    expect(kept.outcome).toMatchObject({ status: "complete", result: "finished", attempts: 1 });
    expect(execute).toHaveBeenCalledTimes(2);
    expect(kinds(decisions)).not.toContain("retry");
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(turn.signal, "abort")).toHaveLength(0);
  });

  it("an already-cancelled call never runs and gets the same result", async () => {
    const execute = vi.fn<Execute>(async () => "ran");
    const { runner } = makeRunner([makeTool("work", execute)]);
    const request = call("work");
    const cancellation = cancellable(request.callId);
    cancellation.cancel(request.callId, new Error("cancelled"));
    const outcome = await runner.run(request, scope(new AbortController().signal, cancellation));
    expect(outcome).toEqual({
      status: "cancelled",
      isError: true,
      result: TOOL_CANCELLED_RESULT,
      durationMs: 0,
      attempts: 0,
    });
    expect(execute).not.toHaveBeenCalled();
  });

  it("when both the turn and the call are aborted, the turn's reason is given", async () => {
    const { runner } = makeRunner([
      makeTool(
        "work",
        failAfter(60_000, () => new Error("never")),
      ),
    ]);
    const request = call("work");
    const turn = new AbortController();
    const cancellation = cancellable(request.callId);
    const running = start(runner, request, scope(turn.signal, cancellation));
    await vi.advanceTimersByTimeAsync(10);
    turn.abort(new TurnAbortedError("shutdown"));
    expect(cancellation.cancel(request.callId, new Error("cancelled"))).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(running.outcome?.result).toBe("[CANCELLED] Turn aborted: the server is shutting down.");
  });
});

describe("zombies", () => {
  it("a tool that ignores its signal is a zombie 1000 ms after its timeout, until it settles 5 s in", async () => {
    const execute = vi.fn<Execute>(resolveAfter(5000, "late result"));
    const { runner, decisions } = makeRunner([makeTool("stubborn", execute, { timeoutMs: 1000 })]);
    const request = call("stubborn");
    const running = start(runner, request, scope(new AbortController().signal));

    await vi.advanceTimersByTimeAsync(1000);
    const outcome = running.outcome;
    expect(outcome).toMatchObject({ status: "timeout", attempts: 1 });
    expect(outcome?.result.startsWith('[TIMEOUT] Tool "stubborn"')).toBe(true);

    await vi.advanceTimersByTimeAsync(ZOMBIE_GRACE_MS - 1);
    expect(runner.zombies.size).toBe(0);
    expect(kinds(decisions)).not.toContain("zombie");
    await vi.advanceTimersByTimeAsync(1);
    expect(runner.zombies.list()).toEqual([
      { turnId: "turn_1", toolId: request.callId, toolName: "stubborn", since: Date.now() },
    ]);
    expect(decisions.at(-1)).toEqual({
      kind: "zombie",
      state: "started",
      callId: request.callId,
      toolName: "stubborn",
    });

    // 2000 → 4999: still running.
    await vi.advanceTimersByTimeAsync(2999);
    expect(runner.zombies.size).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(runner.zombies.size).toBe(0);
    expect(decisions.at(-1)).toEqual({
      kind: "zombie",
      state: "settled",
      callId: request.callId,
      toolName: "stubborn",
    });
    // The late result never became the outcome.
    expect(running.outcome).toBe(outcome);
    expect(await running.promise).toBe(outcome);
    expect(running.outcome?.result).not.toContain("late result");
    expect(execute).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a per-call cancel of a tool that ignores its signal also leaves a tracked zombie", async () => {
    const { runner } = makeRunner([makeTool("stubborn", resolveAfter(5000, "late"))]);
    const request = call("stubborn");
    const cancellation = cancellable(request.callId);
    const running = start(runner, request, scope(new AbortController().signal, cancellation));
    await vi.advanceTimersByTimeAsync(500);
    expect(cancellation.cancel(request.callId, new Error("cancelled"))).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(running.outcome?.result).toBe(TOOL_CANCELLED_RESULT);
    await vi.advanceTimersByTimeAsync(ZOMBIE_GRACE_MS - 1);
    expect(runner.zombies.size).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(runner.zombies.list()).toEqual([
      { turnId: "turn_1", toolId: request.callId, toolName: "stubborn", since: Date.now() },
    ]);
    await vi.advanceTimersByTimeAsync(5000 - 1500 - 1);
    expect(runner.zombies.size).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(runner.zombies.size).toBe(0);
    expect(running.outcome?.result).toBe(TOOL_CANCELLED_RESULT);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a tool that settles within the grace period is no zombie, and the grace timer is cleared", async () => {
    const { runner, decisions } = makeRunner([
      makeTool("tardy", resolveAfter(1500, "late"), { timeoutMs: 1000 }),
    ]);
    const running = start(runner, call("tardy"), scope(new AbortController().signal));
    await vi.advanceTimersByTimeAsync(1000);
    expect(running.outcome?.status).toBe("timeout");
    // The tool's own timer and the grace timer.
    expect(vi.getTimerCount()).toBe(2);
    await vi.advanceTimersByTimeAsync(500);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(runner.zombies.size).toBe(0);
    expect(kinds(decisions)).not.toContain("zombie");
    expect(running.outcome?.status).toBe("timeout");
  });

  it("a cooperative tool that honours its signal produces no zombie", async () => {
    const execute = vi.fn<Execute>(failAfter(60_000, () => new Error("never")));
    const { runner, decisions } = makeRunner([makeTool("polite", execute, { timeoutMs: 1000 })]);
    const turn = new AbortController();
    const timedOut = start(runner, call("polite"), scope(turn.signal));
    await vi.advanceTimersByTimeAsync(1000);
    expect(timedOut.outcome?.status).toBe("timeout");
    expect(vi.getTimerCount()).toBe(0);

    const aborted = start(runner, call("polite"), scope(turn.signal));
    await vi.advanceTimersByTimeAsync(100);
    turn.abort(new TurnAbortedError("user"));
    await vi.advanceTimersByTimeAsync(0);
    expect(aborted.outcome?.status).toBe("cancelled");
    expect(vi.getTimerCount()).toBe(0);

    await vi.advanceTimersByTimeAsync(10_000);
    expect(runner.zombies.size).toBe(0);
    expect(kinds(decisions)).not.toContain("zombie");
  });
});

describe("regressions", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("runs a fallback under its own name and limits, and says when it failed too", async () => {
    const seen: string[] = [];
    const primary = makeTool("primary", () => Promise.reject(new PermanentToolError("gone")), {
      fallback: "backup",
      timeoutMs: 1_000,
    });
    const backup = makeTool(
      "backup",
      (_input, context) => {
        seen.push(context.toolName);
        return resolveAfter(5_000, "late but fine")(_input, context);
      },
      { timeoutMs: 60_000 },
    );
    const { runner, decisions } = makeRunner([primary, backup]);
    const running = runner.run(call("primary"), scope(new AbortController().signal));
    await vi.advanceTimersByTimeAsync(5_000);
    const outcome = await running;
    expect(outcome.result).toBe(
      '[FALLBACK] Tool "primary" failed permanently; "backup" answered instead: late but fine',
    );
    expect(seen).toEqual(["backup"]);
    expect(decisions.filter((decision) => decision.kind === "timeout")).toEqual([]);

    const failing = makeTool("failing", () => Promise.reject(new PermanentToolError("also gone")));
    const second = makeRunner([
      makeTool("primary", () => Promise.reject(new PermanentToolError("gone")), { fallback: "failing" }),
      failing,
    ]);
    const both = await second.runner.run(call("primary"), scope(new AbortController().signal));
    expect(both).toMatchObject({ status: "error", isError: true });
    expect(both.result).toBe(
      '[FALLBACK] Tool "primary" failed permanently; its fallback "failing" failed too: [ERROR] Tool "failing" failed: also gone',
    );
    expect(second.decisions).toContainEqual(
      expect.objectContaining({ kind: "classification", toolName: "failing" }),
    );
  });

  it("does not retry a failed half-open probe into its reopened circuit; the model sees the real error", async () => {
    // default retries: one call's five failing attempts open the circuit
    const { runner, decisions } = makeRunner([
      makeTool("shaky", () => Promise.reject(new TransientToolError("still down"))),
    ]);
    const opening = runner.run(call("shaky"), scope(new AbortController().signal));
    await vi.advanceTimersByTimeAsync(1_500);
    expect((await opening).attempts).toBe(5);
    await vi.advanceTimersByTimeAsync(OPEN_MS);
    const before = decisions.length;
    const probe = runner.run(call("shaky"), scope(new AbortController().signal));
    await vi.advanceTimersByTimeAsync(1_000);
    const outcome = await probe;
    expect(outcome.result).toBe('[ERROR] Tool "shaky" failed: still down');
    expect(outcome.attempts).toBe(1);
    const after = decisions.slice(before);
    expect(after.some((decision) => decision.kind === "retry")).toBe(false);
    expect(after).toContainEqual(
      expect.objectContaining({ kind: "retry_stopped", reason: "its circuit is open" }),
    );
    expect(after).toContainEqual(
      expect.objectContaining({ kind: "breaker_transition", from: "half_open", to: "open" }),
    );
  });
});
