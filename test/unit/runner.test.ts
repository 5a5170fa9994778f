/**
 * ToolRunner under fake timers (docs/semantics.md#timeouts, docs/semantics.md#cancellation): every deadline is asserted not to have fired at n−1 ms and to have fired at exactly n ms, and every
 * outcome leaves no timer and no abort listener behind. A tool that ignores its signal (`hang`) leaves
 * exactly one timer, the zombie grace timer, which fires after ZOMBIE_GRACE_MS and reports the zombie; then
 * nothing is left. Retries and the circuit breaker are covered in runner-resilience.test.ts.
 */
import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { ToolTimeoutError, TurnAbortedError, type AbortReason } from "../../src/errors.js";
import { hangTool, sleepTool, echoTool } from "../../src/tools/builtin/index.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import { ToolRunner, ZOMBIE_GRACE_MS, type RunnerSettings } from "../../src/tools/runner.js";
import type {
  ToolCallHooks,
  ToolCallRequest,
  ToolContext,
  ToolDefinition,
  ToolOutcome,
} from "../../src/tools/types.js";

const NO_PROGRESS_MS = 3_600_000;

type SettingsPatch = Partial<Omit<RunnerSettings, "defaults">> & {
  defaults?: Partial<RunnerSettings["defaults"]>;
};

function makeRunner(tools: ToolDefinition[], patch: SettingsPatch = {}) {
  const warnings: string[] = [];
  const settings: RunnerSettings = {
    maxCallTimeoutMs: 600_000,
    overrides: {},
    progressAfterMs: NO_PROGRESS_MS,
    progressIntervalMs: NO_PROGRESS_MS,
    ...patch,
    defaults: { timeoutMs: 0, idleTimeoutMs: 0, ...patch.defaults },
  };
  const runner = new ToolRunner(new ToolRegistry(tools), settings, {
    now: () => Date.now(),
    warn: (message) => warnings.push(message),
    // No jitter: retry delays are exactly 100, 200, 400, 800 ms.
    random: () => 0.5,
  });
  return { runner, warnings };
}

let callCounter = 0;
function call(name: string, input: Record<string, unknown> = {}): ToolCallRequest {
  callCounter += 1;
  return { callId: `call_${callCounter}`, name, input };
}

function scopeWith(signal: AbortSignal) {
  return {
    turnId: "turn_1",
    sessionId: "session_1",
    agentId: "agent_1",
    workspace: undefined,
    allowedRoots: [],
    depth: 0,
    signal,
  };
}

