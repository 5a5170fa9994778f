/**
 * Every API route, declared once with its zod schemas (DESIGN.md §3). The same declarations validate
 * requests (through @hono/zod-openapi) and generate `GET /openapi.json`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import {
  approvalBodySchema,
  continueBodySchema,
  emptyQuerySchema,
  eventsHeadersSchema,
  eventsQuerySchema,
  sessionParamsSchema,
  startTurnBodySchema,
  stepModeBodySchema,
  streamTokenBodySchema,
  toolParamsSchema,
  transcriptQuerySchema,
  turnParamsSchema,
} from "./schemas.js";

const errorSchema = z
  .object({ error: z.string(), code: z.string() })
  .catchall(z.unknown())
  .openapi("Error", { description: "A client mistake or a missing resource: a message and a stable code." });

const json = <T extends z.ZodType>(schema: T, description: string) => ({
  content: { "application/json": { schema } },
  description,
});
const errors = {
  400: json(
    errorSchema,
    "Invalid input; the message names the field (`invalid_input`: a JSON body nested deeper than 64 levels)",
  ),
  401: json(errorSchema, "Missing or invalid bearer token (when auth is on)"),
  404: json(errorSchema, "Unknown, or not yours"),
};
/** 429 for a per-principal limit (DESIGN.md §10); `codes` are the limits the route can hit. */
const tooMany = (codes: string) => ({
  ...json(
    errorSchema,
    `A per-principal limit is reached (${codes}); the body names it (\`limit\`). Retry after \`Retry-After\` seconds`,
  ),
  headers: {
    "Retry-After": {
      description: "Seconds to wait before trying again",
      schema: { type: "integer" as const, minimum: 1 },
    },
  },
});
const eventStream = {
  content: { "text/event-stream": { schema: z.string() } },
  description:
    "Server-Sent Events: first `retry: 2000`, then `id: <seq>`, `event: <type>`, `data: <json>`; " +
    "`ping` every 15 s of silence",
};
const ok = z.object({ ok: z.literal(true) }).catchall(z.unknown());

export const startTurnRoute = createRoute({
  method: "post",
  path: "/sessions/stream",
  summary: "Start a turn and stream its events",
  request: { body: { content: { "application/json": { schema: startTurnBodySchema } }, required: true } },
  responses: {
    200: eventStream,
    ...errors,
    409: json(errorSchema, "The session already has a running turn"),
    413: json(errorSchema, "Body too large; sent with `Connection: close`"),
    415: json(errorSchema, "Content-Type is not application/json"),
    429: tooMany("`too_many_turns`: MAX_TURNS_PER_PRINCIPAL; `too_many_streams`: MAX_STREAMS_PER_PRINCIPAL"),
  },
});

export const historyRoute = createRoute({
  method: "get",
  path: "/sessions/{id}/history",
  summary: "A session's canonical history and its turns",
  request: { params: sessionParamsSchema, query: emptyQuerySchema },
  responses: {
    200: json(z.object({ sessionId: z.string() }).catchall(z.unknown()), "Canonical history"),
    ...errors,
  },
});

export const transcriptRoute = createRoute({
  method: "get",
  path: "/sessions/{id}/transcript",
  summary: "The session rendered for a provider, with diagnostics",
  request: { params: sessionParamsSchema, query: transcriptQuerySchema },
  responses: {
    200: json(z.object({ provider: z.string() }).catchall(z.unknown()), "Rendered transcript"),
    ...errors,
  },
});

export const stepModeRoute = createRoute({
  method: "post",
  path: "/sessions/{id}/step-mode",
  summary: "Switch step mode for a session (off releases every pause at once)",
  request: {
    params: sessionParamsSchema,
    body: { content: { "application/json": { schema: stepModeBodySchema } }, required: true },
  },
  responses: { 200: json(ok, "Switched"), ...errors, 415: json(errorSchema, "Not JSON") },
});

