/**
 * The /api body limit (docs/semantics.md#isolation-and-limits): a body over `BODY_LIMIT_BYTES` (by its
 * Content-Length, or counted as it arrives when chunked) is answered at once with 413 and `Connection:
 * close`, and the connection is closed after the answer without a reset (see `lingering-close.ts`), so a
 * client still sending its body reads the 413.
 *
 * A declared length is judged from the headers alone. Only a chunked body goes through Hono's counting
 * `bodyLimit`, which reads `request.body`: served by @hono/node-server, that builds a full web Request
 * whose body is then read through web streams, where a body of known length is read straight from
 * the socket by the handler that needs it.
 */
import type { HttpBindings } from "@hono/node-server";
import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HttpError } from "./http-error.js";
import { lingerAfterResponse } from "./lingering-close.js";

export function apiBodyLimit(maxBytes: number): MiddlewareHandler {
  const refuse = (context: Context): never => {
    // Served by @hono/node-server the Node request is there; in-process (`app.request`) it is not.
    const incoming = (context.env as Partial<HttpBindings> | undefined)?.incoming;
    if (incoming) lingerAfterResponse(incoming);
    throw new HttpError(
      413,
      "body_too_large",
      `Request body exceeds the limit of ${maxBytes} bytes (BODY_LIMIT_BYTES)`,
      { limit: maxBytes },
      { Connection: "close" },
    );
  };
  const counted = bodyLimit({ maxSize: maxBytes, onError: refuse });
  return async (context, next) => {
    const { method } = context.req;
    // no body to limit (Hono's own middleware passes these too)
    if (method === "GET" || method === "HEAD") return next();
    const declared = context.req.header("content-length");
    if (declared === undefined || context.req.header("transfer-encoding") !== undefined) {
      return counted(context, next);
    }
    if (Number.parseInt(declared, 10) > maxBytes) refuse(context);
    return next();
  };
}
