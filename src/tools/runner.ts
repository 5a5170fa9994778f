/**
 * The tool runner (DESIGN.md §5.1, §5.4): runs one call to an outcome. Each attempt runs under its
 * wall-clock and idle deadlines with progress reports, and the framework stops waiting the moment a
 * deadline passes or the call is cancelled — whether or not the tool honours its signal. Around the
 * attempts: the tool's circuit breaker, classification of every failure, retries of transient ones
 * with backoff, and the tool's fallback. Every decision goes to the DecisionRecorder. `run` never
 * rejects.
 *
 * Timers are created here only and cleared when an attempt settles however it settles; abort
 * listeners are removed then too, so nothing outlives the call but a zombie tool, which is tracked.
 */
import { ToolTimeoutError, TurnAbortedError, type AbortReason } from "../errors.js";
import { NO_DECISIONS, type Decision, type DecisionRecorder } from "../observability/decision.js";
import { resolveCall, type LimitSettings } from "./limits.js";
import type { ToolRegistry } from "./registry.js";
import { classifyError } from "./resilience/classify.js";
import {
  BreakerRegistry,
  DEFAULT_BREAKER_SETTINGS,
  type Admission,
  type BreakerTransition,
} from "./resilience/circuit-breaker.js";
import {
  abortableDelay,
  decideRetry,
  DEFAULT_RETRY_POLICY,
  type RetryPolicy,
} from "./resilience/retry-policy.js";
import type { Classification } from "./resilience/tool-error.js";
import {
  cancelledResult,
  circuitOpenResult,
  errorResult,
  fallbackResult,
  stringifyToolOutput,
  timeoutResult,
  TOOL_CANCELLED_RESULT,
} from "./results.js";
import type {
  ToolCallHooks,
  ToolCallRequest,
  ToolContext,
  ToolDefinition,
  ToolOutcome,
  ToolServices,
} from "./types.js";

export type RunnerSettings = LimitSettings & {
  progressAfterMs: number;
  progressIntervalMs: number;
  /** Defaults for every tool; a tool's own `retry` overrides field by field. */
  retry?: Partial<RetryPolicy>;
};

export type RunnerDeps = {
  now?: () => number;
  warn?: (message: string) => void;
  breakers?: BreakerRegistry;
  recorder?: DecisionRecorder;
  /** Source of retry jitter, in [0, 1). */
  random?: () => number;
};

/** The turn-level facts a call's context is made from. */
export type CallScope = Omit<ToolContext, "callId" | "toolName" | "signal" | "heartbeat" | "services"> & {
  signal: AbortSignal;
  services?: ToolServices;
  /** A per-call signal (cancel one tool); its abort cancels only that call. */
  callSignal?: (callId: string) => AbortSignal | undefined;
};

/** How long a tool may keep running after its call closed before it counts as a zombie. */
export const ZOMBIE_GRACE_MS = 1_000;

type Partial_ = Omit<ToolOutcome, "durationMs" | "attempts">;
type AttemptResult = Partial_ & { error?: unknown };

/** Everything one call needs while it runs; built once per call. */
type CallRun = {
  call: ToolCallRequest;
  tool: ToolDefinition;
  input: unknown;
  limits: { timeoutMs: number; idleTimeoutMs: number };
  scope: CallScope;
  callSignal: AbortSignal | undefined;
  hooks: ToolCallHooks;
  startedAt: number;
};

export class ToolRunner {
  readonly breakers: BreakerRegistry;
  private readonly now: () => number;
  private readonly warn: (message: string) => void;
  private readonly recorder: DecisionRecorder;
  private readonly random: () => number;

  constructor(
    private readonly registry: ToolRegistry,
    private readonly settings: RunnerSettings,
    deps: RunnerDeps = {},
  ) {
    this.now = deps.now ?? Date.now;
    this.warn = deps.warn ?? (() => {});
    this.recorder = deps.recorder ?? NO_DECISIONS;
    this.random = deps.random ?? Math.random;
    this.breakers = deps.breakers ?? new BreakerRegistry(DEFAULT_BREAKER_SETTINGS, this.now);
  }