export const activeTurnsRoute = createRoute({
  method: "get",
  path: "/turns/active",
  summary: "Running turns, their tools, pauses and zombies",
  request: { query: emptyQuerySchema },
  responses: {
    200: json(z.object({ turns: z.array(z.unknown()) }).catchall(z.unknown()), "Active turns"),
    ...errors,
  },
});

export const abortTurnRoute = createRoute({
  method: "post",
  path: "/turns/{id}/abort",
  summary: "Abort a running turn",
  request: { params: turnParamsSchema },
  responses: { 200: json(ok, "Aborted"), ...errors },
});

export const abortToolRoute = createRoute({
  method: "post",
  path: "/turns/{id}/tools/{toolId}/abort",
  summary: "Cancel one running tool call; the turn continues",
  request: { params: toolParamsSchema },
  responses: { 200: json(ok, "Cancelled"), ...errors },
});

export const approvalRoute = createRoute({
  method: "post",
  path: "/turns/{id}/tools/{toolId}/approval",
  summary: "Approve (optionally with an edited input) or reject a tool call waiting for approval",
  description:
    "The call must be waiting (`tool_approval_request`). `input` replaces the call's input and is " +
    "checked against the tool's schema (400 naming the field; the call keeps waiting). Then " +
    "`tool_approval` is emitted and the call runs, or ends with `[REJECTED] <reason>`.",
  request: {
    params: toolParamsSchema,
    body: { content: { "application/json": { schema: approvalBodySchema } }, required: true },
  },
  responses: {
    200: json(ok, "Decided"),
    ...errors,
    409: json(
      errorSchema,
      "`not_waiting`: the call is not waiting for approval (decided, ended, or never asked)",
    ),
    415: json(errorSchema, "Not JSON"),
  },
});

export const continueRoute = createRoute({
  method: "post",
  path: "/turns/{id}/continue",
  summary: "Continue a paused turn (step mode)",
  request: {
    params: turnParamsSchema,
    body: { content: { "application/json": { schema: continueBodySchema } }, required: true },
  },
  responses: { 200: json(ok, "Continued"), ...errors, 415: json(errorSchema, "Not JSON") },
});

export const eventsRoute = createRoute({
  method: "get",
  path: "/turns/{id}/events",
  summary: "Replay a turn's events after Last-Event-ID, then follow it live",
  description:
    "Without an Authorization header, `?token=` (from `POST /turns/{id}/stream-token`) authenticates " +
    "this one turn's stream, for browsers' EventSource.",
  request: { params: turnParamsSchema, query: eventsQuerySchema, headers: eventsHeadersSchema },
  responses: {
    200: eventStream,
    204: {
      description: "The turn has ended and Last-Event-ID is at or past its last event: nothing to send",
    },
    ...errors,
    429: tooMany("`too_many_streams`: MAX_STREAMS_PER_PRINCIPAL"),
  },
});

export const streamTokenRoute = createRoute({
  method: "post",
  path: "/turns/{id}/stream-token",
  summary: "A short-lived token that opens this turn's event stream (`GET /turns/{id}/events?token=`)",
  request: {
    params: turnParamsSchema,
    body: { content: { "application/json": { schema: streamTokenBodySchema } }, required: false },
  },
  responses: {
    200: json(
      z.object({ token: z.string(), expiresAt: z.number().int() }).openapi("StreamToken", {
        description: "`expiresAt`: epoch milliseconds after which it opens nothing",
      }),
      "The token",
    ),
    ...errors,
    415: json(errorSchema, "Not JSON"),
    429: tooMany("`too_many_stream_tokens`: 256 live tokens per principal"),
  },
});

export const traceRoute = createRoute({
  method: "get",
  path: "/turns/{id}/trace",
  summary: "Every decision the framework made in a turn",
  request: { params: turnParamsSchema, query: emptyQuerySchema },
  responses: {
    200: json(z.object({ turnId: z.string(), entries: z.array(z.unknown()) }), "The trace"),
    ...errors,
  },
});
