/**
 * The AI SDK's `useChat` routes (docs/http-api.md#chat-routes-ai-sdk-usechat): `POST /api/chat` runs the
 * user's new message as a turn of the chat (a session with the client's id, created on first use and owned
 * by the caller) and answers with the UI message stream; `GET /api/chat/:id/stream` resumes the chat's
 * running turn from its start (204 when none of yours runs, an unknown chat's included);
 * `POST /api/chat/:id/stop` aborts it. Someone else's chat answers exactly like an unknown one; the
 * per-principal turn and stream limits (§10) apply as on every route.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { HistoryStore } from "../history/store.js";
import type { StartTurnRequest, TurnManager } from "../turns/manager.js";
import { canAccess } from "./auth.js";
import { newUserMessageText } from "./chat-schemas.js";
import { HttpError } from "./http-error.js";
import { chatRoute, chatStopRoute, chatStreamRoute } from "./route-definitions.js";
import type { ApiEnv } from "./routes.js";
import { nodeResponseOf, streamOrHead } from "./sse.js";
import type { StreamRelease } from "./stream-limits.js";
import { uiMessageResponse } from "./ui-message-response.js";
import { UI_MESSAGE_STREAM_HEADERS } from "./ui-message-stream.js";
import { validationHook } from "./validation.js";

export type ChatRouteDeps = {
  manager: TurnManager;
  store: HistoryStore;
  pingIntervalMs: number;
  /** A place for one more stream of the principal (the limit every route shares); else throws 429. */
  acquireStream: (principal: string | null) => StreamRelease;
  /** Starts a turn to stream under the principal's turn and stream limits (429 beyond either). */
  startStreamedTurn: (request: StartTurnRequest & { principal: string | null }) => {
    turnId: string;
    release: StreamRelease;
  };
};

/** The `/chat` routes, to mount on the API next to the others. */
export function chatRoutes(deps: ChatRouteDeps): OpenAPIHono<ApiEnv> {
  const { manager, store } = deps;
  const streamDeps = { manager, store, pingIntervalMs: deps.pingIntervalMs };
  const chat = new OpenAPIHono<ApiEnv>({ defaultHook: validationHook });

  /** Whether the chat exists and is the caller's (the owner always comes from the database). */
  const isOwnChat = (principal: string | null, chatId: string) => {
    const owner = store.sessionOwner(chatId);
    return owner !== undefined && canAccess(principal, owner);
  };
  /** 404 unless the chat exists and is the caller's. */
  const ownChat = (principal: string | null, chatId: string) => {
    if (!isOwnChat(principal, chatId)) {
      throw new HttpError(404, "session_not_found", `Chat not found: ${chatId}`);
    }
  };

  chat.openapi(chatRoute, (context) => {
    const body = context.req.valid("json");
    const principal = context.get("principal");
    // a new id becomes the caller's chat; an existing one must already be theirs
    const owner = store.sessionOwner(body.id);
    if (owner !== undefined && !canAccess(principal, owner)) {
      throw new HttpError(404, "session_not_found", `Chat not found: ${body.id}`);
    }
    const { turnId, release } = deps.startStreamedTurn({
      // validated: the last message is the user's, with text
      message: newUserMessageText(body.messages) ?? "",
      sessionId: body.id,
      createSession: true,
      agentId: body.agentId,
      provider: body.provider,
      model: body.model,
      principal,
    });
    return uiMessageResponse(streamDeps, turnId, release, nodeResponseOf(context));
  });

  chat.openapi(chatStreamRoute, (context) => {
    const { id } = context.req.valid("param");
    const principal = context.get("principal");
    // useChat's `resume` asks on mount, before a first message has made the chat: an unknown chat has
    // no running turn either (and another principal's answers the same, so it tells nothing)
    const turnId = isOwnChat(principal, id) ? manager.runningTurnIdOf(id) : undefined;
    if (turnId === undefined) return context.body(null, 204);
    return streamOrHead(
      context.req.method,
      deps.acquireStream(principal),
      (release) => uiMessageResponse(streamDeps, turnId, release, nodeResponseOf(context)),
      UI_MESSAGE_STREAM_HEADERS,
    );
  });

  chat.openapi(chatStopRoute, (context) => {
    const { id } = context.req.valid("param");
    ownChat(context.get("principal"), id);
    const turnId = manager.runningTurnIdOf(id);
    if (turnId === undefined || !manager.abortTurn(turnId, "user")) {
      throw new HttpError(404, "turn_not_found", `No turn of chat ${id} is running`);
    }
    return context.json({ ok: true as const, sessionId: id, turnId }, 200);
  });

  return chat;
}
