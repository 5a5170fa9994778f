/**
 * HTTP errors and their mapping. Internal errors keep their own codes; `toHttpError` decides which of
 * them are client mistakes (4xx) and hides everything else behind a 500 without details.
 */
import { ReinsError } from "../errors.js";

export class HttpError extends Error {
  constructor(
    readonly status: 400 | 401 | 404 | 409 | 413 | 415 | 429 | 503,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    /** Response headers that belong to the error (`Retry-After`, `Connection: close`). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * How long a client refused for a per-principal limit should wait before trying again. Turns and
 * streams free their place when a turn ends, which takes seconds to minutes; 5 s lets a polite client
 * retry soon without hammering the server.
 */
export const RETRY_AFTER_SECONDS = 5;
const RETRY_AFTER_HEADER: Readonly<Record<string, string>> = { "Retry-After": String(RETRY_AFTER_SECONDS) };

const STATUS_BY_CODE: Record<string, HttpError["status"]> = {
  session_not_found: 404,
  session_busy: 409,
  unknown_provider: 400,
  agent_not_found: 400,
  agent_mismatch: 409,
  blank_message: 400,
  shutting_down: 503,
  store_unavailable: 503,
};

export function toHttpError(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
  if (error instanceof ReinsError) {
    const status = STATUS_BY_CODE[error.code];
    if (status) {
      // a server going away or unable to store: the client may retry (later, or on another instance)
      const headers = status === 503 ? RETRY_AFTER_HEADER : undefined;
      return new HttpError(status, error.code, error.message, error.data ?? {}, headers);
    }
  }
  return undefined;
}

export function turnNotFound(): HttpError {
  return new HttpError(404, "turn_not_found", "Turn not found or already completed");
}

/** 429 for a per-principal limit: the body names the limit, `Retry-After` says when to try again. */
export function tooManyRequests(
  code: "too_many_turns" | "too_many_streams",
  message: string,
  limit: number,
): HttpError {
  return new HttpError(
    429,
    code,
    message,
    { limit, retryAfterSeconds: RETRY_AFTER_SECONDS },
    RETRY_AFTER_HEADER,
  );
}
