/**
 * Every API route, declared once with its zod schemas (docs/http-api.md). The same declarations validate
 * requests (through @hono/zod-openapi) and generate `GET /openapi.json`.
 */
import { createRoute, type z } from "@hono/zod-openapi";
import {
  activeTurnsSchema,
  agentListSchema,
  approvalBodySchema,
  approvalDecidedSchema,
  chatStoppedSchema,
  continueBodySchema,
  createdSessionSchema,
  createSessionBodySchema,
  deletedSessionSchema,
  errorSchema,
  emptyQuerySchema,
  eventsHeadersSchema,
  eventsQuerySchema,
  historyQuerySchema,
  listSessionsQuerySchema,
  mcpServerListSchema,
  renameSessionBodySchema,
  sessionHistorySchema,
  sessionListSchema,
  sessionParamsSchema,
  sessionSchema,
  startTurnBodySchema,
  stepModeBodySchema,
  stepModeSwitchedSchema,
  streamTokenBodySchema,
  streamTokenResponseSchema,
  toolCancelledSchema,
  toolParamsSchema,
  traceSchema,
  transcriptQuerySchema,
  transcriptSchema,
  turnAbortedSchema,
  turnContinuedSchema,
  turnEventSchema,
  turnParamsSchema,
  uiMessageChunkSchema,
} from "./schemas.js";
import { chatBodySchema, chatParamsSchema } from "./chat-schemas.js";
import { refuseBody } from "./validation.js";

const json = <T extends z.ZodType>(schema: T, description: string) => ({
  content: { "application/json": { schema } },
  description,
});
/**
 * A route that takes no body: none (or `{}`) passes; a body with a field (400) or one that is not JSON
 * (415) is refused before anything is looked up or done (`refuseBody`).
 */
const noBody = { middleware: refuseBody };
const notJson = { 415: json(errorSchema, "A body that is not JSON") };
const errors = {
  400: json(
    errorSchema,
    "Invalid input; the message names the field (`invalid_input`: a JSON body nested deeper than 64 levels)",
  ),
  401: json(errorSchema, "Missing or invalid bearer token (when auth is on)"),
  404: json(errorSchema, "Unknown, or not yours"),
};
/** The header of a refusal the client may retry (429, 503). */
const retryAfter = {
  "Retry-After": {
    description: "Seconds to wait before trying again",
    schema: { type: "integer" as const, minimum: 1 },
  },
};
/**
 * 429 for a per-principal limit (docs/semantics.md#isolation-and-limits); `codes` are the limits the route
 * can hit.
 */
const tooMany = (codes: string) => ({
  ...json(
    errorSchema,
    `A per-principal limit is reached (${codes}); the body names it (\`limit\`). Retry after \`Retry-After\` seconds`,
  ),
  headers: retryAfter,
});
/**
 * A turn or session start refused for now: the server is shutting down, or its database refuses writes
 * (a full disk, an I/O error).
 */
const notNow = {
  ...json(
    errorSchema,
    "`shutting_down`: the server is shutting down and starts no turn; `store_unavailable`: its database " +
      "refuses writes (a full disk, an I/O error) and it starts no turn or session. Retry after `Retry-After`",
  ),
  headers: retryAfter,
};
/** A change refused for now: the database refuses writes (a full disk, an I/O error). */
const storeUnavailable = {
  ...json(
    errorSchema,
    "`store_unavailable`: the database refuses writes (a full disk, an I/O error); retry after `Retry-After`",
  ),
  headers: retryAfter,
};
const eventStream = {
  content: { "text/event-stream": { schema: turnEventSchema } },
  description:
    "Server-Sent Events: first `retry: 2000`, then per event `id: <seq>`, `event: <type>`, `data: <TurnEvent " +
    "as JSON>` (the schema is that of one `data`); `ping` after every `PING_INTERVAL_MS` (15 s by " +
    "default) of silence; the stream ends after the terminal event (`turn_complete` or `turn_abort`)",
};

