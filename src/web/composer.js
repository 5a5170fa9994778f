// @ts-check
/**
 * The composer: the message box (Enter sends, Shift+Enter adds a line), Send, which posts
 * `{message, sessionId?, stepMode}` to `POST /api/sessions/stream` and follows the answer, and the
 * step-mode box (kept in localStorage; unchecking it during a turn releases a waiting pause).
 */
import { ApiError, api, describeError } from "./api-client.js";
import { addView, currentSessionId, currentView, setSession, updateControls } from "./conversation.js";
import { byTestId } from "./dom.js";
import { STORAGE_KEYS, loadSetting, saveSetting } from "./storage.js";
import { followTurn, handleTurnStarted } from "./turn-follower.js";
import { TurnView } from "./turn-view.js";

const composer = /** @type {HTMLFormElement} */ (byTestId("composer"));
const messageInput = /** @type {HTMLTextAreaElement} */ (byTestId("message-input"));
const stepModeInput = /** @type {HTMLInputElement} */ (byTestId("step-mode"));

/** @param {string} message */
async function send(message) {
  const view = new TurnView(message, handleTurnStarted);
  /** @type {{message: string, sessionId?: string, stepMode?: boolean}} */
  const body = { message };
  const sessionId = currentSessionId();
  if (sessionId) body.sessionId = sessionId;
  // explicit either way: the box, not the session's last setting, decides for this turn
  body.stepMode = stepModeInput.checked;
  addView(view);
  let response;
  try {
    response = await api("/api/sessions/stream", {
      method: "POST",
      body,
      headers: { Accept: "text/event-stream" },
      signal: view.controller.signal,
    });
  } catch (error) {
    const gone = error instanceof ApiError && error.code === "session_not_found";
    if (gone && sessionId && currentSessionId() === sessionId) {
      // deleted elsewhere (another tab): the next message starts a new session instead of failing again
      setSession(null);
      view.end("failed", "Not sent: this session was deleted. Send again to start a new session.");
    } else {
      view.end("failed", `Not sent: ${describeError(error)}`);
    }
    updateControls();
    return;
  }
  messageInput.value = "";
  await followTurn(view, response);
}

/**
 * Remembers the step-mode box; during a turn also switches the session's step mode on the server
 * (switching it off releases a waiting pause at once).
 * @param {boolean} enabled
 */
async function switchStepMode(enabled) {
  saveSetting(STORAGE_KEYS.stepMode, String(enabled));
  const view = currentView();
  if (!view || view.finished || !view.sessionId) return;
  try {
    await api(`/api/sessions/${encodeURIComponent(view.sessionId)}/step-mode`, {
      method: "POST",
      body: { enabled },
    });
  } catch (error) {
    view.note(`Could not switch step mode: ${describeError(error)}`);
  }
}

export function focusMessageInput() {
  messageInput.focus();
}

/** Restores the step-mode box from localStorage and wires the form, the Enter key and the box. */
export function setUpComposer() {
  stepModeInput.checked = loadSetting(STORAGE_KEYS.stepMode) === "true";
  stepModeInput.addEventListener("change", () => void switchStepMode(stepModeInput.checked));
  composer.addEventListener("submit", (event) => {
    event.preventDefault();
    const message = messageInput.value;
    const current = currentView();
    if (message.trim() === "" || (current && !current.finished)) return;
    void send(message);
  });
  messageInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      composer.requestSubmit();
    }
  });
}