/** Starts a call and exposes its outcome once (and only once) it has settled. */
function start(
  runner: ToolRunner,
  request: ToolCallRequest,
  signal: AbortSignal = new AbortController().signal,
  hooks: ToolCallHooks = {},
) {
  let outcome: ToolOutcome | undefined;
  const promise = runner.run(request, scopeWith(signal), hooks).then((value) => {
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

/** A tool that records what it was given and rejects with its signal's reason when aborted. */
function probeTool(name = "probe") {
  const seen: { input?: unknown; context?: ToolContext; calls: number } = { calls: 0 };
  const tool: ToolDefinition<{ text: string }> = {
    name,
    description: "records its input and context; honours its signal",
    inputSchema: z.strictObject({ text: z.string() }),
    concurrency: "parallel",
    execute: (input, context) => {
      seen.calls += 1;
      seen.input = input;
      seen.context = context;
      return new Promise((_resolve, reject) => {
        context.signal.addEventListener("abort", () => reject(context.signal.reason as Error), {
          once: true,
        });
      });
    },
  };
  return { tool: tool as ToolDefinition, seen };
}

/** Heartbeats `count` times every `everyMs`, then goes silent forever and ignores its signal. */
const fadingTool: ToolDefinition<{ count: number; everyMs: number }> = {
  name: "fading",
  description: "heartbeats a few times, then hangs",
  inputSchema: z.strictObject({ count: z.number().int(), everyMs: z.number().int() }),
  concurrency: "parallel",
  execute: ({ count, everyMs }, context) =>
    new Promise<never>(() => {
      let beats = 0;
      const interval = setInterval(() => {
        beats += 1;
        context.heartbeat(`beat ${beats}`);
        if (beats >= count) clearInterval(interval);
      }, everyMs);
    }),
};

const tools = [hangTool, sleepTool, echoTool, fadingTool] as ToolDefinition[];

/**
 * After a call whose tool ignores its signal has ended: the only timer left is the zombie grace timer;
 * the zombie is reported at exactly ZOMBIE_GRACE_MS (not a millisecond earlier), and then no timer
 * remains.
 */
async function expectZombieAfterGrace(runner: ToolRunner, request: ToolCallRequest) {
  expect(vi.getTimerCount()).toBe(1);
  await vi.advanceTimersByTimeAsync(ZOMBIE_GRACE_MS - 1);
  expect(runner.zombies.size).toBe(0);
  await vi.advanceTimersByTimeAsync(1);
  // known by its ids alone: the zombie keeps nothing of its input
  expect(runner.zombies.list()).toEqual([
    { turnId: "turn_1", toolId: request.callId, toolName: request.name, since: Date.now() },
  ]);
  expect(vi.getTimerCount()).toBe(0);
}

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.clearAllTimers();
  vi.useRealTimers();
});

describe("ToolRunner deadlines", () => {
  it.each([
    {
      name: "total only",
      defaults: { timeoutMs: 2000, idleTimeoutMs: 0 },
      input: {},
      maxCallTimeoutMs: 600_000,
      at: 2000,
      kind: "total",
      text: "exceeded wall-clock limit of 2s",
    },
    {
      name: "idle only",
      defaults: { timeoutMs: 0, idleTimeoutMs: 1000 },
      input: {},
      maxCallTimeoutMs: 600_000,
      at: 1000,
      kind: "idle",
      text: "No progress for 1s (idle timeout)",
    },
    {
      name: "idle below total: idle fires first",
      defaults: { timeoutMs: 2000, idleTimeoutMs: 1000 },
      input: {},
      maxCallTimeoutMs: 600_000,
      at: 1000,
      kind: "idle",
      text: "No progress for 1s (idle timeout)",
    },
    {
      name: "idle above total: idle clamped, the wall-clock limit ends it",
      defaults: { timeoutMs: 1000, idleTimeoutMs: 5000 },
      input: {},
      maxCallTimeoutMs: 600_000,
      at: 1000,
      kind: "total",
      text: "exceeded wall-clock limit of 1s",
    },
    {
      name: "negative total is no limit, idle still applies",
      defaults: { timeoutMs: -5, idleTimeoutMs: 1000 },
      input: {},
      maxCallTimeoutMs: 600_000,
      at: 1000,
      kind: "idle",
      text: "No progress for 1s (idle timeout)",
    },
    {
      name: "negative idle is no limit, total still applies",
      defaults: { timeoutMs: 2000, idleTimeoutMs: -5 },
      input: {},
      maxCallTimeoutMs: 600_000,
      at: 2000,
      kind: "total",
      text: "exceeded wall-clock limit of 2s",
    },
    {
      name: "fractional seconds in the wording",
      defaults: { timeoutMs: 250, idleTimeoutMs: 0 },
      input: {},
      maxCallTimeoutMs: 600_000,
      at: 250,
      kind: "total",
      text: "exceeded wall-clock limit of 0.25s",
    },
    {
      name: "_meta.timeout replaces the default total",
      defaults: { timeoutMs: 2000, idleTimeoutMs: 0 },
      input: { _meta: { timeout: 1500 } },
      maxCallTimeoutMs: 600_000,
      at: 1500,
      kind: "total",
      text: "exceeded wall-clock limit of 1.5s",
    },
    {
      name: "_meta.timeout may ask for longer than the default",
      defaults: { timeoutMs: 2000, idleTimeoutMs: 0 },
      input: { _meta: { timeout: 4000 } },
      maxCallTimeoutMs: 600_000,
      at: 4000,
      kind: "total",
      text: "exceeded wall-clock limit of 4s",
    },
    {
      name: "_meta.timeout bounded by maxCallTimeoutMs",
      defaults: { timeoutMs: 2000, idleTimeoutMs: 0 },
      input: { _meta: { timeout: 10_000 } },
      maxCallTimeoutMs: 3000,
      at: 3000,
      kind: "total",
      text: "exceeded wall-clock limit of 3s",
    },
    {
      name: "_meta.timeout on a tool with no default limit",
      defaults: { timeoutMs: 0, idleTimeoutMs: 0 },
      input: { _meta: { timeout: 700 } },
      maxCallTimeoutMs: 600_000,
      at: 700,
      kind: "total",
      text: "exceeded wall-clock limit of 0.7s",
    },
    {
      name: "invalid _meta.timeout ignored",
      defaults: { timeoutMs: 2000, idleTimeoutMs: 0 },
      input: { _meta: { timeout: "soon" } },
      maxCallTimeoutMs: 600_000,
      at: 2000,
      kind: "total",
      text: "exceeded wall-clock limit of 2s",
    },
    {
      name: "negative _meta.timeout ignored",
      defaults: { timeoutMs: 2000, idleTimeoutMs: 0 },
      input: { _meta: { timeout: -100 } },
      maxCallTimeoutMs: 600_000,
      at: 2000,
      kind: "total",
      text: "exceeded wall-clock limit of 2s",
    },
  ])(
    "$name: hang times out at exactly $at ms",
    async ({ defaults, input, maxCallTimeoutMs, at, kind, text }) => {
      const { runner } = makeRunner(tools, { defaults, maxCallTimeoutMs });
      const onTimeout = vi.fn();
      const signal = new AbortController().signal;
      const request = call("hang", input);
      const running = start(runner, request, signal, { onTimeout });

      await vi.advanceTimersByTimeAsync(at - 1);
      expect(running.outcome).toBeUndefined();
      expect(onTimeout).not.toHaveBeenCalled();

      await vi.advanceTimersByTimeAsync(1);
      const outcome = running.outcome;
      expect(outcome).toBeDefined();
      expect(outcome?.status).toBe("timeout");
      expect(outcome?.isError).toBe(true);
      expect(outcome?.result.startsWith('[TIMEOUT] Tool "hang"')).toBe(true);
      expect(outcome?.result).toContain(text);
      expect(outcome?.timeout).toEqual({ kind, timeoutMs: at });
      expect(outcome?.durationMs).toBe(at);
      expect(outcome?.attempts).toBe(1);
      expect(outcome?.classification).toBe("transient");
      expect(onTimeout).toHaveBeenCalledTimes(1);
      expect(onTimeout.mock.calls[0]?.[1]).toEqual({ kind, timeoutMs: at });
      expect(getEventListeners(signal, "abort")).toHaveLength(0);
      await expectZombieAfterGrace(runner, request);
      // A timeout is not retried by default: the outcome stands.
      expect(running.outcome).toBe(outcome);
    },
  );

  it("the total-timeout result carries a hint the model can act on", async () => {
    const { runner } = makeRunner(tools, { defaults: { timeoutMs: 2000 } });
    const running = start(runner, call("hang"));
    await vi.advanceTimersByTimeAsync(2000);
    expect(running.outcome?.result).toBe(
      '[TIMEOUT] Tool "hang" exceeded wall-clock limit of 2s. The call was stopped. Try a smaller or faster request, or pass _meta.timeout (ms) to ask for a longer limit.',
    );
  });

  it("the idle-timeout result carries a hint the model can act on", async () => {
    const { runner } = makeRunner(tools, { defaults: { idleTimeoutMs: 1000 } });
    const running = start(runner, call("hang"));
    await vi.advanceTimersByTimeAsync(1000);
    expect(running.outcome?.result).toBe(
      '[TIMEOUT] Tool "hang": No progress for 1s (idle timeout). The call stopped reporting progress and was stopped. Try again, or a smaller request.',
    );
  });

  it.each([
    { name: "both zero", defaults: { timeoutMs: 0, idleTimeoutMs: 0 }, warns: 0 },
    { name: "both negative", defaults: { timeoutMs: -1, idleTimeoutMs: -1 }, warns: 2 },
    { name: "negative total, zero idle", defaults: { timeoutMs: -2000, idleTimeoutMs: 0 }, warns: 1 },
  ])("$name: no limit, the call runs until the turn ends it", async ({ defaults, warns }) => {
    const { runner, warnings } = makeRunner(tools, { defaults });
    const onStart = vi.fn();
    const controller = new AbortController();
    const request = call("hang");
    const running = start(runner, request, controller.signal, { onStart });

    await vi.advanceTimersByTimeAsync(24 * 3_600_000);
    expect(running.outcome).toBeUndefined();
    expect(onStart.mock.calls[0]?.[1]).toEqual({ timeoutMs: 0, idleTimeoutMs: 0 });
    expect(warnings).toHaveLength(warns);
    for (const warning of warnings) expect(warning).toMatch(/negative .*treated as 0/);

    controller.abort(new TurnAbortedError("user"));
    await vi.advanceTimersByTimeAsync(0);
    expect(running.outcome?.status).toBe("cancelled");
    expect(running.outcome?.durationMs).toBe(24 * 3_600_000);
    expect(running.outcome?.attempts).toBe(1);
    await expectZombieAfterGrace(runner, request);
  });

  it("warns when idle exceeds total and starts the call with the clamped pair", async () => {
    const { runner, warnings } = makeRunner(tools, { defaults: { timeoutMs: 1000, idleTimeoutMs: 5000 } });
    const onStart = vi.fn();
    const request = call("hang");
    const running = start(runner, request, undefined, { onStart });
    expect(onStart.mock.calls[0]?.[1]).toEqual({ timeoutMs: 1000, idleTimeoutMs: 1000 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("hang.idleTimeoutMs (5000) exceeds hang.timeoutMs (1000)");
    await vi.advanceTimersByTimeAsync(1000);
    expect(running.outcome?.status).toBe("timeout");
    await expectZombieAfterGrace(runner, request);
  });

  it("a per-tool override wins over the default", async () => {
    const { runner } = makeRunner(tools, {
      defaults: { timeoutMs: 5000 },
      overrides: { hang: { timeoutMs: 700 } },
    });
    const request = call("hang");
    const running = start(runner, request, undefined);
    await vi.advanceTimersByTimeAsync(699);
    expect(running.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(running.outcome?.result).toContain("exceeded wall-clock limit of 0.7s");
    await expectZombieAfterGrace(runner, request);
  });

  it("a tool's own limit wins over the default", async () => {
    const own = { ...hangTool, name: "slowpoke", timeoutMs: 900 } as ToolDefinition;
    const { runner } = makeRunner([own], { defaults: { timeoutMs: 5000 } });
    const request = call("slowpoke");
    const running = start(runner, request, undefined);
    await vi.advanceTimersByTimeAsync(899);
    expect(running.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(
      running.outcome?.result.startsWith('[TIMEOUT] Tool "slowpoke" exceeded wall-clock limit of 0.9s'),
    ).toBe(true);
    await expectZombieAfterGrace(runner, request);
  });
});

describe("heartbeats and the idle deadline", () => {
  it("a tool heartbeating every 400ms under a 500ms idle limit never idles out", async () => {
    const { runner } = makeRunner(tools, { defaults: { idleTimeoutMs: 500 } });
    const onTimeout = vi.fn();
    const running = start(runner, call("sleep", { ms: 3000, heartbeatMs: 400 }), undefined, { onTimeout });

    await vi.advanceTimersByTimeAsync(2999);
    expect(running.outcome).toBeUndefined();
    expect(onTimeout).not.toHaveBeenCalled();

    await vi.advanceTimersByTimeAsync(1);
    expect(running.outcome).toMatchObject({
      status: "complete",
      isError: false,
      result: "Slept 3000ms.",
      durationMs: 3000,
      attempts: 1,
    });
    expect(onTimeout).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a tool that stops heartbeating idles out exactly 500ms after its last beat", async () => {
    const { runner } = makeRunner(tools, { defaults: { idleTimeoutMs: 500 } });
    // Beats at 400, 800 and 1200 ms, then silence: the idle deadline is 1200 + 500.
    const request = call("fading", { count: 3, everyMs: 400 });
    const running = start(runner, request, undefined);

    await vi.advanceTimersByTimeAsync(1699);
    expect(running.outcome).toBeUndefined();

    await vi.advanceTimersByTimeAsync(1);
    expect(running.outcome?.status).toBe("timeout");
    expect(running.outcome?.timeout).toEqual({ kind: "idle", timeoutMs: 500 });
    expect(running.outcome?.result).toContain('[TIMEOUT] Tool "fading": No progress for 0.5s (idle timeout)');
    expect(running.outcome?.durationMs).toBe(1700);
    // The tool stopped its own interval after three beats but ignores its signal: a zombie.
    await expectZombieAfterGrace(runner, request);
  });

  it("heartbeats do not extend the wall-clock limit", async () => {
    const { runner } = makeRunner(tools, { defaults: { timeoutMs: 2000, idleTimeoutMs: 500 } });
    const running = start(runner, call("sleep", { ms: 10_000, heartbeatMs: 400 }));

    await vi.advanceTimersByTimeAsync(1999);
    expect(running.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(running.outcome?.timeout).toEqual({ kind: "total", timeoutMs: 2000 });
    expect(running.outcome?.result).toContain('[TIMEOUT] Tool "sleep" exceeded wall-clock limit of 2s');
    // The cooperative sleep tool stopped its own timers when its signal was aborted.
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("_meta", () => {
  it("is stripped before the tool sees its input, and its timeout is honoured", async () => {
    const { tool, seen } = probeTool();
    const { runner } = makeRunner([tool], { defaults: { timeoutMs: 60_000 } });
    const running = start(runner, call("probe", { text: "hi", _meta: { timeout: 1200, trace: "x" } }));
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.input).toEqual({ text: "hi" });
    expect(Object.keys(seen.input as object)).toEqual(["text"]);

    await vi.advanceTimersByTimeAsync(1199);
    expect(running.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(running.outcome?.timeout).toEqual({ kind: "total", timeoutMs: 1200 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a _meta.timeout above maxCallTimeoutMs is bounded and warned about", async () => {
    const { tool, seen } = probeTool();
    const { runner, warnings } = makeRunner([tool], { maxCallTimeoutMs: 3000 });
    const running = start(runner, call("probe", { text: "hi", _meta: { timeout: 999_999 } }));
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.input).toEqual({ text: "hi" });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("maxCallTimeoutMs");

    await vi.advanceTimersByTimeAsync(2999);
    expect(running.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(running.outcome?.timeout).toEqual({ kind: "total", timeoutMs: 3000 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a _meta that is not an object is still stripped", async () => {
    const { tool, seen } = probeTool();
    const { runner, warnings } = makeRunner([tool], { defaults: { timeoutMs: 1000 } });
    const running = start(runner, call("probe", { text: "hi", _meta: "fast please" }));
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.input).toEqual({ text: "hi" });
    expect(warnings).toEqual([]);
    await vi.advanceTimersByTimeAsync(1000);
    expect(running.outcome?.status).toBe("timeout");
  });
});

describe("the tool's signal", () => {
  it.each([
    { kind: "total" as const, defaults: { timeoutMs: 2000, idleTimeoutMs: 0 }, at: 2000 },
    { kind: "idle" as const, defaults: { timeoutMs: 0, idleTimeoutMs: 800 }, at: 800 },
  ])("is aborted on $kind expiry with a ToolTimeoutError reason", async ({ kind, defaults, at }) => {
    const { tool, seen } = probeTool();
    const { runner } = makeRunner([tool], { defaults });
    const running = start(runner, call("probe", { text: "hi" }));

    await vi.advanceTimersByTimeAsync(at - 1);
    expect(seen.context?.signal.aborted).toBe(false);

    await vi.advanceTimersByTimeAsync(1);
    const signal = seen.context?.signal;
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBeInstanceOf(ToolTimeoutError);
    expect(signal?.reason).toMatchObject({ toolName: "probe", timeoutMs: at, kind, code: "tool_timeout" });
    // made by the framework's timer: no stack frames, only the header (a burst makes thousands)
    const reason = signal?.reason as ToolTimeoutError;
    expect(reason.stack).toBe(`ToolTimeoutError: ${reason.message}`);
    expect(Error.stackTraceLimit).toBeGreaterThan(0);
    // The tool rejected with that reason, but the model sees a timeout, not an error.
    expect(running.outcome?.status).toBe("timeout");
    expect(running.outcome?.result.startsWith('[TIMEOUT] Tool "probe"')).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("carries the call's identity and the turn's scope", async () => {
    const { tool, seen } = probeTool();
    const { runner } = makeRunner([tool]);
    const controller = new AbortController();
    const request = call("probe", { text: "hi" });
    start(runner, request, controller.signal);
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.context).toMatchObject({
      turnId: "turn_1",
      sessionId: "session_1",
      agentId: "agent_1",
      callId: request.callId,
      toolName: "probe",
      workspace: undefined,
      allowedRoots: [],
      depth: 0,
    });
    // The tool gets its own signal, not the turn's: a timeout must not abort the turn.
    expect(seen.context?.signal).not.toBe(controller.signal);
    controller.abort();
    await vi.advanceTimersByTimeAsync(0);
  });

  it("is aborted for a tool that first reads it after the call ended (it is made when first read)", async () => {
    let context: ToolContext | undefined;
    const late: ToolDefinition = {
      name: "late",
      description: "keeps its context and never looks at its signal while it runs",
      inputSchema: z.object({}),
      concurrency: "parallel",
      execute: (_input, given) => {
        context = given;
        return new Promise<string>(() => {});
      },
    };
    const { runner } = makeRunner([late], { defaults: { timeoutMs: 500 } });
    const running = start(runner, call("late"));
    await vi.advanceTimersByTimeAsync(500);
    expect(running.outcome?.status).toBe("timeout");
    expect(context?.signal.aborted).toBe(true);
    expect(context?.signal.reason).toBeInstanceOf(ToolTimeoutError);
    expect(context?.signal).toBe(context?.signal);
    await vi.advanceTimersByTimeAsync(ZOMBIE_GRACE_MS);
  });

  it("a tool that ignores its signal (hang) still yields a timeout outcome", async () => {
    const { runner } = makeRunner(tools, { defaults: { timeoutMs: 300 } });
    const request = call("hang");
    const running = start(runner, request, undefined);
    await vi.advanceTimersByTimeAsync(299);
    expect(running.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(running.outcome?.status).toBe("timeout");
    await expectZombieAfterGrace(runner, request);
  });
});

describe("turn abort", () => {
  it.each<{ reason: unknown; expected: string; label: string }>([
    { label: "user", reason: new TurnAbortedError("user"), expected: "[CANCELLED] Turn aborted by user." },
    {
      label: "disconnect",
      reason: new TurnAbortedError("disconnect"),
      expected: "[CANCELLED] Turn aborted: the client disconnected.",
    },
    {
      label: "shutdown",
      reason: new TurnAbortedError("shutdown"),
      expected: "[CANCELLED] Turn aborted: the server is shutting down.",
    },
    {
      label: "parent",
      reason: new TurnAbortedError("parent"),
      expected: "[CANCELLED] Turn aborted: its parent turn stopped waiting for it.",
    },
    { label: "no TurnAbortedError", reason: undefined, expected: "[CANCELLED] Turn aborted by user." },
  ])("mid-flight ($label) cancels the call at once", async ({ reason, expected }) => {
    const { runner } = makeRunner(tools, { defaults: { timeoutMs: 10_000, idleTimeoutMs: 5000 } });
    const controller = new AbortController();
    const request = call("hang");
    const running = start(runner, request, controller.signal);

    await vi.advanceTimersByTimeAsync(500);
    expect(running.outcome).toBeUndefined();
    controller.abort(reason);
    await vi.advanceTimersByTimeAsync(0);

    expect(running.outcome).toEqual({
      status: "cancelled",
      isError: true,
      result: expected,
      durationMs: 500,
      // The tool ran once before the abort ended its attempt.
      attempts: 1,
    });
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    await expectZombieAfterGrace(runner, request);
  });

  it("passes the turn's reason on to the tool's signal", async () => {
    const { tool, seen } = probeTool();
    const { runner } = makeRunner([tool]);
    const controller = new AbortController();
    const running = start(runner, call("probe", { text: "hi" }), controller.signal);
    await vi.advanceTimersByTimeAsync(100);
    const reason = new TurnAbortedError("user");
    controller.abort(reason);
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.context?.signal.aborted).toBe(true);
    expect(seen.context?.signal.reason).toBe(reason);
    // The tool's rejection after the abort does not replace the cancellation.
    expect(running.outcome?.status).toBe("cancelled");
  });

  it.each<AbortReason>(["user", "timeout", "disconnect", "shutdown"])(
    "an already-aborted signal (%s) gives the same outcome as a mid-flight abort, without calling execute",
    async (reason) => {
      const execute = vi.fn(() => new Promise<never>(() => {}));
      const spy: ToolDefinition = { ...hangTool, name: "spy", execute } as ToolDefinition;
      const { runner } = makeRunner([spy], { defaults: { timeoutMs: 10_000 } });

      const midFlight = new AbortController();
      const midFlightRequest = call("spy");
      const running = start(runner, midFlightRequest, midFlight.signal);
      await vi.advanceTimersByTimeAsync(250);
      midFlight.abort(new TurnAbortedError(reason));
      await vi.advanceTimersByTimeAsync(0);
      expect(execute).toHaveBeenCalledTimes(1);
      execute.mockClear();

      const already = new AbortController();
      already.abort(new TurnAbortedError(reason));
      const early = start(runner, call("spy"), already.signal);
      await vi.advanceTimersByTimeAsync(0);

      // Same status and result; only the duration and the number of executions differ.
      const { durationMs: midDuration, attempts: midAttempts, ...midRest } = running.outcome as ToolOutcome;
      const {
        durationMs: earlyDuration,
        attempts: earlyAttempts,
        ...earlyRest
      } = early.outcome as ToolOutcome;
      expect(earlyRest).toEqual(midRest);
      expect(earlyRest.status).toBe("cancelled");
      expect(earlyRest.result).toContain("[CANCELLED]");
      expect(midDuration).toBe(250);
      expect(earlyDuration).toBe(0);
      expect(midAttempts).toBe(1);
      expect(earlyAttempts).toBe(0);
      expect(execute).not.toHaveBeenCalled();
      expect(getEventListeners(already.signal, "abort")).toHaveLength(0);
      // Only the mid-flight call's tool is left running, as a zombie.
      await expectZombieAfterGrace(runner, midFlightRequest);
    },
  );

  it("an already-aborted signal wins over an unknown tool name", async () => {
    const { runner } = makeRunner(tools);
    const controller = new AbortController();
    controller.abort(new TurnAbortedError("user"));
    const outcome = await runner.run(call("no_such_tool"), scopeWith(controller.signal));
    expect(outcome.status).toBe("cancelled");
    expect(outcome.result).toBe("[CANCELLED] Turn aborted by user.");
  });

  it("a timeout after the turn was aborted changes nothing", async () => {
    const { runner } = makeRunner(tools, { defaults: { timeoutMs: 1000 } });
    const onTimeout = vi.fn();
    const controller = new AbortController();
    const running = start(runner, call("hang"), controller.signal, { onTimeout });
    await vi.advanceTimersByTimeAsync(999);
    controller.abort(new TurnAbortedError("user"));
    await vi.advanceTimersByTimeAsync(5000);
    expect(running.outcome?.status).toBe("cancelled");
    expect(onTimeout).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("errors", () => {
  it("an unknown tool is an error outcome naming the tool", async () => {
    const { runner } = makeRunner(tools, { defaults: { timeoutMs: 1000 } });
    const outcome = await runner.run(
      call("teleport", { to: "mars" }),
      scopeWith(new AbortController().signal),
    );
    expect(outcome).toEqual({
      status: "error",
      isError: true,
      result: '[ERROR] Tool "teleport" failed: unknown tool "teleport".',
      durationMs: 0,
      attempts: 0,
      classification: "permanent",
    });
    expect(vi.getTimerCount()).toBe(0);
  });

  it.each([
    { name: "sleep", input: { ms: "soon" }, field: "ms" },
    { name: "sleep", input: { ms: 10, heartbeatMs: -1 }, field: "heartbeatMs" },
    { name: "sleep", input: {}, field: "ms" },
    { name: "echo", input: { text: 42 }, field: "text" },
    // echo ignores unknown keys (so it can serve as a fallback); sleep's schema is strict.
    { name: "sleep", input: { ms: 10, colour: "red" }, field: "colour" },
  ])("invalid input for $name naming $field is an error outcome", async ({ name, input, field }) => {
    const { runner } = makeRunner(tools, { defaults: { timeoutMs: 1000 } });
    const outcome = await runner.run(call(name, input), scopeWith(new AbortController().signal));
    expect(outcome.status).toBe("error");
    expect(outcome.isError).toBe(true);
    expect(outcome.result.startsWith(`[ERROR] Tool "${name}" failed: invalid input (`)).toBe(true);
    expect(outcome.result).toContain(field);
    // Never executed, never retried.
    expect(outcome.attempts).toBe(0);
    expect(outcome.classification).toBe("permanent");
    expect(vi.getTimerCount()).toBe(0);
  });

  // These tests are about how errors are reported, so retries are switched off; a plain error is
  // unknown, hence transient, and would otherwise be retried (see the next test).
  const NO_RETRY = { retry: { maxAttempts: 1 } };

  function explodingTool() {
    const execute = vi.fn(() => {
      throw new Error("boom");
    });
    return { tool: { ...hangTool, name: "explode", execute } as ToolDefinition, execute };
  }

  it("a tool that throws synchronously is an error outcome, not a crash", async () => {
    const { tool, execute } = explodingTool();
    const { runner } = makeRunner([tool], {
      defaults: { timeoutMs: 1000, idleTimeoutMs: 500 },
      ...NO_RETRY,
    });
    const signal = new AbortController().signal;
    const running = start(runner, call("explode"), signal);
    await vi.advanceTimersByTimeAsync(0);
    expect(running.outcome).toEqual({
      status: "error",
      isError: true,
      result: '[ERROR] Tool "explode" failed: boom',
      durationMs: 0,
      attempts: 1,
      classification: "transient",
    });
    expect(execute).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });

  it("a tool that keeps throwing a plain Error is retried 5 times by default, then reported", async () => {
    const { tool, execute } = explodingTool();
    const { runner } = makeRunner([tool], { defaults: { timeoutMs: 1000, idleTimeoutMs: 500 } });
    const signal = new AbortController().signal;
    const onRetry = vi.fn();
    const running = start(runner, call("explode"), signal, { onRetry });

    // Attempts at 0, 100, 300, 700 and 1500 ms (delays 100, 200, 400, 800).
    await vi.advanceTimersByTimeAsync(1499);
    expect(running.outcome).toBeUndefined();
    expect(execute).toHaveBeenCalledTimes(4);
    await vi.advanceTimersByTimeAsync(1);
    expect(execute).toHaveBeenCalledTimes(5);
    expect(running.outcome).toEqual({
      status: "error",
      isError: true,
      result: '[ERROR] Tool "explode" failed: boom',
      durationMs: 1500,
      attempts: 5,
      classification: "transient",
    });
    expect(onRetry.mock.calls.map(([, retry]) => [retry.attempt, retry.delayMs])).toEqual([
      [2, 100],
      [3, 200],
      [4, 400],
      [5, 800],
    ]);
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });

  it("a tool that rejects with a non-Error is an error outcome with its text", async () => {
    const reject: ToolDefinition = {
      ...hangTool,
      name: "reject",
      execute: () => Promise.reject("disk full"),
    } as ToolDefinition;
    const { runner } = makeRunner([reject], { defaults: { timeoutMs: 1000 }, ...NO_RETRY });
    const running = start(runner, call("reject"));
    await vi.advanceTimersByTimeAsync(0);
    expect(running.outcome?.result).toBe('[ERROR] Tool "reject" failed: disk full');
    expect(running.outcome?.classification).toBe("transient");
    expect(running.outcome?.attempts).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("completion", () => {
  it("a string result is given as is; no timers or listeners remain", async () => {
    const { runner } = makeRunner(tools, {
      defaults: { timeoutMs: 1000, idleTimeoutMs: 500 },
      progressAfterMs: 10,
    });
    const signal = new AbortController().signal;
    const running = start(runner, call("echo", { text: "hello" }), signal);
    await vi.advanceTimersByTimeAsync(0);
    expect(running.outcome).toEqual({
      status: "complete",
      isError: false,
      result: "hello",
      durationMs: 0,
      attempts: 1,
    });
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });

  it("a value result is given as JSON", async () => {
    const structured: ToolDefinition = {
      ...hangTool,
      name: "structured",
      execute: async () => ({ files: ["a.ts"], count: 1 }),
    } as ToolDefinition;
    const { runner } = makeRunner([structured]);
    const outcome = await runner.run(call("structured"), scopeWith(new AbortController().signal));
    expect(outcome.result).toBe('{"files":["a.ts"],"count":1}');
  });

  it("heartbeats after the call settled are ignored", async () => {
    const { tool, seen } = probeTool();
    const { runner } = makeRunner([tool], { defaults: { timeoutMs: 1000, idleTimeoutMs: 500 } });
    const running = start(runner, call("probe", { text: "hi" }));
    await vi.advanceTimersByTimeAsync(500);
    expect(running.outcome?.status).toBe("timeout");
    seen.context?.heartbeat("still here");
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("progress", () => {
  it("reports at progressAfterMs, then every progressIntervalMs, with the last heartbeat message", async () => {
    const { runner } = makeRunner(tools, { progressAfterMs: 1000, progressIntervalMs: 700 });
    const onProgress = vi.fn();
    // Heartbeats at 300, 600, …, 2100; done at 2200. Progress at 1000 and 1700.
    const running = start(runner, call("sleep", { ms: 2200, heartbeatMs: 300 }), undefined, { onProgress });

    await vi.advanceTimersByTimeAsync(999);
    expect(onProgress).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(onProgress).toHaveBeenCalledTimes(1);
    expect(onProgress.mock.calls[0]?.[1]).toEqual({ elapsedMs: 1000, message: "slept 900ms of 2200ms" });

    await vi.advanceTimersByTimeAsync(699);
    expect(onProgress).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(onProgress).toHaveBeenCalledTimes(2);
    expect(onProgress.mock.calls[1]?.[1]).toEqual({ elapsedMs: 1700, message: "slept 1500ms of 2200ms" });

    await vi.advanceTimersByTimeAsync(500);
    expect(running.outcome?.status).toBe("complete");
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(onProgress).toHaveBeenCalledTimes(2);
  });

  it("reports a null message for a silent tool and stops when the call times out", async () => {
    const { runner } = makeRunner(tools, {
      defaults: { timeoutMs: 4500 },
      progressAfterMs: 1000,
      progressIntervalMs: 1000,
    });
    const onProgress = vi.fn();
    const request = call("hang");
    const running = start(runner, request, undefined, { onProgress });

    await vi.advanceTimersByTimeAsync(4499);
    expect(onProgress.mock.calls.map(([, progress]) => progress)).toEqual([
      { elapsedMs: 1000, message: null },
      { elapsedMs: 2000, message: null },
      { elapsedMs: 3000, message: null },
      { elapsedMs: 4000, message: null },
    ]);
    expect(onProgress.mock.calls[0]?.[0]).toBe(request);
    await vi.advanceTimersByTimeAsync(1);
    expect(running.outcome?.status).toBe("timeout");
    await expectZombieAfterGrace(runner, request);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(onProgress).toHaveBeenCalledTimes(4);
  });

  it("stops when the turn is aborted", async () => {
    const { runner } = makeRunner(tools, { progressAfterMs: 1000, progressIntervalMs: 1000 });
    const onProgress = vi.fn();
    const controller = new AbortController();
    start(runner, call("hang"), controller.signal, { onProgress });
    await vi.advanceTimersByTimeAsync(2500);
    expect(onProgress).toHaveBeenCalledTimes(2);
    controller.abort(new TurnAbortedError("user"));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(onProgress).toHaveBeenCalledTimes(2);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("cancellation in the starting tick", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("never executes a tool whose call was cancelled in the tick it started", async () => {
    const { tool, seen } = probeTool();
    const { runner } = makeRunner([tool as ToolDefinition]);
    const controller = new AbortController();
    const running = start(runner, call("probe", { text: "x" }), controller.signal);
    controller.abort(new TurnAbortedError("user"));
    await running.promise;
    await vi.advanceTimersByTimeAsync(0);
    expect(running.outcome?.status).toBe("cancelled");
    expect(seen.calls).toBe(0);
  });
});
