// @ts-check
/**
 * The sessions sidebar: the principal's sessions (`GET /api/sessions`, refreshed every 5 s and after
 * each turn), New with the agent picked from `GET /api/agents` (`POST /api/sessions`), switching,
 * renaming (`PATCH /api/sessions/:id`) and deleting (`DELETE /api/sessions/:id`). Opening a session
 * restores its conversation from `GET /api/sessions/:id/history` (the newest turns) and reattaches to
 * its running turn through the turn follower.
 */
import { ServerUnreachableError, api, describeError } from "./api-client.js";
import { showConnection } from "./connection-banner.js";
import {
  addView,
  clearLog,
  currentSessionId,
  onSessionChange,
  setSession,
  turnViews,
  updateControls,
} from "./conversation.js";
import { byTestId, element } from "./dom.js";
import { reattach } from "./turn-follower.js";
import { TurnView } from "./turn-view.js";

const SESSIONS_POLL_INTERVAL_MS = 5_000;
/** Sessions listed in the sidebar (the API's largest page). */
const SESSIONS_LISTED = 100;
/** Turns restored when a session is opened (the newest). */
const HISTORY_TURNS = 50;

const sessionList = byTestId("session-list");
const sessionEmpty = byTestId("session-empty");
const agentSelect = /** @type {HTMLSelectElement} */ (byTestId("agent-select"));
const newSessionButton = /** @type {HTMLButtonElement} */ (byTestId("new-session"));

/** @type {any[]} the last list the server gave */
let sessions = [];
/** The id of the session whose title is being edited (the list is not redrawn meanwhile). */
let renaming = /** @type {string | null} */ (null);
let listRequests = 0;
let listRendered = 0;

/** Fetches the session list and redraws the sidebar; failures show their banner. */
export async function refreshSessions() {
  const request = ++listRequests;
  try {
    const response = await api(`/api/sessions?limit=${SESSIONS_LISTED}`);
    const body = await response.json();
    if (request < listRendered) return;
    listRendered = request;
    sessions = Array.isArray(body?.sessions) ? body.sessions : [];
    renderSessions();
  } catch {
    // the 401 or unreachable banner says why; the next poll or Retry tries again
  }
}

function renderSessions() {
  if (renaming) return;
  const current = currentSessionId();
  sessionList.replaceChildren(
    ...sessions.map((session) => sessionItem(session, session.sessionId === current)),
  );
  sessionEmpty.hidden = sessions.length > 0;
}

/**
 * @param {any} session
 * @param {boolean} isCurrent
 */
function sessionItem(session, isCurrent) {
  const title = session.title || "Untitled session";
  const open = element("button", {
    className: "session-open",
    testId: "session-open",
    text: `${session.running ? "● " : ""}${title}`,
    attributes: { type: "button", title: `${title} · ${session.agentId} · ${session.turnCount} turns` },
  });
  open.addEventListener("click", () => void openSession(session.sessionId));
  const rename = element("button", {
    className: "small",
    testId: "session-rename",
    text: "Rename",
    attributes: { type: "button", "aria-label": `Rename ${title}` },
  });
  const remove = element("button", {
    className: "small danger",
    testId: "session-delete",
    text: "Delete",
    attributes: { type: "button", "aria-label": `Delete ${title}` },
  });
  const item = element(
    "li",
    {
      className: "session-item",
      testId: "session-item",
      attributes: { "data-session-id": session.sessionId, "aria-current": String(isCurrent) },
    },
    open,
    rename,
    remove,
  );
  rename.addEventListener("click", () => startRename(item, session));
  remove.addEventListener("click", () => void deleteSession(session));
  return item;
}

/**
 * Replaces the item's title with a text field; Enter saves (`PATCH`), Escape cancels.
 * @param {HTMLElement} item
 * @param {any} session
 */
function startRename(item, session) {
  renaming = session.sessionId;
  const input = /** @type {HTMLInputElement} */ (
    element("input", {
      className: "session-rename-input",
      testId: "session-rename-input",
      attributes: { type: "text", maxlength: "200", "aria-label": "New title" },
    })
  );
  input.value = session.title ?? "";
  const form = element("form", { className: "session-rename-form" }, input);
  form.style.display = "contents";
  item.replaceChildren(form);
  input.focus();
  input.select();
  let finished = false;
  const finish = () => {
    finished = true;
    renaming = null;
    renderSessions();
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    // Enter, then the blur of the field going away: one PATCH
    if (finished) return;
    finished = true;
    const title = input.value.trim();
    if (title === "") return finish();
    try {
      await api(`/api/sessions/${encodeURIComponent(session.sessionId)}`, {
        method: "PATCH",
        body: { title },
      });
      session.title = title;
    } catch (error) {
      showConnection(`Could not rename the session: ${describeError(error)}`);
    }
    finish();
    void refreshSessions();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") finish();
  });
  input.addEventListener("blur", () => {
    if (!finished && form.isConnected) form.requestSubmit();
  });
}

