/**
 * One attempt of a tool call (docs/semantics.md#timeouts): the tool runs under its wall-clock and idle
 * deadlines with progress reports, and the attempt settles at the first of completion, expiry or cancellation
 * — whether or not the tool honours its signal. Timers are created here only and cleared when the attempt
 * settles however it settles; abort listeners are removed then too, so nothing outlives the attempt but a
 * tool that ignored its signal, which becomes a tracked zombie after ZOMBIE_GRACE_MS.
 */
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
import { cutLink, linkedContext, startTool, type ToolLink } from "./tool-link.js";
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
  const { call, tool, scope, hooks } = run;
  const { cancellation } = scope;
  const { timeoutMs, idleTimeoutMs } = run.limits;
  const record = (decision: CallDecision) =>
    options.recorder.record(scope.turnId, callDecision(call, decision));
  return new Promise<AttemptResult>((resolve) => {
    const controller = new AbortController();
    let settled = false;
    /** Once the tool is started: cuts its link when the attempt ends without it. */
    let cutOnSettle = () => {};
    let lastMessage: string | null = null;
    let totalTimer: ScheduledTimer | undefined;
    let idleTimer: ScheduledTimer | undefined;
    let progressTimer: ScheduledTimer | undefined;
    /** Removers of the attempt's cancel callbacks, on the turn's signal and on the call's cancellation. */
    let stopListeningToTurn = doNothing;
    let stopListeningToCall = doNothing;

    /** Ends the attempt's timers and listeners; true for the first caller only. */
    const claim = (): boolean => {
      if (settled) return false;
      settled = true;
      totalTimer?.cancel();
      idleTimer?.cancel();
      progressTimer?.cancel();
      stopListeningToTurn();
      stopListeningToCall();
      return true;
    };
    /** `fromTool`: the tool itself returned or threw (as opposed to a deadline or a cancel). */
    const settle = (result: AttemptResult, fromTool = false) => {
      if (!claim()) return;
      // A cooperative tool settles right after its signal aborts; one still running after the grace
      // period ignored it and is tracked as a zombie until it settles (docs/semantics.md#cancellation).
      if (!fromTool) cutOnSettle();
      resolve(result);
    };
    /**
     * A deadline fired: the attempt is over and `tool_timeout` says so at once; stopping the tool and
     * handing the outcome to the runner follow once every deadline due with this one has been told.
     */
    const expire = (kind: "total" | "idle", limitMs: number) => {
      if (!claim()) return undefined;
      hooks.onTimeout?.(call, { kind, timeoutMs: limitMs });
      return () => {
        const error = withoutStack(() => new ToolTimeoutError(call.name, limitMs, kind));
        controller.abort(error);
        record({ kind: "timeout", timeoutKind: kind, timeoutMs: limitMs });
        cutOnSettle();
        resolve({
          status: "timeout",
          isError: true,
          result: timeoutResult(error),
          timeout: { kind, timeoutMs: limitMs },
          error,
        });
      };
    };
    const armIdle = () => {
      if (idleTimeoutMs <= 0) return;
      idleTimer?.cancel();
      idleTimer = options.timers.schedule(idleTimeoutMs, () => expire("idle", idleTimeoutMs));
    };
    const reportProgress = (delayMs: number) => {
      progressTimer = options.timers.schedule(delayMs, () => {
        if (settled) return;
        hooks.onProgress?.(call, { elapsedMs: options.now() - run.startedAt, message: lastMessage });
        reportProgress(options.progressIntervalMs);
      });
    };
    const onCancel = () => {
      const byCall = !scope.signal.aborted && cancellation?.isCancelled(call.callId) === true;
      controller.abort(byCall ? cancellation?.reasonOf(call.callId) : scope.signal.reason);
      settle(cancelledOutcome(scope, call.callId));
    };

    // aborted before the listeners would be in place (e.g. by whoever observed tool_start): same outcome
    if (scope.signal.aborted || cancellation?.isCancelled(call.callId)) {
      onCancel();
      return;
    }
    stopListeningToTurn = onAbort(scope.signal, onCancel);
    if (cancellation) stopListeningToCall = cancellation.onCancel(call.callId, onCancel);
    if (timeoutMs > 0) totalTimer = options.timers.schedule(timeoutMs, () => expire("total", timeoutMs));
    armIdle();
    reportProgress(options.progressAfterMs);

    const link: ToolLink = {
      running: false,
      zombie: false,
      services: scope.services,
      heartbeat: (message?: string) => {
        if (settled) return;
        if (message !== undefined) lastMessage = message;
        armIdle();
      },
      onValue: (value) =>
        settle({ status: "complete", isError: false, result: stringifyToolOutput(value) }, true),
      onError: (error) =>
        settle(
          {
            status: "error",
            isError: true,
            result: ownResultOf(error) ?? errorResult(call.name, errorMessage(error) ?? String(error)),
            error,
          },
          true,
        ),
    };
    cutOnSettle = () =>
      cutLink(
        link,
        ZOMBIE_GRACE_MS,
        zombieBookkeeping(options, { turnId: scope.turnId, toolId: call.callId, toolName: call.name }),
      );
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
        controller,
      },
      link,
    );
    startTool(tool, run.input, context, link, () => !settled);
  });
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
