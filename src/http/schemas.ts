/**
 * zod schemas of the HTTP API (docs/http-api.md): its inputs, shared by validation and the OpenAPI
 * document, and the JSON bodies and SSE events it answers with, shared by the document and the typed
 * client (src/client), which infers its types from them.
 */
import { z } from "@hono/zod-openapi";
import { ABORT_REASONS, eventBodySchema } from "../events.js";
import { MAX_STREAM_TOKEN_TTL_SECONDS } from "./stream-tokens.js";

export const idSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_-]+$/, "must contain only letters, digits, '_' and '-'");

/**
 * Refuses a string with a lone UTF-16 surrogate, for fields stored in a plain SQLite TEXT column. JSON
 * allows one (`"\ud800"`), but it has no UTF-8 form: the column would keep bytes (ED A0 80) that every
 * later read gives back as three U+FFFD, so what a client was answered and what it reads would differ.
 * Fields stored inside JSON (a message, an approval's input) need no check: JSON escapes a lone surrogate.
 */
function wellFormed<T extends z.ZodString>(schema: T): T {
  return schema.refine(
    (value) => value.isWellFormed(),
    "must be well-formed Unicode (it holds a lone UTF-16 surrogate, half of a character)",
  );
}

export const MAX_MESSAGE_CHARS = 200_000;

/** A provider's model: stored as the turn's `model` (TEXT), so well-formed. */
export const modelSchema = wellFormed(z.string().min(1).max(128));