  /** Runs `call` to an outcome: complete, error, timeout or cancelled. */
  async run(call: ToolCallRequest, scope: CallScope, hooks: ToolCallHooks = {}): Promise<ToolOutcome> {
    const startedAt = this.now();
    const tool = this.registry.get(call.name);
    const resolved = resolveCall(tool, call.input, this.settings);
    for (const warning of resolved.warnings) this.warn(`${call.name} (${call.callId}): ${warning}`);
    const callSignal = scope.callSignal?.(call.callId);
    const finish = (outcome: Partial_, attempts: number): ToolOutcome => ({
      ...outcome,
      durationMs: this.now() - startedAt,
      attempts,
    });

    // a call cancelled before it started has no tool_start (its turn or deadline closed it already)
    if (scope.signal.aborted || callSignal?.aborted) {
      return finish(this.cancelled(call, scope.signal, callSignal), 0);
    }
    hooks.onStart?.(call, resolved.limits);
    if (!tool) {
      this.decide(scope, call, {
        kind: "classification",
        classification: "permanent",
        basis: "unknown tool",
        error: call.name,
      });
      return finish(failure(errorResult(call.name, `unknown tool "${call.name}".`), "permanent"), 0);
    }
    const parsed = tool.inputSchema.safeParse(resolved.input);
    if (!parsed.success) {
      const detail = parsed.error.issues.map(
        (issue) => `${issue.path.join(".") || "input"}: ${issue.message}`,
      );
      const message = `invalid input (${detail.join("; ")}).`;
      this.decide(scope, call, {
        kind: "classification",
        classification: "permanent",
        basis: "schema validation failed",
        error: message,
      });
      return finish(failure(errorResult(call.name, message), "permanent"), 0);
    }
    const run: CallRun = {
      call,
      tool,
      input: parsed.data,
      limits: resolved.limits,
      scope,
      callSignal,
      hooks,
      startedAt,
    };
    const { outcome, attempts } = await this.runWithResilience(run, true);
    return finish(outcome, attempts);
  }

  /** Breaker, attempts, classification, retries and fallback for one call. */
  private async runWithResilience(
    run: CallRun,
    allowFallback: boolean,
  ): Promise<{ outcome: Partial_; attempts: number }> {
    const { call, tool, scope } = run;
    const policy: RetryPolicy = {
      ...DEFAULT_RETRY_POLICY,
      ...this.settings.retry,
      ...tool.retry,
      ...this.settings.overrides[tool.name]?.retry,
    };
    const breaker = this.breakers.get(tool.name);
    const observe = (transition: BreakerTransition) =>
      this.recorder.record(scope.turnId, { kind: "breaker_transition", callId: call.callId, ...transition });
    let attempts = 0;

    for (;;) {
      const admission: Admission = breaker.admit(observe);
      if (!admission.admitted) {
        this.decide(scope, call, {
          kind: "breaker_rejected",
          state: admission.state,
          retryAfterMs: admission.retryAfterMs,
        });
        const rejected = failure(circuitOpenResult(tool.name, admission.retryAfterMs), "transient");
        const fallback = allowFallback ? await this.fallback(run, "has its circuit open") : undefined;
        return withFallback(fallback, rejected, attempts);
      }
      attempts++;
      const attempt = await this.attempt(run);
      if (attempt.status === "complete") {
        admission.release("success");
        if (attempts > 1) this.decide(scope, call, { kind: "retry_succeeded", attempts });
        return { outcome: attempt, attempts };
      }
      if (attempt.status === "cancelled") {
        admission.release("ignored");
        return { outcome: attempt, attempts };
      }

      const { classification, basis } =
        attempt.status === "timeout"
          ? { classification: "transient" as const, basis: `timeout (${attempt.timeout?.kind ?? "total"})` }
          : classifyError(attempt.error, tool.classifyError);
      const message = errorMessage(attempt.error) ?? attempt.result;
      this.decide(scope, call, { kind: "classification", classification, basis, error: message });
      admission.release(classification === "transient" ? "failure" : "ignored");
      const failed: Partial_ = {
        status: attempt.status,
        result: attempt.result,
        isError: true,
        classification,
        ...(attempt.timeout ? { timeout: attempt.timeout } : {}),
      };

      if (classification === "permanent") {
        const fallback = allowFallback ? await this.fallback(run, "failed permanently") : undefined;
        return withFallback(fallback, failed, attempts);
      }
      const planned =
        attempt.status === "timeout" && !policy.retryOnTimeout
          ? { retry: false as const, reason: "timeouts are not retried" }
          : decideRetry(policy, attempts, this.now() - run.startedAt, this.random);
      // A failure that opened the circuit (or a failed half-open probe) is not retried into it.
      const decision =
        planned.retry && breaker.state === "open"
          ? { retry: false as const, reason: "its circuit is open" }
          : planned;
      if (!decision.retry) {
        this.decide(scope, call, { kind: "retry_stopped", attempts, reason: decision.reason });
        const circuitOpen = breaker.state !== "closed";
        const fallback =
          allowFallback && circuitOpen
            ? await this.fallback(run, "failed and its circuit opened")
            : undefined;
        return withFallback(fallback, failed, attempts);
      }
      this.decide(scope, call, {
        kind: "retry",
        attempt: attempts + 1,
        delayMs: decision.delayMs,
        error: message,
        classification,
      });
      run.hooks.onRetry?.(call, {
        attempt: attempts + 1,
        delayMs: decision.delayMs,
        error: message,
        classification,
      });
      if (!(await abortableDelay(decision.delayMs, [scope.signal, run.callSignal]))) {
        return { outcome: this.cancelled(call, scope.signal, run.callSignal), attempts };
      }
    }
  }