export const startTurnRoute = createRoute({
  operationId: "startTurn",
  method: "post",
  path: "/sessions/stream",
  summary: "Start a turn and stream its events",
  request: {
    query: emptyQuerySchema,
    body: { content: { "application/json": { schema: startTurnBodySchema } }, required: true },
  },
  responses: {
    200: eventStream,
    ...errors,
    400: json(
      errorSchema,
      "Invalid input; the message names the field. `agent_not_found`: `agentId` names no configured agent; " +
        "`unknown_provider`: `provider` has no key configured",
    ),
    409: json(
      errorSchema,
      "`session_busy`: the session already has a running turn; `agent_mismatch`: the session belongs to " +
        "another agent than `agentId`",
    ),
    413: json(errorSchema, "Body too large; sent with `Connection: close`"),
    415: json(errorSchema, "Content-Type is not application/json"),
    429: tooMany("`too_many_turns`: MAX_TURNS_PER_PRINCIPAL; `too_many_streams`: MAX_STREAMS_PER_PRINCIPAL"),
    503: notNow,
  },
});

export const historyRoute = createRoute({
  operationId: "getSessionHistory",
  method: "get",
  path: "/sessions/{id}/history",
  summary: "A session's canonical history and its turns",
  description:
    "Without parameters, every turn and block. With `limit` (1–100, default 20) or `before` (a turn id), " +
    "the newest `limit` turns started before `before`, oldest first, with their blocks, and " +
    "`nextBefore`: the `before` of the next older page (null on the oldest).",
  request: { params: sessionParamsSchema, query: historyQuerySchema },
  responses: {
    200: json(sessionHistorySchema, "Canonical history (a page of it with `limit` or `before`)"),
    ...errors,
  },
});

export const createSessionRoute = createRoute({
  operationId: "createSession",
  method: "post",
  path: "/sessions",
  summary: "Create an empty session (its first turn goes to POST /sessions/stream with its sessionId)",
  request: {
    query: emptyQuerySchema,
    body: { content: { "application/json": { schema: createSessionBodySchema } }, required: false },
  },
  responses: {
    201: json(createdSessionSchema, "Created"),
    ...errors,
    400: json(
      errorSchema,
      "Invalid input (the message names the field); `agent_not_found`: unknown `agentId`",
    ),
    503: notNow,
    415: json(errorSchema, "Not JSON"),
  },
});

export const listSessionsRoute = createRoute({
  operationId: "listSessions",
  method: "get",
  path: "/sessions",
  summary: "The caller's sessions, newest activity first, a page at a time",
  description:
    "`limit`: 1–100 (default 20). `cursor`: the `nextCursor` of the previous page; pages do not repeat " +
    "or skip a session when sessions are created meanwhile. `nextCursor` is null on the last page.",
  request: { query: listSessionsQuerySchema },
  responses: {
    200: json(sessionListSchema, "A page of sessions"),
    ...errors,
  },
});

export const getSessionRoute = createRoute({
  operationId: "getSession",
  method: "get",
  path: "/sessions/{id}",
  summary: "One session",
  request: { params: sessionParamsSchema, query: emptyQuerySchema },
  responses: { 200: json(sessionSchema, "The session"), ...errors },
});

export const renameSessionRoute = createRoute({
  operationId: "renameSession",
  method: "patch",
  path: "/sessions/{id}",
  summary: "Rename a session (title: 1–200 characters)",
  request: {
    params: sessionParamsSchema,
    query: emptyQuerySchema,
    body: { content: { "application/json": { schema: renameSessionBodySchema } }, required: true },
  },
  responses: {
    200: json(sessionSchema, "Renamed"),
    ...errors,
    415: json(errorSchema, "Not JSON"),
    503: storeUnavailable,
  },
});

export const deleteSessionRoute = createRoute({
  operationId: "deleteSession",
  method: "delete",
  path: "/sessions/{id}",
  summary: "Delete a session with its turns, history, events and trace",
  request: { params: sessionParamsSchema, query: emptyQuerySchema },
  ...noBody,
  responses: {
    200: json(deletedSessionSchema, "Deleted"),
    ...errors,
    ...notJson,
    409: json(errorSchema, "`session_busy`: a turn of the session is running; abort it or wait"),
    503: storeUnavailable,
  },
});

