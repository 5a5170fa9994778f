/**
 * Validation failures as 4xx errors that say which field is wrong and why: the hook every declared
 * route uses, and `parseWith` for values validated by hand.
 */
import type { z } from "zod";
import { HttpError } from "./http-error.js";

const WHERE: Record<string, string> = { json: "body", param: "params", query: "query", header: "headers" };

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
