/**
 * `web_fetch {url, maxBytes?}`: GETs an http(s) URL (redirects followed) and returns the status,
 * content type and body text, read as a stream and cut at `min(maxBytes, maxOutputBytes)`. The
 * call's signal reaches `fetch` (through a per-request child signal), so an abort stops the request
 * and the body read at once.
 *
 * Failures carry what classification needs (DESIGN.md §5.4): a non-2xx answer is a ToolError with its
 * `status` (429/503 transient, 404 permanent), a network failure a ToolError with the cause's code.
 */
import { z } from "zod";
import { classifyError } from "../resilience/classify.js";
import { PermanentToolError, TransientToolError, ToolError } from "../resilience/tool-error.js";
import type { ToolContext, ToolDefinition } from "../types.js";
import { errorCodeOf, messageOf } from "./paths.js";

/** How much of an error response's body goes into the error message. */
const ERROR_EXCERPT_BYTES = 500;

const input = z.strictObject({
  url: z.string().min(1),
  maxBytes: z.number().int().positive().optional(),
});

export type WebFetchInput = z.infer<typeof input>;
export type WebFetchSettings = { maxOutputBytes: number };

/** Builds `web_fetch`, capped at `settings.maxOutputBytes`. */
export function createWebFetchTool(settings: WebFetchSettings): ToolDefinition<WebFetchInput> {
  return {
    name: "web_fetch",
    description:
      "Fetches an http or https URL (GET, redirects followed) and returns the status, content type and body text, up to `maxBytes` bytes.",
    inputSchema: input,
    // Independent requests with no shared state.
    concurrency: "parallel",
    execute: async ({ url, maxBytes }, context) => {
      const target = parseHttpUrl(url);
      context.signal.throwIfAborted();
      const limit = Math.min(maxBytes ?? Number.POSITIVE_INFINITY, settings.maxOutputBytes);
      // fetch keeps its abort listener until the response is garbage-collected, so it gets a child
      // signal that dies with this call; the call's own signal keeps only our listener, removed below.
      const request = new AbortController();
      const forwardAbort = () => request.abort(context.signal.reason);
      context.signal.addEventListener("abort", forwardAbort, { once: true });
      try {
        const response = await fetch(target, { signal: request.signal, redirect: "follow" });
        if (!response.ok) {
          const excerpt = (await readBody(response, ERROR_EXCERPT_BYTES, context)).text.trim();
          const message =
            `web_fetch: ${url} answered HTTP ${response.status} ${response.statusText}`.trimEnd();
          // 3xx here is a redirect that was not followable; retrying it cannot help.
          const ErrorClass = response.status < 400 ? PermanentToolError : ToolError;
          throw new ErrorClass(excerpt === "" ? `${message}.` : `${message}: ${excerpt}`, {
            status: response.status,
          });
        }
        const body = await readBody(response, limit, context);
        const lines = [`HTTP ${response.status} ${response.statusText}`.trimEnd()];
        if (response.redirected) lines.push(`URL: ${response.url}`);
        lines.push(`Content-Type: ${response.headers.get("content-type") ?? "(none)"}`, "", body.text);
        if (body.truncated) {
          lines.push(`[truncated: showed the first ${limit} bytes; the body is longer]`);
        }
        return lines.join("\n");
      } catch (error) {
        // An aborted call ends with the abort's reason, whichever await it interrupted.
        context.signal.throwIfAborted();
        if (error instanceof ToolError) throw error;
        throw networkError(url, error);
      } finally {
        context.signal.removeEventListener("abort", forwardAbort);
      }
    },
  };
}

function parseHttpUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (error) {
    throw new PermanentToolError(`web_fetch: "${url}" is not a valid URL.`, {
      errorCode: "ERR_INVALID_URL",
      cause: error,
    });
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new PermanentToolError(
      `web_fetch: only http: and https: URLs are allowed, not ${parsed.protocol} ("${url}").`,
    );
  }
  return parsed;
}

/** Reads the body up to `limit` bytes, then cancels the rest; each chunk is a heartbeat. */
async function readBody(
  response: Response,
  limit: number,
  context: ToolContext,
): Promise<{ text: string; truncated: boolean }> {
  if (response.body === null) return { text: "", truncated: false };
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let received = 0;
  let done = false;
  try {
    // One byte past the limit is enough to know that the body was cut.
    while (received <= limit) {
      const chunk = await reader.read();
      if (chunk.done) {
        done = true;
        text += decoder.decode();
        break;
      }
      const room = Math.max(0, limit - received);
      const kept = chunk.value.byteLength <= room ? chunk.value : chunk.value.subarray(0, room);
      received += chunk.value.byteLength;
      // `stream: true` holds back a character cut in half at the limit instead of mangling it.
      text += decoder.decode(kept, { stream: true });
      context.heartbeat(`web_fetch: received ${received} bytes`);
    }
    return { text, truncated: !done };
  } finally {
    if (!done) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

/** A failed request: transient unless its code says retrying cannot help (`ENOTFOUND`). */
function networkError(url: string, error: unknown): ToolError {
  const cause = error instanceof Error ? error.cause : undefined;
  const errorCode = errorCodeOf(cause) ?? firstNestedCode(cause) ?? errorCodeOf(error);
  const detail = cause === undefined ? messageOf(error) : `${messageOf(error)} (${messageOf(cause)})`;
  const message = `web_fetch: request to ${url} failed: ${detail}`;
  const { classification } = classifyError(errorCode === undefined ? error : { code: errorCode });
  return classification === "permanent"
    ? new PermanentToolError(message, { errorCode, cause: error })
    : new TransientToolError(message, { errorCode, cause: error });
}

/** Connection attempts to several addresses fail with an AggregateError whose parts carry the code. */
function firstNestedCode(cause: unknown): string | undefined {
  if (!(cause instanceof AggregateError)) return undefined;
  for (const part of cause.errors) {
    const code = errorCodeOf(part);
    if (code !== undefined) return code;
  }
  return undefined;
}