  /**
   * Runs the tool's fallback with the same input, as a call of its own (its name, its limits, its
   * retries and breaker); undefined when it has none that can run.
   */
  private async fallback(
    run: CallRun,
    because: string,
  ): Promise<{ outcome: Partial_; attempts: number } | undefined> {
    const name = this.settings.overrides[run.tool.name]?.fallback ?? run.tool.fallback;
    const fallbackTool = name === undefined ? undefined : this.registry.get(name);
    if (!fallbackTool || fallbackTool.name === run.tool.name) return undefined;
    const parsed = fallbackTool.inputSchema.safeParse(run.input);
    if (!parsed.success) {
      this.warn(`fallback "${fallbackTool.name}" of "${run.tool.name}" does not accept its input; not used`);
      return undefined;
    }
    this.decide(run.scope, run.call, { kind: "fallback", fallback: fallbackTool.name, because });
    const call = { ...run.call, name: fallbackTool.name };
    const { limits } = resolveCall(fallbackTool, run.call.input, this.settings);
    const { outcome, attempts } = await this.runWithResilience(
      { ...run, call, tool: fallbackTool, input: parsed.data, limits, startedAt: this.now() },
      false,
    );
    if (outcome.status === "cancelled") return { outcome, attempts };
    return {
      outcome: { ...outcome, result: fallbackResult(run.tool.name, because, fallbackTool.name, outcome) },
      attempts,
    };
  }

