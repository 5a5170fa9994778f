/**
 * One attempt of a tool call (docs/semantics.md#timeouts): the tool runs under its wall-clock and idle
 * deadlines with progress reports, and the attempt settles at the first of completion, expiry or cancellation
 * — whether or not the tool honours its signal. Timers are created here only and cleared when the attempt
 * settles however it settles; abort listeners are removed then too, so nothing outlives the attempt but a
 * tool that ignored its signal, which becomes a tracked zombie after ZOMBIE_GRACE_MS.
 */
import type { ApprovalPolicy } from "../agents/approval-policy.js";
import type { ToolPolicy } from "../agents/tool-policy.js";
import { ToolTimeoutError, TurnAbortedError, withoutStack, type AbortReason } from "../errors.js";
import { withFields } from "../objects.js";
import type { Decision, DecisionRecorder } from "../observability/decision.js";
import {
  cancelledResult,
  errorResult,
  stringifyToolOutput,
  timeoutResult,
  TOOL_CANCELLED_RESULT,
} from "./results.js";
import { onAbort } from "./abort-fanout.js";
import type { CallCancellation } from "./call-cancellation.js";
import type { DeadlineTimers, ScheduledTimer } from "./deadline-timers.js";
import {
  cutLink,
  linkedContext,
  releaseLink,
  startTool,
  type LinkedAttempt,
  type ToolLink,
} from "./tool-link.js";
import type { ZombieRegistry } from "./zombie-registry.js";
import type {
  ToolCallHooks,
  ToolCallRequest,
  ToolContext,
  ToolDefinition,
  ToolOutcome,
  ToolServices,
} from "./types.js";

const doNothing = () => {};

/** How long a tool may keep running after its call closed before it counts as a zombie. */
export const ZOMBIE_GRACE_MS = 1_000;

/** The turn-level facts a call's context is made from. */
export type CallScope = Omit<ToolContext, "callId" | "toolName" | "signal" | "heartbeat" | "services"> & {
  signal: AbortSignal;
  services?: ToolServices;
  /** Where single calls are cancelled (cancel one tool); a cancel ends only that call. */
  cancellation?: CallCancellation;
  /**
   * The turn's agent's tool rules (docs/semantics.md#agents), which the runner enforces; none: every tool.
   */
  toolPolicy?: ToolPolicy;
  /**
   * Which tools' calls wait for a person (docs/semantics.md#approval); the runner never runs one of them as
   * another tool's fallback, since nobody approved that call. None: no call waits.
   */
  approvalPolicy?: ApprovalPolicy;
};

/** An outcome before the runner adds its duration and attempt count. */
export type PartialOutcome = Omit<ToolOutcome, "durationMs" | "attempts">;
export type AttemptResult = PartialOutcome & { error?: unknown };

/** Everything one call needs while it runs; built once per call. */
export type CallRun = {
  call: ToolCallRequest;
  tool: ToolDefinition;
  input: unknown;
  limits: { timeoutMs: number; idleTimeoutMs: number };
  scope: CallScope;
  hooks: ToolCallHooks;
  startedAt: number;
};

export type AttemptOptions = {
  now: () => number;
  /** Every call's deadlines and progress reports, on one timer. */
  timers: DeadlineTimers;
  progressAfterMs: number;
  progressIntervalMs: number;
  recorder: DecisionRecorder;
  /** Where tools still running after their call closed are tracked; the turn may be long gone by then. */
  zombies: Pick<ZombieRegistry, "add" | "remove">;
};

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** A decision about the attempt's call (its callId and toolName are added). */
export type CallDecision = DistributiveOmit<Decision, "callId" | "toolName">;

/** `decision` as recorded for `call`: with its callId and toolName. */
export function callDecision(call: ToolCallRequest, decision: CallDecision): Decision {
  return withFields(decision, { callId: call.callId, toolName: call.name }) as Decision;
}

/** One attempt under the call's deadlines; settles at the first of completion, expiry or cancel. */
export function runAttempt(run: CallRun, options: AttemptOptions): Promise<AttemptResult> {
  return new Promise<AttemptResult>((resolve) => new Attempt(run, options, resolve).start());
}