/** @param {any} session */
async function deleteSession(session) {
  if (!window.confirm(`Delete "${session.title || session.sessionId}" with its whole history?`)) return;
  try {
    await api(`/api/sessions/${encodeURIComponent(session.sessionId)}`, { method: "DELETE" });
  } catch (error) {
    showConnection(`Could not delete the session: ${describeError(error)}`);
    return;
  }
  showConnection("");
  if (session.sessionId === currentSessionId()) {
    clearLog();
    setSession(null);
  }
  void refreshSessions();
}

/** Creates an empty session for the picked agent and opens it. */
async function createSession() {
  newSessionButton.disabled = true;
  try {
    const response = await api("/api/sessions", {
      method: "POST",
      body: { agentId: agentSelect.value || undefined },
    });
    const created = await response.json();
    clearLog();
    setSession(created.sessionId);
    showConnection("");
  } catch (error) {
    showConnection(`Could not create a session: ${describeError(error)}`);
  } finally {
    newSessionButton.disabled = false;
  }
}

/** Fills the agent picker from `GET /api/agents` (the built-in `default` when none is configured). */
async function loadAgents() {
  try {
    const response = await api("/api/agents");
    const body = await response.json();
    const agents = Array.isArray(body?.agents) && body.agents.length > 0 ? body.agents : [{ id: "default" }];
    agentSelect.replaceChildren(
      ...agents.map((/** @type {any} */ agent) =>
        element("option", {
          text: agent.description ? `${agent.id} — ${agent.description}` : agent.id,
          attributes: { value: agent.id },
        }),
      ),
    );
  } catch {
    // the banner says why; Retry loads them again
  }
}

/**
 * Shows `sessionId`'s conversation: its newest turns from the stored history, and its running turn
 * (if any) followed live from its event log.
 * @param {string} sessionId
 */
export async function openSession(sessionId) {
  // The session this page follows live stays as it is: reopening it (its sidebar entry, Retry, a saved
  // token) would cut the turn's stream, which the server takes for the client leaving, and aborts it.
  if (sessionId === currentSessionId() && turnViews().some((view) => !view.finished)) return;
  clearLog();
  setSession(sessionId);
  let body;
  try {
    const response = await api(
      `/api/sessions/${encodeURIComponent(sessionId)}/history?limit=${HISTORY_TURNS}`,
    );
    body = await response.json();
  } catch (error) {
    if (error instanceof ServerUnreachableError) return; // the banner's Retry opens it again
    showConnection(`Could not open the session: ${describeError(error)}`);
    if (currentSessionId() === sessionId) setSession(null);
    return;
  }
  if (currentSessionId() !== sessionId) return; // switched again meanwhile
  showConnection("");
  const blocks = Array.isArray(body?.blocks) ? body.blocks : [];
  const turns = Array.isArray(body?.turns) ? [...body.turns] : [];
  turns.sort((first, second) => first.startedAt - second.startedAt);
  for (const turn of turns) {
    if (turn.parentTurnId) continue; // a sub-agent's turn belongs to its parent's tool call
    const turnBlocks = blocks.filter((/** @type {any} */ block) => block.turnId === turn.id);
    const userBlock = turnBlocks.find(
      (/** @type {any} */ block) => block.kind === "text" && block.role === "user",
    );
    const message = userBlock?.text ?? "";
    if (turn.status === "running") {
      reattach(turn.id, sessionId, message);
      continue;
    }
    const view = new TurnView(message, () => {}, { turnId: turn.id, sessionId });
    view.showHistory(turn, turnBlocks);
    addView(view);
  }
  updateControls();
}

/** Reloads what the page shows: the agents, the sessions and the open session. */
export function reloadAll() {
  void loadAgents();
  void refreshSessions();
  const sessionId = currentSessionId();
  if (sessionId) void openSession(sessionId);
}

/** Polls the session list every SESSIONS_POLL_INTERVAL_MS, one request at a time. */
async function pollSessions() {
  await refreshSessions();
  setTimeout(() => void pollSessions(), SESSIONS_POLL_INTERVAL_MS);
}

/**
 * Wires New, fills the agent picker, opens `initialSessionId` (the session of this tab before a
 * reload) and starts polling the list.
 * @param {string | null} initialSessionId
 */
export function setUpSessions(initialSessionId) {
  newSessionButton.addEventListener("click", () => void createSession());
  onSessionChange(() => void refreshSessions());
  void loadAgents();
  if (initialSessionId) void openSession(initialSessionId);
  else setSession(null);
  void pollSessions();
}
