/**
 * `ReinsApiError`: a refusal of the server (any status other than 2xx) as the client raises it, with
 * the server's stable `code` and message (`{ error, code }` bodies), and the whole body for fields
 * some refusals add (`limit`, `allowed`).
 */

/** The code given when the body is not the server's JSON error (a proxy's HTML page, say). */
export const UNKNOWN_ERROR_CODE = "http_error";

export class ReinsApiError extends Error {
  readonly status: number;
  readonly code: string;
  /** The parsed body, when it was JSON. */
  readonly body: unknown;

  constructor(status: number, code: string, message: string, body?: unknown) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

/** Reads a refused response into a `ReinsApiError`. */
export async function apiErrorOf(response: Response): Promise<ReinsApiError> {
  const text = await response.text().catch(() => "");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (typeof body === "object" && body !== null) {
    const { error, code } = body as { error?: unknown; code?: unknown };
    if (typeof code === "string") {
      return new ReinsApiError(response.status, code, typeof error === "string" ? error : code, body);
    }
  }
  const message = `HTTP ${response.status}${text ? `: ${text.slice(0, 200)}` : ""}`;
  return new ReinsApiError(response.status, UNKNOWN_ERROR_CODE, message, body);
}
