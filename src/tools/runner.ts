/**
 * The tool runner (DESIGN.md §5.1): runs one call under its wall-clock and idle deadlines, emits
 * progress, and guarantees the framework stops waiting the moment a deadline passes or the turn is
 * aborted — whether or not the tool honours its signal. `run` never rejects.
 *
 * Timers are created here only, cleared when the call settles however it settles, and the abort
 * listener on the turn's signal is removed then too, so nothing outlives the call.
 */
import { TurnAbortedError, ToolTimeoutError, type AbortReason } from "../errors.js";
import { resolveCall, type LimitSettings } from "./limits.js";
import type { ToolRegistry } from "./registry.js";
import { cancelledResult, errorResult, stringifyToolOutput, timeoutResult } from "./results.js";
import type { ToolCallHooks, ToolCallRequest, ToolContext, ToolOutcome } from "./types.js";

export type RunnerSettings = LimitSettings & { progressAfterMs: number; progressIntervalMs: number };

export type RunnerDeps = { now?: () => number; warn?: (message: string) => void };

/** The turn-level facts a call's context is made from. */
export type CallScope = Omit<ToolContext, "callId" | "toolName" | "signal" | "heartbeat"> & {
  signal: AbortSignal;
};

export class ToolRunner {
  private readonly now: () => number;
  private readonly warn: (message: string) => void;

  constructor(
    private readonly registry: ToolRegistry,
    private readonly settings: RunnerSettings,
    deps: RunnerDeps = {},
  ) {
    this.now = deps.now ?? Date.now;
    this.warn = deps.warn ?? (() => {});
  }

  /** Runs `call` to an outcome: complete, error, timeout or cancelled. */
  async run(call: ToolCallRequest, scope: CallScope, hooks: ToolCallHooks = {}): Promise<ToolOutcome> {
    const startedAt = this.now();
    const tool = this.registry.get(call.name);
    const resolved = resolveCall(tool, call.input, this.settings);
    for (const warning of resolved.warnings) this.warn(`${call.name} (${call.callId}): ${warning}`);
    hooks.onStart?.(call, resolved.limits);
    const finish = (outcome: Omit<ToolOutcome, "durationMs" | "attempts">): ToolOutcome => ({
      ...outcome,
      durationMs: this.now() - startedAt,
      attempts: outcome.status === "cancelled" ? 0 : 1,
    });

    if (scope.signal.aborted) return finish(cancelled(scope.signal));
    if (!tool) {
      return finish({
        status: "error",
        isError: true,
        result: errorResult(call.name, `unknown tool "${call.name}".`),
      });
    }
    const parsed = tool.inputSchema.safeParse(resolved.input);
    if (!parsed.success) {
      const detail = parsed.error.issues.map(
        (issue) => `${issue.path.join(".") || "input"}: ${issue.message}`,
      );
      return finish({
        status: "error",
        isError: true,
        result: errorResult(call.name, `invalid input (${detail.join("; ")}).`),
      });
    }

    return new Promise<ToolOutcome>((resolve) => {
      const controller = new AbortController();
      const { timeoutMs, idleTimeoutMs } = resolved.limits;
      let settled = false;
      let lastMessage: string | null = null;
      let totalTimer: NodeJS.Timeout | undefined;
      let idleTimer: NodeJS.Timeout | undefined;
      let progressTimer: NodeJS.Timeout | undefined;

      const settle = (outcome: Omit<ToolOutcome, "durationMs" | "attempts">) => {
        if (settled) return;
        settled = true;
        clearTimeout(totalTimer);
        clearTimeout(idleTimer);
        clearTimeout(progressTimer);
        scope.signal.removeEventListener("abort", onTurnAbort);
        resolve(finish(outcome));
      };
      const expire = (kind: "total" | "idle", limitMs: number) => {
        if (settled) return;
        const error = new ToolTimeoutError(call.name, limitMs, kind);
        controller.abort(error);
        hooks.onTimeout?.(call, { kind, timeoutMs: limitMs });
        settle({
          status: "timeout",
          isError: true,
          result: timeoutResult(error),
          timeout: { kind, timeoutMs: limitMs },
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
          hooks.onProgress?.(call, { elapsedMs: this.now() - startedAt, message: lastMessage });
          reportProgress(this.settings.progressIntervalMs);
        }, delayMs);
      };
      function onTurnAbort() {
        controller.abort(scope.signal.reason);
        settle(cancelled(scope.signal));
      }

      scope.signal.addEventListener("abort", onTurnAbort, { once: true });
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
        heartbeat: (message?: string) => {
          if (settled) return;
          if (message !== undefined) lastMessage = message;
          armIdle();
        },
      };
      // Deferred to a microtask so a tool that throws synchronously is handled like one that rejects.
      // A call cancelled in the tick it started never reaches the tool.
      Promise.resolve()
        .then(() => (settled ? undefined : tool.execute(parsed.data, context)))
        .then(
          (value) => settle({ status: "complete", isError: false, result: stringifyToolOutput(value) }),
          (error: unknown) =>
            settle({
              status: "error",
              isError: true,
              result: errorResult(call.name, error instanceof Error ? error.message : String(error)),
            }),
        );
    });
  }
}

function cancelled(signal: AbortSignal): Omit<ToolOutcome, "durationMs" | "attempts"> {
  return { status: "cancelled", isError: true, result: cancelledResult(abortReasonOf(signal)) };
}

/** The reason recorded on a turn's signal; an abort without a `TurnAbortedError` counts as the user's. */
export function abortReasonOf(signal: AbortSignal): AbortReason {
  return signal.reason instanceof TurnAbortedError ? signal.reason.reason : "user";
}
