/**
 * Error classification (docs/semantics.md#resilience): transient (timeouts, network errors, 429, 5xx
 * overload, connection reset) or permanent (invalid input, 400, 401/403, 404, unknown tool, schema failure).
 * Unknown errors are transient. A tool may override with its own classifier; an explicit classification on a
 * ToolError wins over codes and statuses.
 */
import { ZodError } from "zod";
import { ToolTimeoutError } from "../../errors.js";
import { ToolError, type Classification } from "./tool-error.js";

export type Classifier = (error: unknown) => Classification | undefined;

export type ClassificationResult = { classification: Classification; basis: string };

const TRANSIENT_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "EBUSY",
  "EMFILE",
  "ENFILE",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);
const PERMANENT_CODES = new Set([
  "ENOENT",
  "EACCES",
  "EPERM",
  "EISDIR",
  "ENOTDIR",
  "EINVAL",
  "ENOTFOUND",
  "ERR_INVALID_URL",
]);
const TRANSIENT_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504]);

/** Classifies `error`; `override` (the tool's own classifier) is asked first. */
export function classifyError(error: unknown, override?: Classifier): ClassificationResult {
  const overridden = override?.(error);
  if (overridden) return { classification: overridden, basis: "tool classifier" };
  if (error instanceof ToolError && error.classification) {
    return { classification: error.classification, basis: "declared by the tool" };
  }
  if (error instanceof ToolTimeoutError)
    return { classification: "transient", basis: `timeout (${error.kind})` };
  if (error instanceof ZodError) return { classification: "permanent", basis: "schema validation failed" };

  const status = numberProperty(error, "status") ?? numberProperty(error, "statusCode");
  if (status !== undefined) {
    if (TRANSIENT_STATUSES.has(status)) return { classification: "transient", basis: `HTTP ${status}` };
    if (status >= 400 && status < 500) return { classification: "permanent", basis: `HTTP ${status}` };
    if (status >= 500) return { classification: "transient", basis: `HTTP ${status}` };
  }
  const code = stringProperty(error, "errorCode") ?? stringProperty(error, "code") ?? causeCode(error);
  if (code !== undefined) {
    if (TRANSIENT_CODES.has(code)) return { classification: "transient", basis: `code ${code}` };
    if (PERMANENT_CODES.has(code)) return { classification: "permanent", basis: `code ${code}` };
  }
  if (error instanceof TypeError && /fetch failed|network/i.test(error.message)) {
    return { classification: "transient", basis: "network error" };
  }
  return { classification: "transient", basis: "unknown error (transient by default)" };
}

function numberProperty(value: unknown, key: string): number | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const property = (value as Record<string, unknown>)[key];
  return typeof property === "number" ? property : undefined;
}

function stringProperty(value: unknown, key: string): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const property = (value as Record<string, unknown>)[key];
  return typeof property === "string" ? property : undefined;
}

/** Node's fetch wraps socket errors: `TypeError("fetch failed", { cause: { code } })`. */
function causeCode(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  return stringProperty(error.cause, "code");
}
