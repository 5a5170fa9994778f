/**
 * A Decision is something the framework decided about a call or a turn, with its reason: the unit of
 * the turn trace (`GET /api/turns/:id/trace`) and of the resilience metrics. Producers report them to
 * a `DecisionRecorder`; they never write the trace or touch metrics themselves.
 */
import type { AbortReason } from "../errors.js";
import type { Classification } from "../tools/resilience/tool-error.js";
import type { BreakerState } from "../tools/resilience/circuit-breaker.js";

type CallRef = { callId: string; toolName: string };

export type Decision =
  | (CallRef & { kind: "classification"; classification: Classification; basis: string; error: string })
  | (CallRef & {
      kind: "retry";
      attempt: number;
      delayMs: number;
      error: string;
      classification: Classification;
    })
  | (CallRef & { kind: "retry_stopped"; attempts: number; reason: string })
  | (CallRef & { kind: "retry_succeeded"; attempts: number })
  | { kind: "breaker_transition"; toolName: string; from: BreakerState; to: BreakerState; callId?: string }
  | (CallRef & { kind: "breaker_rejected"; state: BreakerState; retryAfterMs: number })
  | (CallRef & { kind: "timeout"; timeoutKind: "total" | "idle"; timeoutMs: number })
  | (CallRef & { kind: "tool_cancelled"; by: "user" })
  | (CallRef & { kind: "fallback"; fallback: string; because: string })
  | (CallRef & { kind: "skipped"; dependency: number; usedDefault: boolean })
  | (CallRef & { kind: "zombie"; state: "started" | "settled" | "abandoned" })
  | (CallRef & { kind: "loop"; repeats: number; action: "warn" | "stop" })
  | { kind: "turn_deadline"; timeoutMs: number; closedCalls: number }
  | { kind: "abort"; reason: AbortReason; closedCalls: number }
  | { kind: "child_turn"; childTurnId: string; agentId: string; callId: string }
  | { kind: "model_retry"; provider: string; attempt: number; delayMs: number; error: string }
  | {
      kind: "model_error";
      provider: string;
      status: number | null;
      classification: Classification;
      error: string;
    };

export type DecisionKind = Decision["kind"];

export type TraceEntry = { turnId: string; seq: number; at: number } & Decision;

/** Where decisions go. `turnId` is the turn the decision was made in. */
export interface DecisionRecorder {
  record(turnId: string, decision: Decision): void;
}

/** A recorder that drops everything (for programs that want neither trace nor metrics). */
export const NO_DECISIONS: DecisionRecorder = { record: () => {} };
