/**
 * HTTP errors and their mapping. Internal errors keep their own codes; `toHttpError` decides which of
 * them are client mistakes (4xx) and hides everything else behind a 500 without details.
 */
import { ReinsError } from "../errors.js";

export class HttpError extends Error {
  constructor(
    readonly status: 400 | 401 | 404 | 409 | 413 | 415 | 503,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

const STATUS_BY_CODE: Record<string, HttpError["status"]> = {
  session_not_found: 404,
  session_busy: 409,
  unknown_provider: 400,
};

export function toHttpError(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
  if (error instanceof ReinsError) {
    const status = STATUS_BY_CODE[error.code];
    if (status) return new HttpError(status, error.code, error.message, error.data ?? {});
  }
  return undefined;
}

export function turnNotFound(): HttpError {
  return new HttpError(404, "turn_not_found", "Turn not found or already completed");
}
