/**
 * The exact wording of synthetic results. The model reads these, so each says what happened and what
 * it can do next; clients and tests match on their prefixes (`[TIMEOUT]`, `[CANCELLED]`, …).
 */
import type { AbortReason, ToolTimeoutError } from "../errors.js";

const CANCEL_WORDING: Record<AbortReason, string> = {
  user: "Turn aborted by user.",
  timeout: "Turn timed out.",
  error: "Turn aborted after an error.",
  disconnect: "Turn aborted: the client disconnected.",
  shutdown: "Turn aborted: the server is shutting down.",
  parent: "Turn aborted: its parent turn was aborted.",
  loop: "Turn stopped: the same tool call was repeated too often.",
  interrupted: "Turn interrupted by a server restart.",
};

export function cancelledResult(reason: AbortReason): string {
  return `[CANCELLED] ${CANCEL_WORDING[reason]}`;
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