export const transcriptRoute = createRoute({
  operationId: "getTranscript",
  method: "get",
  path: "/sessions/{id}/transcript",
  summary: "The session rendered for a provider, with diagnostics",
  request: { params: sessionParamsSchema, query: transcriptQuerySchema },
  responses: {
    200: json(transcriptSchema, "Rendered transcript"),
    ...errors,
  },
});

export const stepModeRoute = createRoute({
  operationId: "setStepMode",
  method: "post",
  path: "/sessions/{id}/step-mode",
  summary: "Switch step mode for a session (off releases every pause at once)",
  request: {
    params: sessionParamsSchema,
    query: emptyQuerySchema,
    body: { content: { "application/json": { schema: stepModeBodySchema } }, required: true },
  },
  responses: {
    200: json(stepModeSwitchedSchema, "Switched"),
    ...errors,
    415: json(errorSchema, "Not JSON"),
    503: storeUnavailable,
  },
});

export const activeTurnsRoute = createRoute({
  operationId: "listActiveTurns",
  method: "get",
  path: "/turns/active",
  summary: "Running turns, their tools, pauses and zombies",
  request: { query: emptyQuerySchema },
  responses: {
    200: json(activeTurnsSchema, "The caller's running turns, and zombies"),
    ...errors,
  },
});

export const abortTurnRoute = createRoute({
  operationId: "abortTurn",
  method: "post",
  path: "/turns/{id}/abort",
  summary: "Abort a running turn",
  request: { params: turnParamsSchema, query: emptyQuerySchema },
  ...noBody,
  responses: { 200: json(turnAbortedSchema, "Aborted"), ...errors, ...notJson },
});

export const abortToolRoute = createRoute({
  operationId: "cancelTool",
  method: "post",
  path: "/turns/{id}/tools/{toolId}/abort",
  summary: "Cancel one running tool call; the turn continues",
  request: { params: toolParamsSchema, query: emptyQuerySchema },
  ...noBody,
  responses: { 200: json(toolCancelledSchema, "Cancelled"), ...errors, ...notJson },
});

export const approvalRoute = createRoute({
  operationId: "decideApproval",
  method: "post",
  path: "/turns/{id}/tools/{toolId}/approval",
  summary: "Approve (optionally with an edited input) or reject a tool call waiting for approval",
  description:
    "The call must be waiting (`tool_approval_request`). `input` replaces the call's input and is " +
    "checked against the tool's schema (400 naming the field; the call keeps waiting). Then " +
    "`tool_approval` is emitted and the call runs, or ends with `[REJECTED] <reason>`.",
  request: {
    params: toolParamsSchema,
    query: emptyQuerySchema,
    body: { content: { "application/json": { schema: approvalBodySchema } }, required: true },
  },
  responses: {
    200: json(approvalDecidedSchema, "Decided"),
    ...errors,
    409: json(
      errorSchema,
      "`not_waiting`: the call is not waiting for approval (decided, ended, or never asked)",
    ),
    415: json(errorSchema, "Not JSON"),
  },
});

export const continueRoute = createRoute({
  operationId: "continueTurn",
  method: "post",
  path: "/turns/{id}/continue",
  summary: "Continue a paused turn (step mode)",
  request: {
    params: turnParamsSchema,
    query: emptyQuerySchema,
    body: { content: { "application/json": { schema: continueBodySchema } }, required: true },
  },
  responses: { 200: json(turnContinuedSchema, "Continued"), ...errors, 415: json(errorSchema, "Not JSON") },
});

export const eventsRoute = createRoute({
  operationId: "followTurnEvents",
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
  operationId: "createStreamToken",
  method: "post",
  path: "/turns/{id}/stream-token",
  summary: "A short-lived token that opens this turn's event stream (`GET /turns/{id}/events?token=`)",
  request: {
    params: turnParamsSchema,
    query: emptyQuerySchema,
    body: { content: { "application/json": { schema: streamTokenBodySchema } }, required: false },
  },
  responses: {
    200: json(streamTokenResponseSchema, "The token"),
    ...errors,
    415: json(errorSchema, "Not JSON"),
    429: tooMany("`too_many_stream_tokens`: 256 live tokens per principal"),
  },
});

