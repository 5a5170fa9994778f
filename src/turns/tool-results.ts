/**
 * The one place a tool call's result is published: stored in history (once per call — a second
 * result for the same call is refused and reported as discarded), counted in metrics, taken off the
 * turn's running calls, and announced as `tool_result`. Real results from the runner, rejections by
 * a person (status `rejected`), the closing results of an abort or a deadline, and refused calls all
 * come through here, so every call ends the same way.
 */
import { EVENT_RESULT_MAX_CHARS, type EventBody } from "../events.js";
import type { ToolResponseStatus } from "../history/model.js";
import type { HistoryStore } from "../history/store.js";
import { editedInputNote } from "./approval-gate.js";
import type { RunningCall } from "./turn-run.js";

export type PublishedCall = { callId: string; name: string };

export type PublishedOutcome = {
  status: Exclude<ToolResponseStatus, "interrupted">;
  result: string;
  isError: boolean;
  /** Measured by the runner; for a call closed from outside, the time since it started. */
  durationMs?: number;
  /** Attempts made; for a call closed from outside, the attempts it had started. */
  attempts?: number;
};

export type ToolResultTarget = {
  store: Pick<HistoryStore, "recordToolResult">;
  sessionId: string;
  turnId: string;
  runningCalls: Map<string, RunningCall>;
  emit: (body: EventBody) => void;
  now: () => number;
};

export type ToolResultObservers = {
  /** Every stored outcome (metrics). */
  onCallEnded?: (call: PublishedCall, status: string) => void;
  /** A late result of a call that already had one (a zombie's, or the runner's own after an abort). */
  onDiscarded?: (call: PublishedCall, status: string) => void;
};

/**
 * Publishes one call's result; false (nothing stored or sent) when the call already has one.
 * A call that ran with an input a person edited gets the `[EDITED]` note first, however it ended;
 * `appendix` (a loop warning) is added at the end.
 */
export function publishToolResult(
  target: ToolResultTarget,
  observers: ToolResultObservers,
  call: PublishedCall,
  outcome: PublishedOutcome,
  appendix?: string,
): boolean {
  const running = target.runningCalls.get(call.callId);
  let result = outcome.result;
  // the stored call keeps the model's input: the result of one that ran with a person's edit says what ran
  if (running?.editedInput) result = `${editedInputNote(running.editedInput)}\n\n${result}`;
  if (appendix) result = `${result}\n\n${appendix}`;
  const stored = target.store.recordToolResult(target.sessionId, target.turnId, {
    kind: "tool_response",
    role: "tool",
    callId: call.callId,
    name: call.name,
    status: outcome.status,
    result,
    isError: outcome.isError,
  });
  if (!stored) {
    observers.onDiscarded?.(call, outcome.status);
    return false;
  }
  target.runningCalls.delete(call.callId);
  observers.onCallEnded?.(call, outcome.status);
  target.emit({
    type: "tool_result",
    toolId: call.callId,
    toolName: call.name,
    result: result.length > EVENT_RESULT_MAX_CHARS ? result.slice(0, EVENT_RESULT_MAX_CHARS) : result,
    isError: outcome.isError,
    status: outcome.status,
    durationMs: outcome.durationMs ?? (running ? target.now() - running.startedAt : 0),
    attempts: outcome.attempts ?? running?.attempts ?? 0,
  });
  return true;
}
