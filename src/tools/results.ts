/**
 * The exact wording of synthetic results. The model reads these, so each says what happened and what
 * it can do next; clients and tests match on their prefixes (`[TIMEOUT]`, `[CANCELLED]`, …).
 */
import { formatSeconds, type AbortReason, type ToolTimeoutError } from "../errors.js";

const CANCEL_WORDING: Record<AbortReason, string> = {
  user: "Turn aborted by user.",
  timeout: "Turn timed out.",
  error: "Turn aborted after an error.",
  disconnect: "Turn aborted: the client disconnected.",
  shutdown: "Turn aborted: the server is shutting down.",
  // the parent was aborted, or its delegate call was cancelled or timed out
  parent: "Turn aborted: its parent turn stopped waiting for it.",
  loop: "Turn stopped: the same tool call was repeated too often.",
  interrupted: "Turn interrupted by a server restart.",
  limit: "Turn stopped: it reached its limit of events.",
};

export function cancelledResult(reason: AbortReason): string {
  return `[CANCELLED] ${CANCEL_WORDING[reason]}`;
}

export const TOOL_CANCELLED_RESULT = "[CANCELLED] Tool cancelled by user.";

export function circuitOpenResult(toolName: string, retryAfterMs: number): string {
  const when =
    retryAfterMs > 0 ? `for about ${Math.ceil(retryAfterMs / 1000)}s more` : "until a probe call succeeds";
  return `[CIRCUIT_OPEN] Tool "${toolName}" has failed repeatedly and is refusing calls ${when}. Use another tool or answer with what you have.`;
}

export function fallbackResult(
  primary: string,
  because: string,
  fallback: string,
  outcome: { isError: boolean; result: string },
): string {
  return outcome.isError
    ? `[FALLBACK] Tool "${primary}" ${because}; its fallback "${fallback}" failed too: ${outcome.result}`
    : `[FALLBACK] Tool "${primary}" ${because}; "${fallback}" answered instead: ${outcome.result}`;
}

export function skippedResult(toolName: string, dependency: number, dependencyName: string): string {
  return `[SKIPPED] Tool "${toolName}" was not run because call #${dependency} ("${dependencyName}") of this batch failed.`;
}

export function defaultResult(dependency: number, dependencyName: string, value: unknown): string {
  return `[DEFAULT] Call #${dependency} ("${dependencyName}") of this batch failed, so this call was not run and answers with its declared default: ${stringifyToolOutput(value)}`;
}

export function loopWarning(repeats: number, stopAt: number): string {
  return `[LOOP WARNING] This exact call (same tool, same input) has now been made ${repeats} times in this turn. Change approach: at ${stopAt} repeats the turn is stopped.`;
}

export function turnDeadlineResult(toolName: string, timeoutMs: number): string {
  return `[TIMEOUT] Tool "${toolName}" was stopped: the turn reached its time limit of ${formatSeconds(timeoutMs)}s. Answer with the results you have.`;
}

export function interruptedResult(toolName: string): string {
  return `[INTERRUPTED] Tool "${toolName}" was interrupted by a server restart before it returned; its outcome is unknown.`;
}

export function timeoutResult(error: ToolTimeoutError): string {
  const hint =
    error.kind === "total"
      ? "The call was stopped. Try a smaller or faster request, or pass _meta.timeout (ms) to ask for a longer limit."
      : "The call stopped reporting progress and was stopped. Try again, or a smaller request.";
  return `[TIMEOUT] ${error.message} ${hint}`;
}

export function errorResult(toolName: string, message: string): string {
  return `[ERROR] Tool "${toolName}" failed: ${message}`;
}

/** Converts what a tool returned into the text the model sees. */
export function stringifyToolOutput(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
