/**
 * The /api body limit (docs/semantics.md#isolation-and-limits): a body over `BODY_LIMIT_BYTES` (by its
 * Content-Length, or counted as it arrives when chunked) is answered at once with 413 and `Connection:
 * close`, and the connection is closed after the answer without a reset (see `lingering-close.ts`), so a
 * client still sending its body reads the 413.
 */
import type { HttpBindings } from "@hono/node-server";
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HttpError } from "./http-error.js";
import { lingerAfterResponse } from "./lingering-close.js";

export function apiBodyLimit(maxBytes: number): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: (context) => {
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
    },
  });
}
