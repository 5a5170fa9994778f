/**
 * The API handlers of docs/http-api.md, registered on the declarations of `route-definitions.ts`.
 * Ownership: a principal sees and controls only its own sessions, turns and pauses; anything else is
 * 404, exactly like something that does not exist, and found by the same lookups. Limits (§10): a
 * principal runs at most `maxTurnsPerPrincipal` turns and holds at most `maxStreamsPerPrincipal` SSE
 * streams; beyond, 429 with `Retry-After`.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { TypedResponse } from "hono";
import type { JSONParsed } from "hono/utils/types";
import type { Logger } from "pino";
import type { Config } from "../config/schema.js";
import type { HistoryBlock, SessionSummary } from "../history/model.js";
import type { HistoryStore } from "../history/store.js";
import type { McpServerInfo } from "../mcp/index.js";
import { withFields } from "../objects.js";
import type { StartTurnRequest, TurnManager } from "../turns/manager.js";
import { canAccess, type AuthVariables } from "./auth.js";
import { HttpError, tooManyRequests, turnNotFound } from "./http-error.js";
import {
  abortToolRoute,
  agentsRoute,
  abortTurnRoute,
  activeTurnsRoute,
  approvalRoute,
  continueRoute,
  createSessionRoute,
  deleteSessionRoute,
  eventsRoute,
  getSessionRoute,
  historyRoute,
  listSessionsRoute,
  renameSessionRoute,
  mcpServersRoute,
  startTurnRoute,
  stepModeRoute,
  streamTokenRoute,
  traceRoute,
  transcriptRoute,
} from "./route-definitions.js";
import { renderProviderRequest } from "../history/render/index.js";
import { StreamLimits } from "./stream-limits.js";
import { chatRoutes } from "./chat-routes.js";
import type { StreamTokens } from "./stream-tokens.js";
import { nodeResponseOf, streamOrHead } from "./sse.js";
import { jsonWithLongArray } from "./json-stream.js";
import { hasEverything, streamTurnEvents } from "./turn-stream.js";
import { validationHook } from "./validation.js";
import { encodeSessionCursor, type SessionHistory } from "./schemas.js";

/** Sessions a page lists when the request names no `limit`. */
const DEFAULT_SESSIONS_PAGE_SIZE = 20;
/** Turns a page of history holds when the request gives `before` but no `limit`. */
const DEFAULT_HISTORY_PAGE_TURNS = 20;

export type RouteDeps = {
  manager: TurnManager;
  store: HistoryStore;
  config: Config;
  logger: Logger;
  /** Issues the tokens `streamTokenAuth` (in front of these routes) accepts on `/events`. */
  streamTokens: StreamTokens;
  /** The configured MCP servers (none: an empty list). */
  mcp?: { list(): McpServerInfo[] };
};

export type ApiEnv = { Variables: AuthVariables };

/** Looked up in place of an unknown turn's session: no session has an empty id. */
const NO_SESSION_ID = "";

