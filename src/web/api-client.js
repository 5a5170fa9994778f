// @ts-check
/**
 * The client of the reins HTTP API: `fetch` with the bearer token, the server's `{error, code}` as an
 * ApiError, the 401 banner, the unreachable banner when the request cannot reach the server (a
 * ServerUnreachableError, never the browser's raw "Failed to fetch"), and error messages in words.
 */
import { clearAuthError, currentToken, showAuthError } from "./api-token.js";
import { showUnreachable } from "./connection-banner.js";

/** A request that never reached the server (it is down, restarting, or the network is gone). */
export class ServerUnreachableError extends Error {
  constructor() {
    super("the server cannot be reached");
    this.name = "ServerUnreachableError";
  }
}

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

/**
 * `fetch` against the API with the bearer token. Resolves with the response when it is 2xx; rejects
 * with an ApiError carrying the server's `{error, code}` otherwise. A 401 also shows the token banner.
 * @param {string} path
 * @param {{method?: string, body?: unknown, headers?: Record<string, string>, signal?: AbortSignal}} [options]
 * @returns {Promise<Response>}
 */
export async function api(path, options = {}) {
  const headers = new Headers(options.headers);
  const token = currentToken();
  if (token) headers.set("Authorization", `Bearer ${token}`);
  /** @type {RequestInit} */
  const init = { method: options.method ?? "GET", headers, signal: options.signal, cache: "no-store" };
  if (options.body !== undefined) {
    headers.set("Content-Type", "application/json");
    init.body = JSON.stringify(options.body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    // cancelled by the page itself: not a connection problem
    if (options.signal?.aborted) throw error;
    showUnreachable(true);
    throw new ServerUnreachableError();
  }
  showUnreachable(false);
  if (response.ok) {
    clearAuthError();
    return response;
  }
  let code = `http_${response.status}`;
  let message = response.statusText || `HTTP ${response.status}`;
  try {
    const body = await response.json();
    if (body && typeof body.error === "string") message = body.error;
    if (body && typeof body.code === "string") code = body.code;
  } catch {
    // not JSON: keep the status text
  }
  if (response.status === 401) showAuthError(message);
  throw new ApiError(response.status, code, message);
}

/**
 * An error in words for the page (an ApiError with its status and code).
 * @param {unknown} error
 */
export function describeError(error) {
  if (error instanceof ApiError) return `${error.message} (${error.status} ${error.code})`;
  if (error instanceof Error) return error.message;
  return String(error);
}