/**
 * The state of one attempt. A class with methods, not a scope of closures: a call makes one object,
 * and its timers, cancel listeners and tool link call back into it, where closures (a dozen per call)
 * were most of what a call allocated besides its result. The running tool reaches it only through its
 * link (`LinkedAttempt`), which is cut when the attempt ends without the tool and released when the tool
 * settles.
 */
class Attempt implements LinkedAttempt {
  private settled = false;
  private lastMessage: string | null = null;
  private totalTimer: ScheduledTimer | undefined;
  private idleTimer: ScheduledTimer | undefined;
  private progressTimer: ScheduledTimer | undefined;
  /** Removers of the attempt's cancel callbacks, on the turn's signal and on the call's cancellation. */
  private stopListeningToTurn = doNothing;
  private stopListeningToCall = doNothing;
  private readonly controller = new AbortController();
  /** Set when the tool's start is queued (it starts in a microtask, if the attempt is still open). */
  private link: ToolLink | undefined;
  /** The one callback for a cancel, by the turn or of this call alone. */
  private readonly onCancel = () => this.cancel();

  constructor(
    private readonly run: CallRun,
    private readonly options: AttemptOptions,
    private readonly resolve: (result: AttemptResult) => void,
  ) {}

  start(): void {
    const { call, scope } = this.run;
    const { cancellation } = scope;
    // aborted before the listeners would be in place (e.g. by whoever observed tool_start): same outcome
    if (scope.signal.aborted || cancellation?.isCancelled(call.callId)) {
      this.cancel();
      return;
    }
    this.stopListeningToTurn = onAbort(scope.signal, this.onCancel);
    if (cancellation) this.stopListeningToCall = cancellation.onCancel(call.callId, this.onCancel);
    const { timeoutMs } = this.run.limits;
    if (timeoutMs > 0) this.totalTimer = this.options.timers.schedule(timeoutMs, Attempt.expireTotal, this);
    this.armIdle();
    this.scheduleProgress(this.options.progressAfterMs);

    const link: ToolLink = { attempt: this, running: false, zombie: false, services: scope.services };
    this.link = link;
    const context = linkedContext(
      {
        turnId: scope.turnId,
        sessionId: scope.sessionId,
        agentId: scope.agentId,
        callId: call.callId,
        toolName: call.name,
        workspace: scope.workspace,
        allowedRoots: scope.allowedRoots,
        depth: scope.depth,
        controller: this.controller,
      },
      link,
    );
    startTool(this.run.tool, this.run.input, context, link);
  }

  get open(): boolean {
    return !this.settled;
  }

  onValue(value: unknown): void {
    this.settle({ status: "complete", isError: false, result: stringifyToolOutput(value) }, true);
  }

  onError(error: unknown): void {
    const result =
      ownResultOf(error) ?? errorResult(this.run.call.name, errorMessage(error) ?? String(error));
    this.settle({ status: "error", isError: true, result, error }, true);
  }

  heartbeat(message?: string): void {
    if (this.settled) return;
    if (message !== undefined) this.lastMessage = message;
    this.armIdle();
  }

  /** Ends the attempt's timers and listeners; true for the first caller only. */
  private claim(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.totalTimer?.cancel();
    this.idleTimer?.cancel();
    this.progressTimer?.cancel();
    this.stopListeningToTurn();
    this.stopListeningToCall();
    return true;
  }

  /** `fromTool`: the tool itself returned or threw (as opposed to a deadline or a cancel). */
  private settle(result: AttemptResult, fromTool: boolean): void {
    if (!this.claim()) return;
    // A cooperative tool settles right after its signal aborts; one still running after the grace
    // period ignored it and is tracked as a zombie until it settles (docs/semantics.md#cancellation).
    if (!fromTool) this.abandonTool();
    else if (this.link) releaseLink(this.link);
    this.resolve(result);
  }

  private cancel(): void {
    const { scope, call } = this.run;
    const { cancellation } = scope;
    const byCall = !scope.signal.aborted && cancellation?.isCancelled(call.callId) === true;
    this.controller.abort(byCall ? cancellation?.reasonOf(call.callId) : scope.signal.reason);
    this.settle(cancelledOutcome(scope, call.callId), false);
  }

