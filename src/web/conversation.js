// @ts-check
/**
 * The conversation's state on the page: the turn views in the log, the one this page is streaming,
 * the session the next message continues (kept in sessionStorage), and the controls that follow them —
 * Send, Stop turn (`POST /api/turns/:id/abort`), New session and the empty hint.
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
const newSessionButton = /** @type {HTMLButtonElement} */ (byTestId("new-session"));

/** @type {TurnView | null} the turn this page is streaming */
let current = null;
/** @type {TurnView[]} */
const views = [];
/** @type {string | null} */
let sessionId = null;

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
  sessionLabel.textContent = id ? `session ${id}` : "no session yet";
}

/** Continues the session this tab had before a reload. */
export function restoreSession() {
  const savedSession = readJson(sessionStorage, STORAGE_KEYS.sessionId);
  setSession(typeof savedSession === "string" ? savedSession : null);
}

export function updateControls() {
  const busy = current !== null && !current.finished;
  sendButton.disabled = busy;
  newSessionButton.disabled = busy;
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

/**
 * Wires Stop turn and New session; `onNewSession` runs after the session is forgotten.
 * @param {() => void} onNewSession
 */
export function setUpTurnControls(onNewSession) {
  turnCancelButton.addEventListener("click", () => void cancelTurn());
  newSessionButton.addEventListener("click", () => {
    setSession(null);
    onNewSession();
  });
}
