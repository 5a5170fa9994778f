/**
 * `web_fetch {url, maxBytes?}`: GETs an http(s) URL (redirects followed) and returns the status,
 * content type and body text, read as a stream and cut at `min(maxBytes, maxOutputBytes)`. The
 * call's signal reaches the request (through a per-request child signal), so an abort stops the
 * request and the body read at once.
 *
 * It never reaches loopback, private or other non-public networks (docs/semantics.md#isolation-and-limits)
 * unless the destination is in `webFetchAllow`: the address checked is the one the socket connects to, judged
 * by the AddressPolicy inside the socket's DNS `lookup` (so a name that resolves, or rebinds, to
 * 127.0.0.1 is refused) and before connecting to an IP literal (which skips DNS). Redirects are
 * followed here, hop by hop, each hop checked the same way.
 *
 * Failures carry what classification needs (docs/semantics.md#resilience): a non-2xx answer is a ToolError
 * with its `status` (429/503 transient, 404 permanent), a network failure a ToolError with the cause's code,
 * a refused destination a PermanentToolError the model can read.
 */
import { promises as dns, type LookupAddress } from "node:dns";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { pipeline, type Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { z } from "zod";
import { classifyError } from "../resilience/classify.js";
import { PermanentToolError, TransientToolError, ToolError } from "../resilience/tool-error.js";
import type { ToolContext, ToolDefinition } from "../types.js";
import { AddressPolicy } from "./address-policy.js";
import { errorCodeOf, messageOf } from "./paths.js";

/** How much of an error response's body goes into the error message. */
const ERROR_EXCERPT_BYTES = 500;
/** Redirects followed before the call fails (each one a new, checked connection). */
const MAX_REDIRECTS = 10;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const REQUEST_HEADERS = {
  accept: "*/*",
  "accept-encoding": "gzip, deflate, br",
  "user-agent": "reins-web-fetch",
};

const input = z.strictObject({
  url: z.string().min(1),
  maxBytes: z.number().int().positive().optional(),
});

/** Every address of `hostname` (what `dns.lookup` with `all: true` answers). */
export type ResolveHost = (
  hostname: string,
  options: { family?: number; hints?: number },
) => Promise<LookupAddress[]>;

export type WebFetchInput = z.infer<typeof input>;
export type WebFetchSettings = {
  maxOutputBytes: number;
  /** Destinations reachable although not public: host names, IPs, CIDR ranges (`WEB_FETCH_ALLOW`). */
  webFetchAllow?: readonly string[];
  /** DNS resolution; the system resolver (`dns.lookup`) unless a test injects one. */
  resolveHost?: ResolveHost;
};

/**
 * Builds `web_fetch`, capped at `settings.maxOutputBytes` and confined to public addresses plus
 * `settings.webFetchAllow` (an invalid entry throws a ConfigError naming it).
 */
export function createWebFetchTool(settings: WebFetchSettings): ToolDefinition<WebFetchInput> {
  const policy = new AddressPolicy(settings.webFetchAllow);
  const lookup = guardedLookup(policy, settings.resolveHost ?? resolveWithSystem);
  return {
    name: "web_fetch",
    description:
      "Fetches an http or https URL (GET, redirects followed) and returns the status, content type and body text, up to `maxBytes` bytes. Loopback and private network addresses are refused.",
    inputSchema: input,
    // Independent requests with no shared state.
    concurrency: "parallel",
    execute: async ({ url, maxBytes }, context) => {
      let target = parseHttpUrl(url);
      context.signal.throwIfAborted();
      const limit = Math.min(maxBytes ?? Number.POSITIVE_INFINITY, settings.maxOutputBytes);
      // The request keeps its abort listener until its socket closes, so it gets a child signal
      // that dies with this call; the call's own signal keeps only our listener, removed below.
      const request = new AbortController();
      const forwardAbort = () => request.abort(context.signal.reason);
      context.signal.addEventListener("abort", forwardAbort, { once: true });
      let response: IncomingMessage | undefined;
      try {
        response = await get(target, policy, lookup, request.signal);
        let redirects = 0;
        while (REDIRECT_STATUSES.has(response.statusCode ?? 0) && response.headers.location !== undefined) {
          response.destroy();
          if (redirects === MAX_REDIRECTS) {
            throw new PermanentToolError(`web_fetch: ${url} redirected more than ${MAX_REDIRECTS} times.`);
          }
          redirects += 1;
          target = redirectTarget(url, target, response.headers.location);
          response = await get(target, policy, lookup, request.signal);
        }
        const status = response.statusCode ?? 0;
        const statusLine = `HTTP ${status} ${response.statusMessage ?? ""}`.trimEnd();
        if (status < 200 || status > 299) {
          const excerpt = (await readBody(response, ERROR_EXCERPT_BYTES, context)).text.trim();
          const message = `web_fetch: ${url} answered ${statusLine}`;
          // 3xx here is a redirect that was not followable; retrying it cannot help.
          const ErrorClass = status < 400 ? PermanentToolError : ToolError;
          throw new ErrorClass(excerpt === "" ? `${message}.` : `${message}: ${excerpt}`, { status });
        }
        const contentType = response.headers["content-type"] ?? "(none)";
        const body = await readBody(response, limit, context);
        const lines = [statusLine];
        if (redirects > 0) lines.push(`URL: ${target.href}`);
        lines.push(`Content-Type: ${contentType}`, "", body.text);
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
        // Releases the connection whether the body was read to its end, cut or never started.
        response?.destroy();
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

/** Where a redirect leads, resolved against the URL that answered it; http(s) only. */
function redirectTarget(url: string, from: URL, location: string): URL {
  let next: URL;
  try {
    next = new URL(location, from);
  } catch (error) {
    throw new PermanentToolError(`web_fetch: ${url} redirected to "${location}", which is not a valid URL.`, {
      errorCode: "ERR_INVALID_URL",
      cause: error,
    });
  }
  if (next.protocol !== "http:" && next.protocol !== "https:") {
    throw new PermanentToolError(
      `web_fetch: ${url} redirected to ${next.href}; only http: and https: URLs are allowed.`,
    );
  }
  next.hash = "";
  // Credentials a redirect puts in its URL are not ours to send (and must not reach the result).
  next.username = "";
  next.password = "";
  return next;
}

/**
 * One GET without redirects, resolving with the response head. An IP literal is checked here,
 * since sockets connect to literals without calling `lookup`; a name is checked inside `lookup`.
 */
function get(
  target: URL,
  policy: AddressPolicy,
  lookup: LookupFunction,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const literal = target.hostname.replace(/^\[(.*)\]$/, "$1");
  if (isIP(literal) !== 0) {
    const refusal = policy.refusalOf(target.hostname, literal);
    if (refusal !== undefined) return Promise.reject(refusedError(target.hostname, literal, refusal));
  }
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    // `agent: false`: a connection of its own per request, so no pooled socket outlives the call.
    const request = send(target, { headers: REQUEST_HEADERS, lookup, signal, agent: false }, (response) => {
      // Errors while reading reach the reader; this keeps one that arrives between reads (the call
      // aborted after the body was cut) from becoming an uncaught exception.
      response.on("error", () => {});
      resolve(response);
    });
    request.on("error", reject);
    request.end();
  });
}

/**
 * The socket's DNS step: resolves the name, refuses it when any of its addresses is not allowed
 * (a name that mixes public and private addresses is suspect), then answers as `dns.lookup` would.
 */
function guardedLookup(policy: AddressPolicy, resolveHost: ResolveHost): LookupFunction {
  return (hostname, options, callback) => {
    const family = options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : options.family;
    resolveHost(hostname, { family, hints: options.hints }).then(
      (addresses) => {
        for (const { address } of addresses) {
          const refusal = policy.refusalOf(hostname, address);
          if (refusal !== undefined) return callback(refusedError(hostname, address, refusal), "");
        }
        const usable =
          family === 4 || family === 6 ? addresses.filter((entry) => entry.family === family) : addresses;
        const first = usable[0];
        if (first === undefined) {
          return callback(
            Object.assign(new Error(`no address found for ${hostname}`), { code: "ENOTFOUND" }),
            "",
          );
        }
        return options.all === true ? callback(null, usable) : callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, ""),
    );
  };
}

function resolveWithSystem(hostname: string, options: { family?: number; hints?: number }) {
  return dns.lookup(hostname, { all: true, family: options.family ?? 0, hints: options.hints ?? 0 });
}

function refusedError(host: string, address: string, restriction: string): PermanentToolError {
  return new PermanentToolError(
    `web_fetch refused ${host} (${address}): ${restriction}; set WEB_FETCH_ALLOW to allow it.`,
    { errorCode: "ERR_DESTINATION_REFUSED" },
  );
}

/** The body as the server meant it: gzip, deflate and br are undone, anything else passed as is. */
function decodedBody(response: IncomingMessage): Readable {
  const encoding = response.headers["content-encoding"]?.trim().toLowerCase();
  const decoder =
    encoding === "gzip" || encoding === "x-gzip"
      ? createGunzip()
      : encoding === "deflate"
        ? createInflate()
        : encoding === "br"
          ? createBrotliDecompress()
          : undefined;
  if (decoder === undefined) return response;
  // A failure on either side destroys both and reaches the reader through the decoder.
  return pipeline(response, decoder, () => {});
}

/** Reads the body up to `limit` bytes, then drops the rest; each chunk is a heartbeat. */
async function readBody(
  response: IncomingMessage,
  limit: number,
  context: ToolContext,
): Promise<{ text: string; truncated: boolean }> {
  const decoder = new TextDecoder();
  let text = "";
  let received = 0;
  // Leaving the loop early destroys the stream, which ends the download.
  for await (const chunk of decodedBody(response)) {
    const bytes = chunk as Buffer;
    const room = Math.max(0, limit - received);
    const kept = bytes.byteLength <= room ? bytes : bytes.subarray(0, room);
    received += bytes.byteLength;
    // `stream: true` holds back a character cut in half at the limit instead of mangling it.
    text += decoder.decode(kept, { stream: true });
    context.heartbeat(`web_fetch: received ${received} bytes`);
    // One byte past the limit is enough to know that the body was cut.
    if (received > limit) return { text, truncated: true };
  }
  return { text: text + decoder.decode(), truncated: false };
}

/** A failed request: transient unless its code says retrying cannot help (`ENOTFOUND`). */
function networkError(url: string, error: unknown): ToolError {
  const cause = error instanceof Error ? error.cause : undefined;
  const errorCode =
    errorCodeOf(cause) ?? firstNestedCode(cause) ?? errorCodeOf(error) ?? firstNestedCode(error);
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