  /**
   * A deadline fired: the attempt is over and `tool_timeout` says so at once; stopping the tool and
   * handing the outcome to the runner follow once every deadline due with this one has been told.
   */
  private expire(kind: "total" | "idle", limitMs: number): (() => void) | undefined {
    if (!this.claim()) return undefined;
    const { call, hooks } = this.run;
    hooks.onTimeout?.(call, { kind, timeoutMs: limitMs });
    return () => {
      const error = withoutStack(() => new ToolTimeoutError(call.name, limitMs, kind));
      this.controller.abort(error);
      this.record({ kind: "timeout", timeoutKind: kind, timeoutMs: limitMs });
      this.abandonTool();
      this.resolve({
        status: "timeout",
        isError: true,
        result: timeoutResult(error),
        timeout: { kind, timeoutMs: limitMs },
        error,
      });
    };
  }

  private static expireTotal(attempt: Attempt) {
    return attempt.expire("total", attempt.run.limits.timeoutMs);
  }

  private static expireIdle(attempt: Attempt) {
    return attempt.expire("idle", attempt.run.limits.idleTimeoutMs);
  }

  private armIdle(): void {
    const { idleTimeoutMs } = this.run.limits;
    if (idleTimeoutMs <= 0) return;
    this.idleTimer?.cancel();
    this.idleTimer = this.options.timers.schedule(idleTimeoutMs, Attempt.expireIdle, this);
  }

  private scheduleProgress(delayMs: number): void {
    this.progressTimer = this.options.timers.schedule(delayMs, Attempt.reportProgress, this);
  }

  private static reportProgress(attempt: Attempt): void {
    if (attempt.settled) return;
    const { call, hooks, startedAt } = attempt.run;
    hooks.onProgress?.(call, { elapsedMs: attempt.options.now() - startedAt, message: attempt.lastMessage });
    attempt.scheduleProgress(attempt.options.progressIntervalMs);
  }

  /** Cuts the tool's link (once its start was queued), as the attempt ends without it. */
  private abandonTool(): void {
    if (!this.link) return;
    const { scope, call } = this.run;
    cutLink(
      this.link,
      ZOMBIE_GRACE_MS,
      zombieBookkeeping(this.options, { turnId: scope.turnId, toolId: call.callId, toolName: call.name }),
    );
  }

  private record(decision: CallDecision): void {
    this.options.recorder.record(this.run.scope.turnId, callDecision(this.run.call, decision));
  }
}

/**
 * A zombie's decision and registry entry, made from its ids alone: never from its call, its hooks or
 * anything else that reaches its turn, which must be free to go while the tool runs on.
 */
function zombieBookkeeping(
  { recorder, zombies, now }: Pick<AttemptOptions, "recorder" | "zombies" | "now">,
  ids: { turnId: string; toolId: string; toolName: string },
): (state: "started" | "settled") => void {
  return (state) => {
    recorder.record(ids.turnId, { kind: "zombie", state, callId: ids.toolId, toolName: ids.toolName });
    if (state === "started") zombies.add({ ...ids, since: now() });
    else zombies.remove(ids.toolId);
  };
}

/** The result of a call cancelled by its turn (the reason's wording) or by itself alone. */
export function cancelledOutcome(
  scope: Pick<CallScope, "signal" | "cancellation">,
  callId: string,
): PartialOutcome {
  if (!scope.signal.aborted && scope.cancellation?.isCancelled(callId) === true) {
    return { status: "cancelled", isError: true, result: TOOL_CANCELLED_RESULT };
  }
  return { status: "cancelled", isError: true, result: cancelledResult(abortReasonOf(scope.signal)) };
}

/** The whole result text an error chose for the model (`[UNAVAILABLE] …` of an MCP server), if any. */
function ownResultOf(error: unknown): string | undefined {
  const result = (error as { toolResult?: unknown } | null | undefined)?.toolResult;
  return typeof result === "string" ? result : undefined;
}

export function errorMessage(error: unknown): string | undefined {
  return error instanceof Error ? error.message : error === undefined ? undefined : String(error);
}

/** The reason recorded on a turn's signal; an abort without a `TurnAbortedError` counts as the user's. */
export function abortReasonOf(signal: AbortSignal): AbortReason {
  return signal.reason instanceof TurnAbortedError ? signal.reason.reason : "user";
}
