/** The API routes of DESIGN.md §3: sessions, turns and operations. */
import { Hono } from "hono";
import type { Config } from "../config/schema.js";
import type { HistoryStore } from "../history/store.js";
import type { TurnManager } from "../turns/manager.js";
import { HttpError, turnNotFound } from "./http-error.js";
import {
  emptyQuerySchema,
  eventsQuerySchema,
  lastEventIdSchema,
  sessionParamsSchema,
  toolParamsSchema,
  startTurnBodySchema,
  turnParamsSchema,
} from "./schemas.js";
import { streamTurnEvents } from "./turn-stream.js";
import { parseWith, readJsonBody } from "./validation.js";

export type RouteDeps = { manager: TurnManager; store: HistoryStore; config: Config };

export function apiRoutes(deps: RouteDeps): Hono {
  const { manager, store } = deps;
  const streamDeps = { manager, store, pingIntervalMs: deps.config.stream.pingIntervalMs };
  const api = new Hono();

  api.post("/sessions/stream", async (context) => {
    const body = await readJsonBody(context, startTurnBodySchema);
    const turn = manager.startTurn(body);
    return streamTurnEvents(streamDeps, turn.turnId, 0);
  });

  api.get("/sessions/:id/history", (context) => {
    const { id } = parseWith(sessionParamsSchema, context.req.param(), "params");
    const session = store.getSession(id);
    if (!session) throw new HttpError(404, "session_not_found", `Session not found: ${id}`);
    return context.json({
      sessionId: session.id,
      agentId: session.agentId,
      turns: store.listTurns({ sessionId: id }),
      blocks: store.getHistory(id),
    });
  });

  api.get("/turns/active", (context) => {
    parseWith(emptyQuerySchema, context.req.query(), "query");
    return context.json({ turns: manager.getActiveTurnDetails(), zombies: manager.getZombies() });
  });

  api.post("/turns/:id/tools/:toolId/abort", (context) => {
    const { id, toolId } = parseWith(toolParamsSchema, context.req.param(), "params");
    if (!manager.abortTool(id, toolId)) {
      throw new HttpError(
        404,
        "tool_not_found",
        "Tool call not found, not running, or its turn already completed",
      );
    }
    return context.json({ ok: true, turnId: id, toolId });
  });

  api.get("/turns/:id/trace", (context) => {
    const { id } = parseWith(turnParamsSchema, context.req.param(), "params");
    parseWith(emptyQuerySchema, context.req.query(), "query");
    const turn = store.getTurn(id);
    if (!turn) throw new HttpError(404, "turn_not_found", `Turn not found: ${id}`);
    return context.json({ turnId: id, status: turn.status, entries: store.listTrace(id) });
  });

  api.post("/turns/:id/abort", (context) => {
    const { id } = parseWith(turnParamsSchema, context.req.param(), "params");
    if (!manager.abortTurn(id, "user")) throw turnNotFound();
    return context.json({ ok: true, turnId: id });
  });

  api.get("/turns/:id/events", (context) => {
    const { id } = parseWith(turnParamsSchema, context.req.param(), "params");
    const query = parseWith(eventsQuerySchema, context.req.query(), "query");
    const header = context.req.header("last-event-id");
    const afterSeq =
      header === undefined
        ? (query.lastEventId ?? 0)
        : parseWith(lastEventIdSchema, header, "headers.last-event-id");
    return streamTurnEvents(streamDeps, id, afterSeq);
  });

  return api;
}
