/**
 * Streams a turn's events over SSE: the persisted events after `afterSeq`, then the live tail until the
 * terminal event. A turn that has already ended is replayed from its event log, a page at a time and
 * only as fast as the client takes it (a log of many megabytes neither holds the event loop in one
 * piece nor waits in memory for a client that does not read), and the stream closes.
 * The caller's `onClose` (the stream's place in the per-principal limit) runs exactly once: when the
 * stream ends however it ends, or at once when no stream is opened. `hasEverything` tells a client
 * that already holds the whole of an ended turn, so it can be answered 204
 * (docs/events.md#replay-and-reconnection: a browser's EventSource stops reconnecting on a 204).
 */
import { isTerminalEvent, type TurnEvent } from "../events.js";
import type { HistoryStore } from "../history/store.js";
import type { TurnManager } from "../turns/manager.js";
import { HttpError } from "./http-error.js";
import { sseResponse, type NodeResponse, type SseWriter } from "./sse.js";

/** Stored runs (one commit's events each) read at a time when an ended turn is replayed. */
export const REPLAY_PAGE_RUNS = 64;

export type TurnStreamDeps = { manager: TurnManager; store: HistoryStore; pingIntervalMs: number };

/**
 * Whether a client whose last event is `afterSeq` has everything of `turnId`: the turn has ended and
 * `afterSeq` is at or past its last event. A running turn has more to come, always.
 */
export function hasEverything(deps: TurnStreamDeps, turnId: string, afterSeq: number): boolean {
  const active = deps.manager.get(turnId);
  if (active && !active.finished) return false;
  // the event log is complete once the turn is finished: lastEventSeq commits what is queued, its end too
  return afterSeq >= deps.store.lastEventSeq(turnId);
}

/**
 * Returns an SSE response for `turnId`; a 404 HttpError when no such turn exists. `nodeResponse` is the
 * Node response it will be written to, if any (`nodeResponseOf`).
 */
export function streamTurnEvents(
  deps: TurnStreamDeps,
  turnId: string,
  afterSeq: number,
  onClose: () => void,
  nodeResponse?: NodeResponse,
): Response {
  const active = deps.manager.get(turnId);
  if (!active && !deps.store.getTurn(turnId)) {
    onClose();
    throw new HttpError(404, "turn_not_found", `Turn not found: ${turnId}`);
  }

  let dispose = () => {};
  return sseResponse({
    pingIntervalMs: deps.pingIntervalMs,
    nodeResponse,
    onClose: () => {
      dispose();
      onClose();
    },
    open: (writer) => {
      if (!active || active.finished) {
        // the first page is read now: a store that cannot be read fails the request (500), as before
        const firstPage = deps.store.listEvents(turnId, afterSeq, REPLAY_PAGE_RUNS);
        // a later page that cannot be read ends the stream: the client reconnects from its last event
        replayEnded(deps.store, turnId, firstPage, writer).catch(() => writer.close());
        return;
      }
      const followed = deps.manager.follow(active, afterSeq, (event) => {
        // Live events are those after the committed ones, so only a Last-Event-ID past what was ever
        // sent (stale, or made up) skips any: the client says it has them. The turn's end still closes
        // the stream, as a 204 answers such a client once the turn has ended.
        if (event.seq > afterSeq) writer.send(event);
        if (isTerminalEvent(event)) writer.close();
      });
      dispose = followed.dispose;
      for (const event of followed.replay) writer.send(event);
      if (followed.replay.some(isTerminalEvent)) writer.close();
    },
  });
}

/**
 * Sends an ended turn's events from `firstPage` on, a page at a time, each event once the client has
 * room, then closes the stream. Between pages the event loop runs what waits (other requests, timers):
 * a client that reads as fast as the server writes never makes the replay wait, and ten of them would
 * otherwise hold every other request until their logs were through.
 */
async function replayEnded(
  store: HistoryStore,
  turnId: string,
  firstPage: TurnEvent[],
  writer: SseWriter,
): Promise<void> {
  for (let page = firstPage; page.length > 0;) {
    for (const event of page) {
      if (writer.backlogged) await writer.drained();
      if (writer.closed) return;
      writer.send(event);
    }
    await new Promise((resolve) => setImmediate(resolve));
    if (writer.closed) return;
    page = store.listEvents(turnId, page.at(-1)!.seq, REPLAY_PAGE_RUNS);
  }
  writer.close();
}