export const mcpServersRoute = createRoute({
  operationId: "listMcpServers",
  method: "get",
  path: "/mcp/servers",
  summary: "The configured MCP servers: transport, status, tools, last error, restarts",
  request: { query: emptyQuerySchema },
  responses: {
    200: json(mcpServerListSchema, "The MCP servers"),
    ...errors,
  },
});

export const traceRoute = createRoute({
  operationId: "getTurnTrace",
  method: "get",
  path: "/turns/{id}/trace",
  summary: "Every decision the framework made in a turn",
  request: { params: turnParamsSchema, query: emptyQuerySchema },
  responses: {
    200: json(traceSchema, "The trace"),
    ...errors,
  },
});

export const agentsRoute = createRoute({
  operationId: "listAgents",
  method: "get",
  path: "/agents",
  summary: "The agents turns can run as (`agentId`), with their provider, model, tools and approval",
  request: { query: emptyQuerySchema },
  responses: {
    200: json(agentListSchema, "The agents"),
    ...errors,
  },
});

/** The AI SDK UI message stream protocol v1 (docs/http-api.md#chat-routes-ai-sdk-usechat). */
const uiMessageStream = {
  content: { "text/event-stream": { schema: uiMessageChunkSchema } },
  description:
    "UI message stream protocol v1 (header `x-vercel-ai-ui-message-stream: v1`): `data: {json}` chunks " +
    "(`start`, `start-step`, `text-*`, `reasoning-*`, `tool-input-available`, `tool-output-*`, " +
    "`tool-approval-request`, transient `data-*`, `finish-step`, `finish` or `abort`), then `data: [DONE]`",
};

export const chatRoute = createRoute({
  operationId: "postChat",
  method: "post",
  path: "/chat",
  summary: "AI SDK useChat: run the newest user message as a turn of chat `id` and stream it",
  description:
    "`id` is the session: created on first use, owned by the caller. Only the newest user message is " +
    "read; the server keeps the history. Fields the transport's `body` option adds may name `agentId`, " +
    "`provider` and `model`.",
  request: {
    query: emptyQuerySchema,
    body: { content: { "application/json": { schema: chatBodySchema } }, required: true },
  },
  responses: {
    200: uiMessageStream,
    ...errors,
    409: json(
      errorSchema,
      "`session_busy`: a turn of the chat is running; `agent_mismatch`: the chat belongs to another agent",
    ),
    413: json(errorSchema, "Body too large; sent with `Connection: close`"),
    415: json(errorSchema, "Content-Type is not application/json"),
    429: tooMany("`too_many_turns`: MAX_TURNS_PER_PRINCIPAL; `too_many_streams`: MAX_STREAMS_PER_PRINCIPAL"),
    503: notNow,
  },
});

export const chatStreamRoute = createRoute({
  operationId: "resumeChat",
  method: "get",
  path: "/chat/{id}/stream",
  summary: "AI SDK useChat resume: the chat's running turn from its start; 204 when none runs",
  request: { params: chatParamsSchema, query: emptyQuerySchema },
  responses: {
    200: uiMessageStream,
    204: {
      description:
        "No turn of yours is running in the chat (an unknown chat, or another principal's, answers the same)",
    },
    400: errors[400],
    401: errors[401],
    429: tooMany("`too_many_streams`: MAX_STREAMS_PER_PRINCIPAL"),
  },
});

export const chatStopRoute = createRoute({
  operationId: "stopChat",
  method: "post",
  path: "/chat/{id}/stop",
  summary: "Abort the chat's running turn (reason `user`)",
  request: { params: chatParamsSchema, query: emptyQuerySchema },
  ...noBody,
  responses: { 200: json(chatStoppedSchema, "Aborted"), ...errors, ...notJson },
});
