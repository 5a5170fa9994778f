/**
 * Validation failures as 4xx errors that say which field is wrong and why: the nesting-depth gate in
 * front of every JSON body, the gate in front of a route that takes no body (`refuseBody`), the hook
 * every declared route uses, and `parseWith` for values validated by hand.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { z } from "zod";
import { jsonDepthExceeds } from "../json-depth.js";
import { HttpError } from "./http-error.js";
import { emptyBodySchema } from "./schemas.js";

const WHERE: Record<string, string> = { json: "body", param: "params", query: "query", header: "headers" };

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;

/** Whether the request says its body is JSON (`application/json`, or a `+json` type), parameters aside. */
function hasJsonBody(context: Context): boolean {
  const mediaType = (context.req.header("content-type") ?? "").split(";")[0]?.trim() ?? "";
  return JSON_MEDIA_TYPE.test(mediaType);
}

/**
 * Refuses a JSON body nested deeper than `maxDepth` (400 `invalid_input`) before validation or any
 * handler walks it. The body is parsed once here (`JSON.parse` itself is not recursive) and the depth
 * measured without recursion; a body that is not JSON is left to the validator's own 400.
 */
export function jsonDepthGuard(maxDepth: number): MiddlewareHandler {
  return async (context, next) => {
    if (context.req.method === "GET" || context.req.method === "HEAD" || !hasJsonBody(context)) {
      return next();
    }
    let body: unknown;
    try {
      body = await context.req.json();
    } catch {
      return next();
    }
    if (jsonDepthExceeds(body, maxDepth)) {
      throw new HttpError(
        400,
        "invalid_input",
        `Invalid input: the JSON body is nested deeper than ${maxDepth} levels (the limit for arrays and objects)`,
        { limit: maxDepth },
      );
    }
    return next();
  };
}

/**
 * In front of a route that takes no body: nothing, or an empty JSON object, passes; a body that is not
 * JSON is refused (415, 400 when malformed) and so is one with any field (400 naming it), so that an
 * option reins does not know (`{"dryRun": true}`) never runs the action unasked.
 */
export const refuseBody: MiddlewareHandler = async (context, next) => {
  const text = await context.req.text();
  if (text.trim() === "") return next();
  if (!hasJsonBody(context)) {
    throw new HttpError(415, "unsupported_media_type", "Content-Type must be application/json");
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, "invalid_json", `Request body is not valid JSON (${(error as Error).message})`);
  }
  parseWith(emptyBodySchema, body, "body");
  return next();
};

/** The @hono/zod-openapi hook: a failed validation becomes a 400 naming each field. */
export function validationHook(result: { success: boolean; target?: string; error?: z.ZodError }): void {
  if (result.success || !result.error) return;
  throw invalid(result.error, WHERE[result.target ?? ""] ?? result.target ?? "input");
}

export function parseWith<T extends z.ZodType>(schema: T, value: unknown, where: string): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw invalid(result.error, where);
}

function invalid(error: z.ZodError, where: string): HttpError {
  const issues = error.issues.map((issue) => ({
    path: [where, ...issue.path.map(String)].join("."),
    message: issue.message,
  }));
  const summary = issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ");
  return new HttpError(400, "invalid_request", `Invalid request: ${summary}`, { issues });
}