  /** One attempt under the call's deadlines; settles at the first of completion, expiry or cancel. */
  private attempt(run: CallRun): Promise<AttemptResult> {
    const { call, tool, scope, hooks, callSignal } = run;
    const { timeoutMs, idleTimeoutMs } = run.limits;
    return new Promise<AttemptResult>((resolve) => {
      const controller = new AbortController();
      let settled = false;
      let toolRunning = false;
      let lastMessage: string | null = null;
      let totalTimer: NodeJS.Timeout | undefined;
      let idleTimer: NodeJS.Timeout | undefined;
      let progressTimer: NodeJS.Timeout | undefined;

      let zombieTimer: NodeJS.Timeout | undefined;
      let zombie = false;

      /** `fromTool`: the tool itself returned or threw (as opposed to a deadline or a cancel). */
      const settle = (result: AttemptResult, fromTool = false) => {
        if (settled) return;
        settled = true;
        clearTimeout(totalTimer);
        clearTimeout(idleTimer);
        clearTimeout(progressTimer);
        scope.signal.removeEventListener("abort", onCancel);
        callSignal?.removeEventListener("abort", onCancel);
        if (toolRunning && !fromTool) {
          // A cooperative tool settles right after its signal aborts; one still running after the
          // grace period ignored it and is tracked as a zombie until it settles (DESIGN.md §5.2).
          zombieTimer = setTimeout(() => {
            zombie = true;
            this.decide(scope, call, { kind: "zombie", state: "started" });
            hooks.onZombie?.(call, "started");
          }, ZOMBIE_GRACE_MS);
          zombieTimer.unref();
        }
        resolve(result);
      };
      const expire = (kind: "total" | "idle", limitMs: number) => {
        if (settled) return;
        const error = new ToolTimeoutError(call.name, limitMs, kind);
        controller.abort(error);
        this.decide(scope, call, { kind: "timeout", timeoutKind: kind, timeoutMs: limitMs });
        hooks.onTimeout?.(call, { kind, timeoutMs: limitMs });
        settle({
          status: "timeout",
          isError: true,
          result: timeoutResult(error),
          timeout: { kind, timeoutMs: limitMs },
          error,
        });
      };
      const armIdle = () => {
        if (idleTimeoutMs <= 0) return;
        clearTimeout(idleTimer);
        idleTimer = setTimeout(() => expire("idle", idleTimeoutMs), idleTimeoutMs);
      };
      const reportProgress = (delayMs: number) => {
        progressTimer = setTimeout(() => {
          if (settled) return;
          hooks.onProgress?.(call, { elapsedMs: this.now() - run.startedAt, message: lastMessage });
          reportProgress(this.settings.progressIntervalMs);
        }, delayMs);
      };
      const onCancel = () => {
        const reason = callSignal?.aborted && !scope.signal.aborted ? callSignal.reason : scope.signal.reason;
        controller.abort(reason);
        settle(this.cancelled(call, scope.signal, callSignal));
      };

      scope.signal.addEventListener("abort", onCancel, { once: true });
      callSignal?.addEventListener("abort", onCancel, { once: true });
      // aborted before the listeners were in place (e.g. by whoever observed tool_start): same outcome
      if (scope.signal.aborted || callSignal?.aborted) {
        onCancel();
        return;
      }
      if (timeoutMs > 0) totalTimer = setTimeout(() => expire("total", timeoutMs), timeoutMs);
      armIdle();
      reportProgress(this.settings.progressAfterMs);

      const context: ToolContext = {
        turnId: scope.turnId,
        sessionId: scope.sessionId,
        agentId: scope.agentId,
        callId: call.callId,
        toolName: call.name,
        workspace: scope.workspace,
        allowedRoots: scope.allowedRoots,
        depth: scope.depth,
        signal: controller.signal,
        services: scope.services,
        heartbeat: (message?: string) => {
          if (settled) return;
          if (message !== undefined) lastMessage = message;
          armIdle();
        },
      };
      // Deferred to a microtask so a tool that throws synchronously is handled like one that rejects;
      // a call cancelled in the tick it started never reaches the tool.
      Promise.resolve()
        .then(() => {
          if (settled) return undefined;
          toolRunning = true;
          return tool.execute(run.input, context);
        })
        .then(
          (value) => settle({ status: "complete", isError: false, result: stringifyToolOutput(value) }, true),
          (error: unknown) =>
            settle(
              {
                status: "error",
                isError: true,
                result: errorResult(call.name, errorMessage(error) ?? String(error)),
                error,
              },
              true,
            ),
        )
        .finally(() => {
          toolRunning = false;
          clearTimeout(zombieTimer);
          // A zombie has settled at last; its late result was dropped above (the attempt had ended).
          if (zombie) {
            this.decide(scope, call, { kind: "zombie", state: "settled" });
            hooks.onZombie?.(call, "settled");
          }
        });
    });
  }

  private cancelled(
    call: ToolCallRequest,
    turnSignal: AbortSignal,
    callSignal: AbortSignal | undefined,
  ): Partial_ {
    if (callSignal?.aborted && !turnSignal.aborted) {
      return { status: "cancelled", isError: true, result: TOOL_CANCELLED_RESULT };
    }
    return { status: "cancelled", isError: true, result: cancelledResult(abortReasonOf(turnSignal)) };
  }

  private decide(
    scope: CallScope,
    call: ToolCallRequest,
    decision: DistributiveOmit<Decision, "callId" | "toolName">,
  ): void {
    this.recorder.record(scope.turnId, { ...decision, callId: call.callId, toolName: call.name } as Decision);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** The fallback's outcome when there was one (attempts of both counted), else the call's own. */
function withFallback(
  fallback: { outcome: Partial_; attempts: number } | undefined,
  own: Partial_,
  attempts: number,
): { outcome: Partial_; attempts: number } {
  return fallback
    ? { outcome: fallback.outcome, attempts: attempts + fallback.attempts }
    : { outcome: own, attempts };
}

function failure(result: string, classification: Classification): Partial_ {
  return { status: "error", isError: true, result, classification };
}

function errorMessage(error: unknown): string | undefined {
  return error instanceof Error ? error.message : error === undefined ? undefined : String(error);
}

/** The reason recorded on a turn's signal; an abort without a `TurnAbortedError` counts as the user's. */
export function abortReasonOf(signal: AbortSignal): AbortReason {
  return signal.reason instanceof TurnAbortedError ? signal.reason.reason : "user";
}
