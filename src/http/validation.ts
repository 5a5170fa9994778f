/**
 * Request validation: every body, parameter, query and header the API reads goes through a zod
 * schema here, and failures become 4xx errors that say which field is wrong and why.
 */
import type { Context } from "hono";
import type { z } from "zod";
import { HttpError } from "./http-error.js";

export async function readJsonBody<T extends z.ZodType>(context: Context, schema: T): Promise<z.output<T>> {
  const contentType = context.req.header("content-type") ?? "";
  if (!/^application\/(.+\+)?json\s*(;|$)/i.test(contentType)) {
    throw new HttpError(415, "unsupported_media_type", "Content-Type must be application/json", {
      received: contentType || null,
    });
  }
  let body: unknown;
  try {
    body = JSON.parse(await context.req.text());
  } catch (error) {
    throw new HttpError(400, "invalid_json", `Request body is not valid JSON: ${(error as Error).message}`);
  }
  return parseWith(schema, body, "body");
}

export function parseWith<T extends z.ZodType>(schema: T, value: unknown, where: string): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => ({
    path: [where, ...issue.path.map(String)].join("."),
    message: issue.message,
  }));
  const summary = issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ");
  throw new HttpError(400, "invalid_request", `Invalid request: ${summary}`, { issues });
}