export const startTurnBodySchema = z
  .strictObject({
    message: z
      .string()
      .min(1, "must not be empty")
      .max(MAX_MESSAGE_CHARS)
      .regex(/\S/, "must not be only white space"),
    sessionId: idSchema.optional(),
    agentId: idSchema.optional(),
    provider: z.string().min(1).max(64).optional(),
    model: modelSchema.optional(),
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
/** The body of a route that takes none: nothing, or an empty JSON object (any field is unknown). */
export const emptyBodySchema = z.strictObject({});

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
const titleSchema = wellFormed(
  z
    .string()
    .min(1, "must not be empty")
    .max(SESSION_TITLE_MAX_CHARS, `must be at most ${SESSION_TITLE_MAX_CHARS} characters`)
    .regex(/\S/, "must not be only white space"),
);

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
export const transcriptQuerySchema = z.strictObject({
  provider: z.enum(PROVIDER_PROFILES),
  /** Render as a turn naming this model would be (thinking is kept only for the model that made it). */
  model: modelSchema.optional(),
});

// ---------------------------------------------------------------------------------------------------
// Responses: the shape of every JSON body the API answers with, registered as OpenAPI components and
// inferred (z.infer) by the typed client in src/client, so neither can drift from the other.

export const errorSchema = z
  .object({ error: z.string(), code: z.string() })
  .catchall(z.unknown())
  .openapi("Error", { description: "A client mistake or a missing resource: a message and a stable code." });

export const sessionSchema = z
  .object({
    sessionId: z.string(),
    agentId: z.string(),
    title: z.string().nullable(),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
    turnCount: z.number().int(),
    running: z.boolean(),
  })
  .openapi("Session", {
    description:
      "`title`: given, or the first user message cut to 80 characters (null before any turn); " +
      "`updatedAt`: epoch ms of the latest activity; `running`: a turn of it runs now",
  });

export const createdSessionSchema = z
  .object({
    sessionId: z.string(),
    agentId: z.string(),
    title: z.string().nullable(),
    createdAt: z.number().int(),
  })
  .openapi("CreatedSession");

export const sessionListSchema = z
  .object({ sessions: z.array(sessionSchema), nextCursor: z.string().nullable() })
  .openapi("SessionList");

export const deletedSessionSchema = z
  .object({ ok: z.literal(true), sessionId: z.string() })
  .openapi("DeletedSession");

const tokenUsageSchema = z.object({ inputTokens: z.number(), outputTokens: z.number() });

export const turnRecordSchema = z
  .object({
    id: z.string(),
    sessionId: z.string(),
    agentId: z.string(),
    provider: z.string(),
    model: z.string(),
    status: z.enum(["running", "completed", "aborted", "interrupted"]),
    stopReason: z.string().nullable(),
    abortReason: z.string().nullable(),
    startedAt: z.number().int(),
    endedAt: z.number().int().nullable(),
    toolCallCount: z.number().int(),
    parentTurnId: z.string().nullable(),
    depth: z.number().int(),
    usage: tokenUsageSchema.nullable(),
  })
  .openapi("Turn", { description: "One turn of a session; `usage` is null until the turn completes" });

const blockPlace = {
  sessionId: z.string(),
  turnId: z.string(),
  position: z.number().int(),
  createdAt: z.number().int(),
};

export const historyBlockSchema = z
  .discriminatedUnion("kind", [
    z.object({
      kind: z.literal("text"),
      role: z.enum(["user", "assistant"]),
      text: z.string(),
      ...blockPlace,
    }),
    z.object({
      kind: z.literal("thinking"),
      role: z.literal("assistant"),
      text: z.string(),
      signature: z.string().optional(),
      redacted: z.string().optional().openapi({
        description: "A redacted thinking block's opaque data (its `text` is empty): sent back as it came",
      }),
      provider: z.string().optional(),
      model: z.string().optional(),
      ...blockPlace,
    }),
    z.object({
      kind: z.literal("tool_call"),
      role: z.literal("assistant"),
      callId: z.string(),
      providerCallId: z.string().optional(),
      name: z.string(),
      input: z.record(z.string(), z.unknown()),
      ...blockPlace,
    }),
    z.object({
      kind: z.literal("tool_response"),
      role: z.literal("tool"),
      callId: z.string(),
      name: z.string(),
      status: z.enum(["complete", "error", "cancelled", "timeout", "interrupted", "rejected"]),
      result: z.string(),
      isError: z.boolean(),
      ...blockPlace,
    }),
  ])
  .openapi("HistoryBlock", {
    description: "One block of the canonical history (docs/semantics.md#transcript-integrity)",
  });

export const sessionHistorySchema = z
  .object({
    sessionId: z.string(),
    agentId: z.string(),
    stepMode: z.boolean(),
    turns: z.array(turnRecordSchema),
    blocks: z.array(historyBlockSchema),
    nextBefore: z.string().nullable().optional(),
  })
  .openapi("SessionHistory");
export type SessionHistory = z.infer<typeof sessionHistorySchema>;

export const transcriptSchema = z
  .object({
    sessionId: z.string(),
    provider: z.enum(PROVIDER_PROFILES),
    format: z.string(),
    thinking: z.boolean(),
    system: z.unknown().optional(),
    messages: z.array(z.unknown()).openapi({ description: "The messages in the provider's own wire format" }),
    diagnostics: z
      .object({ profile: z.string(), format: z.string(), idFormat: z.string() })
      .catchall(z.unknown())
      .openapi({ description: "What the render kept, dropped, projected and why" }),
  })
  .openapi("Transcript");

const runningToolSchema = z.object({ toolId: z.string(), toolName: z.string(), elapsedMs: z.number() });

export const activeTurnSchema = z
  .object({
    turnId: z.string(),
    sessionId: z.string(),
    agentId: z.string(),
    startedAt: z.number().int(),
    currentTool: z.string().nullable(),
    runningTools: z.array(runningToolSchema),
    toolCallCount: z.number().int(),
    paused: z.boolean(),
    pause: z
      .object({
        pauseId: z.string(),
        turnId: z.string(),
        phase: z.enum(["after_inference", "after_tools"]),
        deadlineMs: z.number(),
      })
      .nullable(),
    pendingApprovals: z.array(
      z.object({
        toolId: z.string(),
        toolName: z.string(),
        input: z.record(z.string(), z.unknown()),
        requestedAt: z.number(),
        deadlineMs: z.number(),
      }),
    ),
    parentTurnId: z.string().nullable(),
    childTurnIds: z.array(z.string()),
    depth: z.number().int(),
    zombies: z.array(runningToolSchema),
  })
  .openapi("ActiveTurn");

export const activeTurnsSchema = z
  .object({
    turns: z.array(activeTurnSchema),
    zombies: z.array(
      z.object({
        turnId: z.string(),
        toolId: z.string(),
        toolName: z.string(),
        since: z.number(),
        elapsedMs: z.number(),
      }),
    ),
  })
  .openapi("ActiveTurns");

const callRef = { callId: z.string(), toolName: z.string() };
const classificationSchema = z.enum(["transient", "permanent"]);
const breakerStateSchema = z.enum(["closed", "open", "half_open"]);

/** Something the framework decided about a call or a turn, with its reason (`kind` names it). */
export const decisionSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("classification"),
    ...callRef,
    classification: classificationSchema,
    basis: z.string(),
    error: z.string(),
  }),
  z.object({
    kind: z.literal("retry"),
    ...callRef,
    attempt: z.number().int(),
    delayMs: z.number(),
    error: z.string(),
    classification: classificationSchema,
  }),
  z.object({ kind: z.literal("retry_stopped"), ...callRef, attempts: z.number().int(), reason: z.string() }),
  z.object({ kind: z.literal("retry_succeeded"), ...callRef, attempts: z.number().int() }),
  z.object({
    kind: z.literal("breaker_transition"),
    toolName: z.string(),
    from: breakerStateSchema,
    to: breakerStateSchema,
    callId: z.string().optional(),
  }),
  z.object({
    kind: z.literal("breaker_rejected"),
    ...callRef,
    state: breakerStateSchema,
    retryAfterMs: z.number(),
  }),
  z.object({
    kind: z.literal("timeout"),
    ...callRef,
    timeoutKind: z.enum(["total", "idle"]),
    timeoutMs: z.number(),
  }),
  z.object({ kind: z.literal("tool_cancelled"), ...callRef, by: z.literal("user") }),
  z.object({ kind: z.literal("fallback"), ...callRef, fallback: z.string(), because: z.string() }),
  z.object({
    kind: z.literal("skipped"),
    ...callRef,
    dependency: z.number().int(),
    usedDefault: z.boolean(),
  }),
  z.object({ kind: z.literal("zombie"), ...callRef, state: z.enum(["started", "settled", "abandoned"]) }),
  z.object({
    kind: z.literal("loop"),
    ...callRef,
    repeats: z.number().int(),
    action: z.enum(["warn", "stop"]),
  }),
  z.object({ kind: z.literal("turn_deadline"), timeoutMs: z.number(), closedCalls: z.number().int() }),
  z.object({ kind: z.literal("abort"), reason: z.enum(ABORT_REASONS), closedCalls: z.number().int() }),
  z.object({
    kind: z.literal("child_turn"),
    childTurnId: z.string(),
    agentId: z.string(),
    callId: z.string(),
  }),
  z.object({
    kind: z.literal("model_retry"),
    provider: z.string(),
    attempt: z.number().int(),
    delayMs: z.number(),
    error: z.string(),
  }),
  z.object({
    kind: z.literal("model_error"),
    provider: z.string(),
    status: z.number().int().nullable(),
    classification: classificationSchema,
    error: z.string(),
  }),
]);

