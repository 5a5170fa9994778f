/** Store fixtures shared by the history-store tests. */
import type { SqliteHistoryStore } from "../../src/history/sqlite-store.js";

/** A session (created when it does not exist) with one running turn. */
export function startTurn(
  store: SqliteHistoryStore,
  turnId = "turn_1",
  sessionId = "ses_1",
  { startedAt = 1, userMessage = "go" }: { startedAt?: number; userMessage?: string } = {},
): void {
  if (!store.getSession(sessionId)) store.createSession(sessionId, "default");
  store.beginTurn({
    id: turnId,
    sessionId,
    agentId: "default",
    provider: "scripted",
    model: "scripted-1",
    startedAt,
    userMessage,
  });
}