export function apiRoutes(deps: RouteDeps): OpenAPIHono<ApiEnv> {
  const { manager, store } = deps;
  const { maxTurnsPerPrincipal, maxStreamsPerPrincipal } = deps.config.limits;
  const streams = new StreamLimits(maxStreamsPerPrincipal);
  const streamDeps = { manager, store, pingIntervalMs: deps.config.stream.pingIntervalMs };
  const api = new OpenAPIHono<ApiEnv>({ defaultHook: validationHook });

  /** The session, if it exists and the caller may see it. */
  const ownSession = (principal: string | null, sessionId: string) => {
    const session = store.getSession(sessionId);
    if (!session || !canAccess(principal, session.principal)) {
      throw new HttpError(404, "session_not_found", `Session not found: ${sessionId}`);
    }
    return session;
  };
  /**
   * The turn, if it exists and the caller may see it. An unknown turn and someone else's take the same
   * path (the turn, then a session: the turn's, or one that cannot exist; then one comparison), so
   * neither the answer nor the work done tells "exists but not yours" from "unknown".
   */
  const ownTurn = (principal: string | null, turnId: string) => {
    const turn = store.getTurn(turnId);
    // sessionOwner always asks the database: a session held in memory must not answer faster
    const visible = canAccess(principal, store.sessionOwner(turn?.sessionId ?? NO_SESSION_ID) ?? null);
    return turn !== undefined && visible ? turn : undefined;
  };
  /** A place for one more SSE stream of `principal`, to release when the stream ends; else 429. */
  const acquireStream = (principal: string | null) => {
    const release = streams.acquire(principal);
    if (release) return release;
    throw tooManyRequests(
      "too_many_streams",
      `Too many open streams: at most ${maxStreamsPerPrincipal} per principal (MAX_STREAMS_PER_PRINCIPAL); ` +
        "close one or retry later",
      maxStreamsPerPrincipal,
    );
  };

  // the AI SDK's useChat (docs/http-api.md#chat-routes-ai-sdk-usechat), under the same stream and turn limits
  /**
   * Starts a turn that a stream will follow, under both per-principal limits: the turn count first,
   * then the stream's place, taken before the turn starts (a turn never runs without the stream that
   * was asked for) and given back if the start fails. Nothing awaits between the count and the start,
   * so concurrent requests cannot both slip under it.
   */
  const startStreamedTurn = (request: StartTurnRequest & { principal: string | null }) => {
    if (manager.runningTurnsOf(request.principal) >= maxTurnsPerPrincipal) {
      throw tooManyRequests(
        "too_many_turns",
        `Too many running turns: at most ${maxTurnsPerPrincipal} per principal (MAX_TURNS_PER_PRINCIPAL); ` +
          "retry when one ends",
        maxTurnsPerPrincipal,
      );
    }
    const release = acquireStream(request.principal);
    try {
      return { turnId: manager.startTurn(request).turnId, release };
    } catch (error) {
      release();
      throw error;
    }
  };

  api.route("/", chatRoutes({ ...streamDeps, acquireStream, startStreamedTurn }));

  api.openapi(startTurnRoute, (context) => {
    const body = context.req.valid("json");
    const principal = context.get("principal");
    if (body.sessionId !== undefined) ownSession(principal, body.sessionId);
    const { turnId, release } = startStreamedTurn(withFields(body, { principal }));
    return streamTurnEvents(streamDeps, turnId, 0, release, nodeResponseOf(context));
  });

  /** A session as the sessions routes show it. */
  const sessionJson = (session: SessionSummary) => ({
    sessionId: session.id,
    agentId: session.agentId,
    title: session.title,
    createdAt: session.createdAt,
    updatedAt: session.updatedAt,
    turnCount: session.turnCount,
    running: manager.isSessionRunning(session.id),
  });
  /** The session with its turn count, if it exists and the caller may see it. */
  const ownSessionSummary = (principal: string | null, sessionId: string) => {
    const session = store.getSessionSummary(sessionId);
    if (!session || !canAccess(principal, session.principal)) {
      throw new HttpError(404, "session_not_found", `Session not found: ${sessionId}`);
    }
    return session;
  };

  api.openapi(createSessionRoute, (context) => {
    const { agentId, title } = context.req.valid("json") ?? {};
    // the agent is resolved as a turn's: an unknown one is 400 agent_not_found once agents are configured
    const session = manager.createSession(context.get("principal"), agentId, title);
    return context.json(
      {
        sessionId: session.id,
        agentId: session.agentId,
        title: session.title,
        createdAt: session.createdAt,
      },
      201,
    );
  });

  api.openapi(listSessionsRoute, (context) => {
    const { limit, cursor } = context.req.valid("query");
    const page = store.listSessions(context.get("principal"), limit ?? DEFAULT_SESSIONS_PAGE_SIZE, cursor);
    return context.json(
      {
        sessions: page.sessions.map(sessionJson),
        nextCursor: page.next ? encodeSessionCursor(page.next) : null,
      },
      200,
    );
  });

  api.openapi(getSessionRoute, (context) => {
    const { id } = context.req.valid("param");
    return context.json(sessionJson(ownSessionSummary(context.get("principal"), id)), 200);
  });

  api.openapi(renameSessionRoute, (context) => {
    const { id } = context.req.valid("param");
    const { title } = context.req.valid("json");
    const principal = context.get("principal");
    ownSessionSummary(principal, id);
    manager.requireWritableStore();
    store.renameSession(id, title);
    manager.requireWritableStore();
    return context.json(sessionJson(ownSessionSummary(principal, id)), 200);
  });

  api.openapi(deleteSessionRoute, (context) => {
    const { id } = context.req.valid("param");
    ownSessionSummary(context.get("principal"), id);
    // nothing awaits between this check and the delete: no turn can start in between
    if (manager.isSessionRunning(id)) {
      throw new HttpError(
        409,
        "session_busy",
        `Session ${id} has a running turn; abort it or wait for it to end`,
      );
    }
    manager.requireWritableStore();
    store.deleteSession(id);
    return context.json({ ok: true as const, sessionId: id }, 200);
  });

  api.openapi(historyRoute, (context) => {
    const { id } = context.req.valid("param");
    const { limit, before } = context.req.valid("query");
    const session = ownSession(context.get("principal"), id);
    const fields = { sessionId: session.id, agentId: session.agentId, stepMode: session.stepMode };
    // the blocks are written a slice at a time (json-stream.ts): one turn may hold hundreds of megabytes
    // (typed as the JSON it carries: a JSON route's handler is typed by what `context.json` returns)
    const history = (
      head: Omit<SessionHistory, "blocks" | "nextBefore">,
      blocks: readonly HistoryBlock[],
      tail: Pick<SessionHistory, "nextBefore"> = {},
    ) =>
      new Response(jsonWithLongArray(head, "blocks", blocks, tail), {
        status: 200,
        headers: { "content-type": "application/json" },
      }) as unknown as TypedResponse<JSONParsed<SessionHistory>, 200, "json">;
    if (limit === undefined && before === undefined) {
      return history({ ...fields, turns: store.listTurns({ sessionId: id }) }, [...store.getHistory(id)]);
    }
    const page = store.pageTurns(id, limit ?? DEFAULT_HISTORY_PAGE_TURNS, before);
    if (!page) throw new HttpError(400, "invalid_input", `before: no turn ${before} in session ${id}`);
    return history({ ...fields, turns: page.turns }, page.blocks, { nextBefore: page.nextBefore });
  });

  api.openapi(transcriptRoute, (context) => {
    const { id } = context.req.valid("param");
    const { provider, model } = context.req.valid("query");
    const session = ownSession(context.get("principal"), id);
    const settings = deps.config.providers[provider];
    const agent = manager.agents.get(session.agentId);
    const rendered = renderProviderRequest(store.getHistory(id), provider, {
      thinking:
        provider === "anthropic"
          ? deps.config.providers.anthropic.thinkingBudgetTokens > 0
          : provider === "kimi" && deps.config.providers.kimi.thinking,
      // the model the session's next turn on this provider uses, unless the query names one
      model: model ?? (agent && manager.agents.modelOf(agent, provider)) ?? settings.model,
      budgetTokens: settings.contextBudgetTokens,
      // the session's agent's instructions, placed as the provider gets them (`system` or a leading message)
      system: agent?.instructions,
    });
    return context.json(
      {
        sessionId: id,
        provider,
        format: rendered.format,
        thinking: rendered.thinking,
        ...(rendered.format === "anthropic-messages" && rendered.system !== undefined
          ? { system: rendered.system }
          : {}),
        messages: rendered.messages,
        diagnostics: rendered.diagnostics,
      },
      200,
    );
  });

  api.openapi(stepModeRoute, (context) => {
    const { id } = context.req.valid("param");
    const { enabled } = context.req.valid("json");
    ownSession(context.get("principal"), id);
    manager.setSessionStepMode(id, enabled);
    return context.json({ ok: true as const, sessionId: id, stepMode: enabled }, 200);
  });

  api.openapi(activeTurnsRoute, (context) => {
    const principal = context.get("principal");
    const turns = manager
      .getActiveTurnDetails()
      .filter((turn) => canAccess(principal, manager.get(turn.turnId)?.principal ?? null));
    const zombies = manager.getZombies().filter((zombie) => ownTurn(principal, zombie.turnId) !== undefined);
    return context.json({ turns, zombies }, 200);
  });

  api.openapi(abortTurnRoute, (context) => {
    const { id } = context.req.valid("param");
    if (!ownTurn(context.get("principal"), id) || !manager.abortTurn(id, "user")) throw turnNotFound();
    return context.json({ ok: true as const, turnId: id }, 200);
  });

  api.openapi(abortToolRoute, (context) => {
    const { id, toolId } = context.req.valid("param");
    if (!ownTurn(context.get("principal"), id) || !manager.abortTool(id, toolId)) {
      throw new HttpError(
        404,
        "tool_not_found",
        "Tool call not found, not running, or its turn already completed",
      );
    }
    return context.json({ ok: true as const, turnId: id, toolId }, 200);
  });

  api.openapi(approvalRoute, (context) => {
    const { id, toolId } = context.req.valid("param");
    const decision = context.req.valid("json");
    if (!ownTurn(context.get("principal"), id)) throw turnNotFound();
    const outcome = manager.decideApproval(id, toolId, decision);
    if (!outcome.accepted && outcome.problem === "invalid_input") {
      throw new HttpError(400, "invalid_input", outcome.message);
    }
    if (!outcome.accepted) {
      throw new HttpError(409, "not_waiting", `Tool call ${toolId} is not waiting for approval`);
    }
    return context.json({ ok: true as const, turnId: id, toolId, decision: decision.decision }, 200);
  });

  api.openapi(continueRoute, (context) => {
    const { id } = context.req.valid("param");
    const { pauseId } = context.req.valid("json");
    if (!ownTurn(context.get("principal"), id) || !manager.continueTurn(id, pauseId)) {
      throw new HttpError(
        404,
        "pause_not_found",
        "Pause not found: the turn is not waiting in it (or not yours)",
      );
    }
    return context.json({ ok: true as const, turnId: id, pauseId }, 200);
  });

  api.openapi(eventsRoute, (context) => {
    const { id } = context.req.valid("param");
    const query = context.req.valid("query");
    const headers = context.req.valid("header");
    const principal = context.get("principal");
    if (!ownTurn(principal, id)) throw new HttpError(404, "turn_not_found", `Turn not found: ${id}`);
    const afterSeq = headers["last-event-id"] ?? query.lastEventId ?? 0;
    // before taking a stream's place: a client that has it all must not be refused for the limit
    if (hasEverything(streamDeps, id, afterSeq)) return context.body(null, 204);
    return streamOrHead(context.req.method, acquireStream(principal), (release) =>
      streamTurnEvents(streamDeps, id, afterSeq, release, nodeResponseOf(context)),
    );
  });

  api.openapi(streamTokenRoute, (context) => {
    const { id } = context.req.valid("param");
    const { ttlSeconds } = context.req.valid("json");
    const principal = context.get("principal");
    if (!ownTurn(principal, id)) throw new HttpError(404, "turn_not_found", `Turn not found: ${id}`);
    const issued = deps.streamTokens.issue(id, principal, ttlSeconds);
    // the token itself is a credential: never logged
    deps.logger.debug({ turnId: id, principal, expiresAt: issued.expiresAt }, "stream token issued");
    // a credential: no cache may keep it
    return context.json(issued, 200, { "Cache-Control": "no-store" });
  });

  api.openapi(mcpServersRoute, (context) => {
    return context.json({ servers: deps.mcp?.list() ?? [] }, 200);
  });

  api.openapi(agentsRoute, (context) => context.json({ agents: manager.agents.list() }, 200));

  api.openapi(traceRoute, (context) => {
    const { id } = context.req.valid("param");
    const turn = ownTurn(context.get("principal"), id);
    if (!turn) throw new HttpError(404, "turn_not_found", `Turn not found: ${id}`);
    return context.json({ turnId: id, status: turn.status, entries: store.listTrace(id) }, 200);
  });

  return api;
}
