// @ts-check
/**
 * The conversation's state on the page: the turn views in the log, the one this page is streaming,
 * the session the next message continues (kept in sessionStorage), and the controls that follow them —
 * Send, Stop turn (`POST /api/turns/:id/abort`) and the empty hint. The sessions sidebar listens for
 * session changes (`onSessionChange`) to refresh its list.
 */
import { api, describeError } from "./api-client.js";
import { byTestId, scrollToEndIfFollowing } from "./dom.js";
import { STORAGE_KEYS, readJson, writeJson } from "./storage.js";

/** @typedef {import("./turn-view.js").TurnView} TurnView */

const log = byTestId("log");
const emptyHint = byTestId("empty-hint");
const sendButton = /** @type {HTMLButtonElement} */ (byTestId("send"));
const turnCancelButton = /** @type {HTMLButtonElement} */ (byTestId("turn-cancel"));
const sessionLabel = byTestId("session-id");

/** @type {TurnView | null} the turn this page is streaming */
let current = null;
/** @type {TurnView[]} */
const views = [];
/** @type {string | null} */
let sessionId = null;
/** @type {((id: string | null) => void)[]} */
const sessionListeners = [];

/** The turn this page is streaming (or streamed last), if any. */
export function currentView() {
  return current;
}

/**
 * Every turn shown in the log, oldest first.
 * @returns {readonly TurnView[]}
 */
export function turnViews() {
  return views;
}

/** The session the next message continues, or null for a new one. */
export function currentSessionId() {
  return sessionId;
}

/** @param {string | null} id */
export function setSession(id) {
  sessionId = id;
  writeJson(sessionStorage, STORAGE_KEYS.sessionId, id);
  sessionLabel.textContent = id ? `session ${id}` : "new session";
  for (const listener of sessionListeners) listener(id);
}

/**
 * Calls `listener` with the new session id whenever the session changes (a turn_start included).
 * @param {(id: string | null) => void} listener
 */
export function onSessionChange(listener) {
  sessionListeners.push(listener);
}

/** Tells the session listeners that the current session changed on the server (a turn ended). */
export function announceSessionActivity() {
  for (const listener of sessionListeners) listener(sessionId);
}

/** Empties the log: stops following every turn in it (the turns go on on the server). */
export function clearLog() {
  for (const view of views) view.controller.abort();
  views.length = 0;
  current = null;
  log.replaceChildren();
  updateControls();
}

/** The session this tab had before a reload, or null. */
export function savedSessionId() {
  const saved = readJson(sessionStorage, STORAGE_KEYS.sessionId);
  return typeof saved === "string" ? saved : null;
}

export function updateControls() {
  const busy = current !== null && !current.finished;
  sendButton.disabled = busy;
  turnCancelButton.hidden = !busy;
  turnCancelButton.disabled = !busy || !current?.turnId;
  emptyHint.hidden = views.length > 0;
}

/**
 * Appends a turn to the log and makes it the one this page is streaming.
 * @param {TurnView} view
 */
export function addView(view) {
  views.push(view);
  log.append(view.element);
  current = view;
  updateControls();
  scrollToEndIfFollowing();
}

async function cancelTurn() {
  if (!current?.turnId || current.finished) return;
  turnCancelButton.disabled = true;
  try {
    await api(`/api/turns/${encodeURIComponent(current.turnId)}/abort`, { method: "POST" });
  } catch (error) {
    current.note(`Could not stop the turn: ${describeError(error)}`);
    updateControls();
  }
}

/** Wires Stop turn. */
export function setUpTurnControls() {
  turnCancelButton.addEventListener("click", () => void cancelTurn());
}