export const traceEntrySchema = z
  .intersection(
    decisionSchema.openapi("Decision"),
    z.object({ turnId: z.string(), seq: z.number().int(), at: z.number() }),
  )
  .openapi("TraceEntry", { description: "One decision of the turn, in the order it was made" });

export const traceSchema = z
  .object({
    turnId: z.string(),
    status: z.enum(["running", "completed", "aborted", "interrupted"]),
    entries: z.array(traceEntrySchema),
  })
  .openapi("Trace");

export const streamTokenResponseSchema = z
  .object({ token: z.string(), expiresAt: z.number().int() })
  .openapi("StreamToken", { description: "`expiresAt`: epoch milliseconds after which it opens nothing" });

export const mcpServerSchema = z
  .object({
    name: z.string(),
    transport: z.enum(["stdio", "http"]),
    status: z.enum(["connecting", "ready", "down"]),
    tools: z.array(z.string()),
    lastError: z.string().nullable(),
    restarts: z.number().int(),
  })
  .openapi("McpServer", { description: "One configured MCP server (docs/semantics.md#mcp-servers)" });
export const mcpServerListSchema = z.object({ servers: z.array(mcpServerSchema) }).openapi("McpServerList");

export const agentSchema = z
  .object({
    id: z.string(),
    description: z.string(),
    provider: z.string(),
    model: z.string().nullable(),
    tools: z.array(z.string()),
    approval: z.record(z.string(), z.enum(["always", "never"])),
  })
  .openapi("Agent", {
    description:
      "One agent (docs/semantics.md#agents): `tools` are the tool names its patterns match now " +
      "(MCP tools included); its instructions are never shown",
  });
export const agentListSchema = z.object({ agents: z.array(agentSchema) }).openapi("AgentList");

export const turnAbortedSchema = z.object({ ok: z.literal(true), turnId: z.string() }).openapi("TurnAborted");
export const toolCancelledSchema = z
  .object({ ok: z.literal(true), turnId: z.string(), toolId: z.string() })
  .openapi("ToolCancelled");
export const approvalDecidedSchema = z
  .object({
    ok: z.literal(true),
    turnId: z.string(),
    toolId: z.string(),
    decision: z.enum(["approve", "reject"]),
  })
  .openapi("ApprovalDecided");
export const turnContinuedSchema = z
  .object({ ok: z.literal(true), turnId: z.string(), pauseId: z.string() })
  .openapi("TurnContinued");
export const stepModeSwitchedSchema = z
  .object({ ok: z.literal(true), sessionId: z.string(), stepMode: z.boolean() })
  .openapi("StepModeSwitched");
export const chatStoppedSchema = z
  .object({ ok: z.literal(true), sessionId: z.string(), turnId: z.string() })
  .openapi("ChatStopped");

/** Every event of a turn's SSE stream (`data:` of each message): the event body with its envelope. */
export const turnEventSchema = z
  .intersection(
    eventBodySchema.openapi("TurnEventBody"),
    z.object({ turnId: z.string(), seq: z.number().int().min(1), at: z.number() }),
  )
  .openapi("TurnEvent", {
    description:
      "One turn event: a body discriminated by `type`, with the envelope `turnId`, `seq` (per turn, from 1; " +
      "also the SSE `id`) and `at` (epoch ms)",
  });

/**
 * A chunk of the AI SDK UI message stream protocol v1 (docs/http-api.md#chat-routes-ai-sdk-usechat): `type`
 * names it.
 */
export const uiMessageChunkSchema = z
  .object({ type: z.string() })
  .catchall(z.unknown())
  .openapi("UiMessageChunk", {
    description:
      "`start`, `start-step`, `text-*`, `reasoning-*`, `tool-input-available`, `tool-output-*`, " +
      "`tool-approval-request`, transient `data-*`, `finish-step`, `finish` or `abort`",
  });
