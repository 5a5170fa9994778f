// @ts-check
/**
 * Following a turn's event stream into its view until the turn ends: from the POST's stream, after a
 * dropped connection with `Last-Event-ID: lastSeq` (up to 5 attempts a second apart), and the running
 * turn of a session opened after a reload or a switch (`GET /api/turns/:id/events`, replayed from
 * seq 0 since its view is new).
 */
import { ApiError, api, describeError } from "./api-client.js";
import { showConnection } from "./connection-banner.js";
import { addView, announceSessionActivity, setSession, updateControls } from "./conversation.js";
import { recallTurn, rememberTurn } from "./reattach-storage.js";
import { readSse } from "./sse-reader.js";
import { TurnView } from "./turn-view.js";

const RECONNECT_DELAY_MS = 1_000;
const MAX_RECONNECT_ATTEMPTS = 5;

/**
 * Called by a view when `turn_start` gives its turn an id and a session.
 * @param {TurnView} view
 */
export function handleTurnStarted(view) {
  if (view.sessionId) setSession(view.sessionId);
  rememberTurn(view);
  updateControls();
}

/**
 * Feeds an SSE response into a view until the stream ends.
 * @param {TurnView} view
 * @param {Response} response
 */
async function consume(view, response) {
  if (!response.body) throw new Error("the response has no body");
  await readSse(response.body, (message) => {
    if (message.event === "ping") return;
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    view.apply(event);
    rememberTurn(view);
    if (view.finished) {
      updateControls();
      announceSessionActivity();
    }
  });
}

/**
 * Follows `view`'s turn until it ends: after a dropped connection it reattaches with the last seq it
 * saw (`Last-Event-ID`), a few times, then gives up and says so.
 * @param {TurnView} view
 * @param {Response | null} firstResponse the POST's stream, or null to start from `/events`
 */
export async function followTurn(view, firstResponse) {
  let response = firstResponse;
  let failures = 0;
  while (!view.finished) {
    const seqBefore = view.lastSeq;
    try {
      if (!response) {
        if (!view.turnId) throw new Error("the turn has no id yet");
        response = await api(`/api/turns/${encodeURIComponent(view.turnId)}/events`, {
          headers: { "Last-Event-ID": String(view.lastSeq), Accept: "text/event-stream" },
          signal: view.controller.signal,
        });
      }
      await consume(view, response);
    } catch (error) {
      if (view.controller.signal.aborted) return;
      if (error instanceof ApiError && error.status !== 503) {
        view.end("failed", `Lost the turn: ${describeError(error)}`);
        break;
      }
    }
    response = null;
    if (view.finished) break;
    // the stream broke or closed before the turn's terminal event
    failures = view.lastSeq > seqBefore ? 1 : failures + 1;
    if (failures > MAX_RECONNECT_ATTEMPTS || !view.turnId) {
      view.end(
        "failed",
        "Lost the connection to the turn; it may still be running (open the session again to reattach).",
      );
      break;
    }
    showConnection("Connection to the turn lost; reattaching…");
    await new Promise((resolve) => setTimeout(resolve, RECONNECT_DELAY_MS));
  }
  showConnection("");
  rememberTurn(view);
  updateControls();
}

/**
 * Shows a running turn of the open session and follows it from its event log (from seq 0: the view
 * is new). The server clock estimate saved before a reload, if any, is restored first.
 * @param {string} turnId
 * @param {string} sessionId
 * @param {string} message the turn's user message
 */
export function reattach(turnId, sessionId, message) {
  recallTurn();
  const view = new TurnView(message, handleTurnStarted, { turnId, sessionId, reattached: true });
  addView(view);
  // the DOM is gone, so replay from the start (lastSeq 0); later reconnects resume from lastSeq
  void followTurn(view, null);
}
