/**
 * A model provider's failure, classified like a tool failure (docs/semantics.md#resilience):
 * 408/409/425/429/5xx and network errors are transient and retried by the loop; other 4xx are permanent and
 * end the turn with an `error` event that quotes the provider's own message.
 */
import type { Logger } from "pino";
import { ModelError } from "../errors.js";
import { classifyError } from "../tools/resilience/classify.js";
import type { Classification } from "../tools/resilience/tool-error.js";

export class ProviderError extends ModelError {
  readonly provider: string;
  readonly status: number | undefined;
  readonly classification: Classification;
  /** The provider's own error message, verbatim. */
  readonly providerMessage: string;

  constructor(
    provider: string,
    status: number | undefined,
    providerMessage: string,
    options: { cause?: unknown } = {},
  ) {
    const classification =
      status === 409 ? "transient" : classifyError({ status, cause: options.cause }).classification;
    super(
      `${provider} ${status === undefined ? "request failed" : `returned ${status}`}: ${providerMessage}`,
      { data: { provider, status, classification }, cause: options.cause },
    );
    this.provider = provider;
    this.status = status;
    this.classification = status === undefined ? "transient" : classification;
    this.providerMessage = providerMessage;
  }
}

/**
 * A stream that ended cleanly before its end marker (Anthropic's `message_stop`, an OpenAI-compatible
 * choice's `finish_reason`): the SDKs end their iteration without an error, so the engine raises this,
 * and it becomes a ProviderError without status, as a dropped connection does.
 */
export class IncompleteStreamError extends Error {
  constructor(endMarker: string) {
    super(`the stream ended before its end (no ${endMarker})`);
    this.name = new.target.name;
  }
}

/** The message inside a provider's error body (Anthropic, OpenAI and Mistral shapes), else a fallback. */
export function providerMessageOf(body: unknown, fallback: string): string {
  if (typeof body !== "object" || body === null) return fallback;
  const record = body as Record<string, unknown>;
  const nested = record.error;
  if (
    typeof nested === "object" &&
    nested !== null &&
    typeof (nested as Record<string, unknown>).message === "string"
  ) {
    return (nested as Record<string, string>).message as string;
  }
  if (typeof record.message === "string") return record.message;
  // Mistral's validation errors carry an object (`{detail: […]}`) as the message
  if (typeof record.message === "object" && record.message !== null) return JSON.stringify(record.message);
  return fallback;
}

/** An SDK error (or any failure) as a ProviderError; `isApiError` recognises the SDK's APIError. */
export function toProviderError(
  provider: string,
  error: unknown,
  isApiError: (error: unknown) => error is { status: number | undefined; error: unknown; message: string },
): ProviderError {
  if (isApiError(error)) {
    return new ProviderError(provider, error.status, providerMessageOf(error.error, error.message), {
      cause: error,
    });
  }
  return new ProviderError(provider, undefined, (error as Error)?.message ?? String(error), { cause: error });
}

/** Logs the request that failed, with what the renderer did to the history (its diagnostics). */
export function logProviderFailure(
  logger: Logger,
  failure: ProviderError,
  request: { model: string; messageCount: number; diagnostics: unknown },
): void {
  logger.error(
    {
      provider: failure.provider,
      model: request.model,
      status: failure.status,
      error: failure.providerMessage,
      messageCount: request.messageCount,
      diagnostics: request.diagnostics,
    },
    "model request failed",
  );
}
