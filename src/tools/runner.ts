/**
 * The tool runner (docs/semantics.md#timeouts, docs/semantics.md#resilience): runs one call to an outcome —
 * resolving its limits and input, then attempts (attempt.ts: deadlines, progress, cancellation) wrapped in
 * the tool's circuit breaker, classification of every failure, retries of transient ones with backoff, and
 * the tool's fallback. Every decision goes to the DecisionRecorder. `run` never rejects.
 *
 * The one place a turn's agent's tool rules are enforced (docs/semantics.md#agents): a tool the agent may not
 * use is an unknown tool (and is never a fallback), and the agent's per-tool limits apply over the
 * configured overrides.
 */
import { withFields } from "../objects.js";
import {
  callDecision,
  cancelledOutcome,
  errorMessage,
  runAttempt,
  type AttemptOptions,
  type CallDecision,
  type CallRun,
  type CallScope,
  type PartialOutcome,
} from "./attempt.js";
import { DeadlineTimers } from "./deadline-timers.js";
import { NO_DECISIONS, type DecisionRecorder } from "../observability/decision.js";
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
import { circuitOpenResult, errorResult, fallbackResult } from "./results.js";
import type { ToolCallHooks, ToolCallRequest, ToolOutcome } from "./types.js";
import { ZombieRegistry } from "./zombie-registry.js";

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
  /** Where zombies are tracked; none: a registry of the runner's own. */
  zombies?: ZombieRegistry;
  /** Every call's deadlines; none: timers of the runner's own. */
  timers?: DeadlineTimers;
};

export { abortReasonOf, ZOMBIE_GRACE_MS, type CallScope } from "./attempt.js";

export class ToolRunner {
  readonly breakers: BreakerRegistry;
  /** Tools still running after their call closed (docs/semantics.md#cancellation). */
  readonly zombies: ZombieRegistry;
  private readonly now: () => number;
  private readonly warn: (message: string) => void;
  private readonly recorder: DecisionRecorder;
  private readonly random: () => number;
  private readonly attemptOptions: AttemptOptions;

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
    this.zombies = deps.zombies ?? new ZombieRegistry();
    this.attemptOptions = {
      now: this.now,
      timers: deps.timers ?? new DeadlineTimers(),
      progressAfterMs: settings.progressAfterMs,
      progressIntervalMs: settings.progressIntervalMs,
      recorder: this.recorder,
      zombies: this.zombies,
    };
  }

  /** Runs `call` to an outcome: complete, error, timeout or cancelled. */
  async run(call: ToolCallRequest, scope: CallScope, hooks: ToolCallHooks = {}): Promise<ToolOutcome> {
    const startedAt = this.now();
    const tool = this.allowedTool(call.name, scope);
    const resolved = resolveCall(tool, call.input, this.limitSettings(scope));
    for (const warning of resolved.warnings) this.warn(`${call.name} (${call.callId}): ${warning}`);
    const finish = (outcome: PartialOutcome, attempts: number): ToolOutcome =>
      withFields(outcome, { durationMs: this.now() - startedAt, attempts });

    // a call cancelled before it started has no tool_start (its turn or deadline closed it already)
    if (scope.signal.aborted || scope.cancellation?.isCancelled(call.callId)) {
      return finish(cancelledOutcome(scope, call.callId), 0);
    }
    hooks.onStart?.(call, resolved.limits, resolved.input);
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
  ): Promise<{ outcome: PartialOutcome; attempts: number }> {
    const { call, tool, scope } = run;
    /** Made at the call's first failure: a call that succeeds never needs it. */
    let policy: RetryPolicy | undefined;
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
      const attempt = await runAttempt(run, this.attemptOptions);
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
      const failed: PartialOutcome = {
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
      policy ??= this.retryPolicy(run);
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
      const callSignal = scope.cancellation?.signal(call.callId);
      if (!(await abortableDelay(decision.delayMs, [scope.signal, callSignal]))) {
        return { outcome: cancelledOutcome(scope, call.callId), attempts };
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
  ): Promise<{ outcome: PartialOutcome; attempts: number } | undefined> {
    const settings = this.limitSettings(run.scope);
    const name = settings.overrides[run.tool.name]?.fallback ?? run.tool.fallback;
    const fallbackTool = name === undefined ? undefined : this.allowedTool(name, run.scope);
    if (!fallbackTool || fallbackTool.name === run.tool.name) return undefined;
    if (run.scope.approvalPolicy?.(fallbackTool.name) === "always") {
      this.warn(`fallback "${fallbackTool.name}" of "${run.tool.name}" needs a person's approval; not used`);
      return undefined;
    }
    const parsed = fallbackTool.inputSchema.safeParse(run.input);
    if (!parsed.success) {
      this.warn(`fallback "${fallbackTool.name}" of "${run.tool.name}" does not accept its input; not used`);
      return undefined;
    }
    this.decide(run.scope, run.call, { kind: "fallback", fallback: fallbackTool.name, because });
    const call = { ...run.call, name: fallbackTool.name };
    const { limits } = resolveCall(fallbackTool, run.call.input, settings);
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

  /** The call's retry policy: the defaults, then the settings', the tool's and its override's fields. */
  private retryPolicy({ tool, scope }: CallRun): RetryPolicy {
    // Object.assign, not a literal of spreads: that would make a hidden class per call (src/objects.ts)
    return Object.assign(
      {},
      DEFAULT_RETRY_POLICY,
      this.settings.retry,
      tool.retry,
      this.limitSettings(scope).overrides[tool.name]?.retry,
    );
  }

  /** The tool `name` names, if the turn's agent may use it (else it is as unknown as a missing one). */
  private allowedTool(name: string, scope: CallScope) {
    if (scope.toolPolicy && !scope.toolPolicy.allowsTool(name)) return undefined;
    return this.registry.get(name);
  }

  /** The limit settings of a call: the agent's per-tool overrides, already merged over the global ones. */
  private limitSettings(scope: CallScope): LimitSettings {
    const overrides = scope.toolPolicy?.toolOverrides;
    return overrides ? withFields(this.settings, { overrides }) : this.settings;
  }

  private decide(scope: CallScope, call: ToolCallRequest, decision: CallDecision): void {
    this.recorder.record(scope.turnId, callDecision(call, decision));
  }
}

/** The fallback's outcome when there was one (attempts of both counted), else the call's own. */
function withFallback(
  fallback: { outcome: PartialOutcome; attempts: number } | undefined,
  own: PartialOutcome,
  attempts: number,
): { outcome: PartialOutcome; attempts: number } {
  return fallback
    ? { outcome: fallback.outcome, attempts: attempts + fallback.attempts }
    : { outcome: own, attempts };
}

function failure(result: string, classification: Classification): PartialOutcome {
  return { status: "error", isError: true, result, classification };
}
