/**
 * No response of this server may be shown inside another site's frame
 * (docs/semantics.md#isolation-and-limits: clickjacking of the page, which can start and abort turns). Every
 * response gets `X-Frame-Options: DENY` (for old browsers) and a Content-Security-Policy with
 * `frame-ancestors 'none'`: appended to the policy a response already has (the page's), or as the whole
 * policy otherwise.
 */
import type { MiddlewareHandler } from "hono";

export const FRAME_ANCESTORS_NONE = "frame-ancestors 'none'";

export function frameGuard(): MiddlewareHandler {
  return async (context, next) => {
    await next();
    const headers = context.res.headers;
    headers.set("X-Frame-Options", "DENY");
    const policy = headers.get("Content-Security-Policy");
    if (!policy) headers.set("Content-Security-Policy", FRAME_ANCESTORS_NONE);
    else if (!/(^|;)\s*frame-ancestors\s/i.test(policy)) {
      headers.set("Content-Security-Policy", `${policy}; ${FRAME_ANCESTORS_NONE}`);
    }
  };
}
