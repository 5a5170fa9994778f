/** zod schemas of the HTTP API's inputs (DESIGN.md §3), shared by validation and the OpenAPI document. */
import { z } from "@hono/zod-openapi";
import { MAX_STREAM_TOKEN_TTL_SECONDS } from "./stream-tokens.js";

export const idSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_-]+$/, "must contain only letters, digits, '_' and '-'");

export const MAX_MESSAGE_CHARS = 200_000;

export const startTurnBodySchema = z
  .strictObject({
    message: z.string().min(1, "must not be empty").max(MAX_MESSAGE_CHARS),
    sessionId: idSchema.optional(),
    agentId: idSchema.optional(),
    provider: z.string().min(1).max(64).optional(),
    model: z.string().min(1).max(128).optional(),
    stepMode: z.boolean().optional(),
  })
  .openapi("StartTurn");

export const turnParamsSchema = z.strictObject({ id: idSchema });
export const sessionParamsSchema = z.strictObject({ id: idSchema });
export const toolParamsSchema = z.strictObject({ id: idSchema, toolId: idSchema });

/** `Last-Event-ID` or `?lastEventId=` (for clients that cannot set headers): the last seq received. */
export const lastEventIdSchema = z
  .string()
  .regex(/^\d{1,15}$/, "must be a non-negative whole number (the last seq received)")
  .transform(Number);

/** A stream token (`<id>.<secret>`, base64url parts) from `POST /api/turns/:id/stream-token`. */
export const streamTokenSchema = z
  .string()
  .max(256)
  .regex(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, "must be a token from POST /api/turns/{id}/stream-token");

export const eventsQuerySchema = z.strictObject({
  lastEventId: lastEventIdSchema.optional(),
  token: streamTokenSchema.optional(),
});
export const eventsHeadersSchema = z.object({ "last-event-id": lastEventIdSchema.optional() });
export const emptyQuerySchema = z.strictObject({});

export const streamTokenBodySchema = z
  .strictObject({
    ttlSeconds: z.number().int().min(1).max(MAX_STREAM_TOKEN_TTL_SECONDS).optional(),
  })
  .openapi("StreamTokenRequest");

/** Characters of a rejection's reason. */
export const MAX_REJECT_REASON_CHARS = 2_000;

export const approvalBodySchema = z
  .strictObject({
    decision: z.enum(["approve", "reject"]),
    /** Replaces the call's input; checked against the tool's schema. */
    input: z.record(z.string(), z.unknown()).optional(),
    reason: z.string().max(MAX_REJECT_REASON_CHARS).optional(),
  })
  .refine((body) => body.decision === "approve" || body.input === undefined, {
    message: "only an approval may carry an input",
    path: ["input"],
  })
  .openapi("ToolApproval");

export const continueBodySchema = z.strictObject({ pauseId: z.string().min(1).max(128) }).openapi("Continue");
export const stepModeBodySchema = z.strictObject({ enabled: z.boolean() }).openapi("StepMode");

/** A page size in a query string: a whole number from 1 to 100. */
export const MAX_PAGE_SIZE = 100;
const pageSizeSchema = z
  .string()
  .regex(/^\d{1,3}$/, `must be a whole number from 1 to ${MAX_PAGE_SIZE}`)
  .transform(Number)
  .pipe(z.number().min(1, "must be at least 1").max(MAX_PAGE_SIZE, `must be at most ${MAX_PAGE_SIZE}`));

/** Where a page of sessions starts, as `nextCursor` carries it: base64url of `[updatedAt, id]`. */
export function encodeSessionCursor(position: { updatedAt: number; id: string }): string {
  return Buffer.from(JSON.stringify([position.updatedAt, position.id])).toString("base64url");
}

function decodeSessionCursor(cursor: string): { updatedAt: number; id: string } | undefined {
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (!Array.isArray(decoded) || decoded.length !== 2) return undefined;
    const [updatedAt, id] = decoded as unknown[];
    if (!Number.isSafeInteger(updatedAt) || !idSchema.safeParse(id).success) return undefined;
    return { updatedAt: updatedAt as number, id: id as string };
  } catch {
    return undefined;
  }
}

const sessionCursorSchema = z
  .string()
  .max(256)
  .transform((cursor, context) => {
    const position = decodeSessionCursor(cursor);
    if (position) return position;
    context.addIssue({ code: "custom", message: "must be a nextCursor from GET /api/sessions" });
    return z.NEVER;
  });

export const SESSION_TITLE_MAX_CHARS = 200;
const titleSchema = z
  .string()
  .min(1, "must not be empty")
  .max(SESSION_TITLE_MAX_CHARS, `must be at most ${SESSION_TITLE_MAX_CHARS} characters`)
  .regex(/\S/, "must not be only white space");

export const createSessionBodySchema = z
  .strictObject({ agentId: idSchema.optional(), title: titleSchema.optional() })
  .openapi("CreateSession");
export const renameSessionBodySchema = z.strictObject({ title: titleSchema }).openapi("RenameSession");
export const listSessionsQuerySchema = z.strictObject({
  limit: pageSizeSchema.optional(),
  cursor: sessionCursorSchema.optional(),
});
/** Without parameters the whole history, as before; with either, a page of turns. */
export const historyQuerySchema = z.strictObject({
  limit: pageSizeSchema.optional(),
  before: idSchema.optional(),
});

export const PROVIDER_PROFILES = ["anthropic", "openai", "kimi", "mistral"] as const;
export const transcriptQuerySchema = z.strictObject({ provider: z.enum(PROVIDER_PROFILES) });
