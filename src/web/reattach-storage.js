// @ts-check
/**
 * What a reload needs to reattach to the turn this tab is following:
 * `{turnId, sessionId, lastSeq, message, serverOffsetMs}` in sessionStorage while the turn runs,
 * forgotten once it has ended.
 */
import { restoreServerOffset, serverOffsetEstimate } from "./server-clock.js";
import { STORAGE_KEYS, readJson, writeJson } from "./storage.js";

/**
 * Saves what a reload needs to reattach to `view`'s turn, or forgets it once the turn has ended.
 * @param {import("./turn-view.js").TurnView} view
 */
export function rememberTurn(view) {
  if (!view.turnId) return;
  writeJson(
    sessionStorage,
    STORAGE_KEYS.turn,
    view.finished
      ? null
      : {
          turnId: view.turnId,
          sessionId: view.sessionId,
          lastSeq: view.lastSeq,
          message: view.message,
          // the replay after a reload is old news; the clock estimate from live events stays valid
          serverOffsetMs: serverOffsetEstimate(),
        },
  );
}

/**
 * The turn this tab was following before a reload, or null. Also restores the server clock estimate
 * saved with it.
 * @returns {{turnId: string, sessionId: string | undefined, message: string} | null}
 */
export function recallTurn() {
  const saved = readJson(sessionStorage, STORAGE_KEYS.turn);
  if (!saved || typeof saved.turnId !== "string") return null;
  if (typeof saved.serverOffsetMs === "number") restoreServerOffset(saved.serverOffsetMs);
  return {
    turnId: saved.turnId,
    sessionId: typeof saved.sessionId === "string" ? saved.sessionId : undefined,
    message: typeof saved.message === "string" ? saved.message : "",
  };
}
