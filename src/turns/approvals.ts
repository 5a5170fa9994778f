/**
 * Tool approval (docs/semantics.md#approval): the calls waiting for a person's decision. A wait announces
 * itself with `tool_approval_request` and ends with the first of: a decision (`approve`, possibly with an
 * edited input checked against the tool's schema, or `reject`), its deadline (`APPROVAL_TIMEOUT_MS`:
 * rejected, `approval timed out`), or one of its signals (the turn's abort or deadline, the call's own
 * cancel: `cancelled`). Every wait removes its timer and listeners however it ends, so nothing outlives its
 * turn.
 */
import type { EventBody } from "../events.js";

/** What a call that needed approval does next. */
export type ApprovalVerdict =
  | { decision: "approve"; input: Record<string, unknown>; edited: boolean }
  | { decision: "reject"; reason: string }
  | { decision: "cancelled" };

/** A person's decision, as `POST /api/turns/:id/tools/:toolId/approval` carries it. */
export type ApprovalDecision = {
  decision: "approve" | "reject";
  /** Replaces the call's input (approve only). */
  input?: Record<string, unknown>;
  reason?: string;
};

/** Why a decision was not taken: the call is not waiting, or the edited input is invalid. */
export type DecideOutcome =
  | { accepted: true }
  | { accepted: false; problem: "not_waiting" }
  | { accepted: false; problem: "invalid_input"; message: string };

/** One waiting call, as `/api/turns/active` lists it. */
export type PendingApproval = {
  toolId: string;
  toolName: string;
  input: Record<string, unknown>;
  requestedAt: number;
  /** Epoch ms at which the call is rejected unless decided. */
  deadlineMs: number;
};

export type ApprovalRequest = {
  turnId: string;
  toolId: string;
  toolName: string;
  input: Record<string, unknown>;
  /** Checks an edited input against the tool's schema: a message naming the field, or undefined. */
  validate: (input: Record<string, unknown>) => string | undefined;
  /** Any of them aborted ends the wait as `cancelled`. */
  signals: readonly (AbortSignal | undefined)[];
  emit: (body: EventBody) => void;
};

/** The reason of a rejection nobody gave one for, and of a wait that ran out of time. */
export const DEFAULT_REJECT_REASON = "Rejected by the user.";
export const APPROVAL_TIMED_OUT_REASON = "approval timed out";

type Waiting = PendingApproval & {
  turnId: string;
  validate: ApprovalRequest["validate"];
  settle: (verdict: ApprovalVerdict) => void;
  emit: ApprovalRequest["emit"];
};

export class ApprovalRegistry {
  private readonly waiting = new Map<string, Waiting>();

  constructor(
    private readonly settings: { timeoutMs: number },
    private readonly deps: { now: () => number } = { now: Date.now },
  ) {}

  /** Waits for the decision on one call; never rejects. An already-aborted signal: `cancelled` at once. */
  wait(request: ApprovalRequest): Promise<ApprovalVerdict> {
    const signals = request.signals.filter((signal): signal is AbortSignal => signal !== undefined);
    if (signals.some((signal) => signal.aborted)) return Promise.resolve({ decision: "cancelled" });
    const requestedAt = this.deps.now();
    const deadlineMs = requestedAt + this.settings.timeoutMs;
    const { toolId, toolName, input } = request;
    return new Promise<ApprovalVerdict>((resolve) => {
      const settle = (verdict: ApprovalVerdict) => {
        if (this.waiting.get(toolId) !== entry) return;
        this.waiting.delete(toolId);
        clearTimeout(timer);
        for (const signal of signals) signal.removeEventListener("abort", onAbort);
        resolve(verdict);
      };
      const onAbort = () => settle({ decision: "cancelled" });
      const timer = setTimeout(() => {
        request.emit({
          type: "tool_approval",
          toolId,
          toolName,
          decision: "reject",
          edited: false,
          reason: APPROVAL_TIMED_OUT_REASON,
        });
        settle({ decision: "reject", reason: APPROVAL_TIMED_OUT_REASON });
      }, this.settings.timeoutMs);
      const entry: Waiting = {
        toolId,
        toolName,
        input,
        requestedAt,
        deadlineMs,
        turnId: request.turnId,
        validate: request.validate,
        settle,
        emit: request.emit,
      };
      this.waiting.set(toolId, entry);
      for (const signal of signals) signal.addEventListener("abort", onAbort, { once: true });
      request.emit({ type: "tool_approval_request", toolId, toolName, input, deadlineMs });
    });
  }

  /**
   * Applies a person's decision to call `toolId` of turn `turnId`. An invalid edited input is refused
   * and the call keeps waiting.
   */
  decide(turnId: string, toolId: string, decision: ApprovalDecision): DecideOutcome {
    const entry = this.waiting.get(toolId);
    if (!entry || entry.turnId !== turnId) return { accepted: false, problem: "not_waiting" };
    if (decision.decision === "reject") {
      const reason = decision.reason?.trim() || DEFAULT_REJECT_REASON;
      entry.emit({
        type: "tool_approval",
        toolId,
        toolName: entry.toolName,
        decision: "reject",
        edited: false,
        reason,
      });
      entry.settle({ decision: "reject", reason });
      return { accepted: true };
    }
    const edited = decision.input !== undefined;
    if (decision.input !== undefined) {
      const problem = entry.validate(decision.input);
      if (problem !== undefined) return { accepted: false, problem: "invalid_input", message: problem };
    }
    entry.emit({ type: "tool_approval", toolId, toolName: entry.toolName, decision: "approve", edited });
    entry.settle({ decision: "approve", input: decision.input ?? entry.input, edited });
    return { accepted: true };
  }

  /** The turn whose call `toolId` waits for a decision, if one does. */
  turnOf(toolId: string): string | undefined {
    return this.waiting.get(toolId)?.turnId;
  }

  /** The calls of `turnId` waiting for a decision, oldest first. */
  pendingOf(turnId: string): PendingApproval[] {
    const pending: PendingApproval[] = [];
    for (const entry of this.waiting.values()) {
      if (entry.turnId !== turnId) continue;
      const { toolId, toolName, input, requestedAt, deadlineMs } = entry;
      pending.push({ toolId, toolName, input, requestedAt, deadlineMs });
    }
    return pending;
  }

  get size(): number {
    return this.waiting.size;
  }
}
