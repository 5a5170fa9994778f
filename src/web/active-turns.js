// @ts-check
/**
 * The operator page's panel of running turns: `GET /api/turns/active` polled every 2 s (and right after
 * an Abort), one request at a time. Each turn shows its agent, age, call count, pause state and
 * running tools, with an Abort button. While the server cannot be reached the panel is emptied (the
 * banner says so) rather than left showing turns that may be long gone.
 */
import { ServerUnreachableError, api, describeError } from "./api-client.js";
import { showConnection } from "./connection-banner.js";
import { byTestId, element } from "./dom.js";
import { formatDuration } from "./format.js";
import { serverNow } from "./server-clock.js";

const ACTIVE_POLL_INTERVAL_MS = 2_000;

const activeList = byTestId("active-list");
const activeCount = byTestId("active-count");
const activeEmpty = byTestId("active-empty");

/** @type {Map<string, {item: HTMLElement, text: HTMLElement, tools: HTMLElement, button: HTMLButtonElement}>} */
const activeItems = new Map();

/**
 * The panel entry of `turnId`, created (with its Abort button) the first time the turn is listed.
 * @param {string} turnId
 */
function activeItem(turnId) {
  const existing = activeItems.get(turnId);
  if (existing) return existing;
  const text = element("span", { className: "active-text", testId: "active-turn-text" });
  const tools = element("span", { className: "active-tools", testId: "active-turn-tools" });
  const button = /** @type {HTMLButtonElement} */ (
    element("button", {
      className: "small danger",
      testId: "active-turn-abort",
      text: "Abort",
      attributes: { type: "button", "aria-label": `Abort turn ${turnId}` },
    })
  );
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await api(`/api/turns/${encodeURIComponent(turnId)}/abort`, { method: "POST" });
      void refreshActive();
    } catch (error) {
      button.disabled = false;
      showConnection(`Could not abort ${turnId}: ${describeError(error)}`);
    }
  });
  const item = element(
    "li",
    { className: "active-turn", testId: "active-turn", attributes: { "data-turn-id": turnId } },
    element("code", { className: "active-id", text: turnId }),
    text,
    tools,
    button,
  );
  const entry = { item, text, tools, button };
  activeItems.set(turnId, entry);
  activeList.append(item);
  return entry;
}

/** @param {any} body the `/api/turns/active` response */
function renderActive(body) {
  const turns = Array.isArray(body?.turns) ? body.turns : [];
  const seen = new Set();
  for (const turn of turns) {
    seen.add(turn.turnId);
    const entry = activeItem(turn.turnId);
    const age = formatDuration(serverNow() - turn.startedAt);
    const paused = turn.pause || turn.paused ? " · paused" : "";
    const child = turn.parentTurnId ? ` · child of ${turn.parentTurnId}` : "";
    entry.text.textContent = `${turn.agentId} · ${age} · ${turn.toolCallCount} tool calls${paused}${child}`;
    const running = Array.isArray(turn.runningTools) ? turn.runningTools : [];
    entry.tools.textContent = running
      .map((/** @type {any} */ tool) => `${tool.toolName} ${formatDuration(tool.elapsedMs)}`)
      .join(", ");
    entry.item.dataset.paused = String(Boolean(turn.pause || turn.paused));
  }
  for (const [turnId, entry] of activeItems) {
    if (!seen.has(turnId)) {
      entry.item.remove();
      activeItems.delete(turnId);
    }
  }
  const zombies = Array.isArray(body?.zombies) ? body.zombies.length : 0;
  activeCount.textContent = String(turns.length);
  activeEmpty.textContent =
    zombies > 0 ? `No turn is running; ${zombies} zombie tool(s) still settling.` : "No turn is running.";
  activeEmpty.hidden = turns.length > 0;
}

let activeRequests = 0;
let activeRendered = 0;

/**
 * Fetches `/api/turns/active` once and renders it (unless a later request already rendered); a 401
 * shows its banner, other failures wait for the next poll.
 */
export async function refreshActive() {
  const request = ++activeRequests;
  try {
    const response = await api("/api/turns/active");
    const body = await response.json();
    if (request < activeRendered) return;
    activeRendered = request;
    renderActive(body);
  } catch (error) {
    // no stale list: what ran before the server went away is unknown now
    if (error instanceof ServerUnreachableError) {
      renderActive({ turns: [] });
      activeEmpty.textContent = "Unknown while the server cannot be reached.";
    }
    // a 401 is shown by its banner; either way the next poll tries again
  }
}

/** Polls the active turns every ACTIVE_POLL_INTERVAL_MS, never two requests at once. */
export async function pollActive() {
  await refreshActive();
  setTimeout(() => void pollActive(), ACTIVE_POLL_INTERVAL_MS);
}
