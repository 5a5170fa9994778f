/**
 * No response of this server may be shown inside another site's frame
 * (docs/semantics.md#isolation-and-limits: clickjacking of the page, which can start and abort turns). Every
 * response gets `X-Frame-Options: DENY` (for old browsers) and a Content-Security-Policy with
 * `frame-ancestors 'none'`: appended to the policy a response already has (the page's), or as the whole
 * policy otherwise.
 *
 * A response made with those headers already (`framedResponse`: every event stream) is passed as it is.
 * The others are amended after the handler; reading a response's headers is what costs there — served
 * by @hono/node-server, it builds a `Headers` object for the response, about 40 µs a turn's stream. With
 * CORS_ORIGINS set, the CORS middleware (inside this one) replaces the handler's response by a copy with
 * its headers added, so streams are amended like the rest: same headers, no saving.
 */
import type { MiddlewareHandler } from "hono";

export const FRAME_ANCESTORS_NONE = "frame-ancestors 'none'";

const POLICY = "Content-Security-Policy";
const framedResponses = new WeakSet<Response>();
const framedRecords = new WeakMap<Readonly<Record<string, string>>, Readonly<Record<string, string>>>();

export function frameGuard(): MiddlewareHandler {
  return async (context, next) => {
    await next();
    if (framedResponses.has(context.res)) return;
    const headers = context.res.headers;
    headers.set("X-Frame-Options", "DENY");
    headers.set(POLICY, framePolicy(headers.get(POLICY)));
  };
}

/** A response made with `headers` and the frame headers; `frameGuard` leaves it as it is. */
export function framedResponse(
  body: ConstructorParameters<typeof Response>[0],
  init: { status: number; headers: Readonly<Record<string, string>> },
): Response {
  const response = new Response(body, { status: init.status, headers: withFrameHeaders(init.headers) });
  framedResponses.add(response);
  return response;
}

/**
 * `headers` with the frame headers, by the middleware's rule; made once per record, so a record must not
 * change once used (the stream formats' records are frozen).
 */
export function withFrameHeaders(
  headers: Readonly<Record<string, string>>,
): Readonly<Record<string, string>> {
  let framedHeaders = framedRecords.get(headers);
  if (framedHeaders === undefined) {
    const policyName = Object.keys(headers).find((name) => name.toLowerCase() === POLICY.toLowerCase());
    const others = Object.entries(headers).filter(
      ([name]) => name !== policyName && name.toLowerCase() !== "x-frame-options",
    );
    framedHeaders = Object.fromEntries([
      ...others,
      ["X-Frame-Options", "DENY"],
      [POLICY, framePolicy(policyName === undefined ? null : (headers[policyName] ?? null))],
    ]);
    framedRecords.set(headers, framedHeaders);
  }
  return framedHeaders;
}

/** `policy` with `frame-ancestors 'none'`, unless it has a frame-ancestors directive of its own. */
function framePolicy(policy: string | null): string {
  if (!policy) return FRAME_ANCESTORS_NONE;
  return /(^|;)\s*frame-ancestors\s/i.test(policy) ? policy : `${policy}; ${FRAME_ANCESTORS_NONE}`;
}
