/**
 * A running turn as a UI message stream response (docs/http-api.md#chat-routes-ai-sdk-usechat): its events
 * from the start (the stored ones, then the live tail, in one step so nothing falls between), each mapped to
 * protocol chunks and written as `data: {json}` frames, then `data: [DONE]` after the turn's end. Silence is
 * broken by an SSE comment (`: ping`), which the AI SDK's parser ignores, where reins' own streams send a
 * `ping` event its chunk schema would refuse. It is reins' SSE writer (`sse.ts`) with that format, so
 * `onClose` (the stream's place in the per-principal limit) runs exactly once however the stream ends,
 * `follow` throwing included; closing it also stops following the turn.
 */
import { isTerminalEvent, type TurnEvent } from "../events.js";
import type { HistoryStore } from "../history/store.js";
import type { TurnManager } from "../turns/manager.js";
import { sseResponse, type NodeResponse } from "./sse.js";
import { DONE_FRAME, formatChunk, UI_MESSAGE_STREAM_HEADERS, UiMessageMapper } from "./ui-message-stream.js";

export type UiMessageResponseDeps = { manager: TurnManager; store: HistoryStore; pingIntervalMs: number };

/** The SSE comment sent after `pingIntervalMs` of silence. */
const PING_FRAME = ": ping\n\n";

/**
 * Streams the running turn `turnId` from its first event; `onClose` runs once when the stream ends.
 * `nodeResponse` is the Node response it will be written to, if any (`nodeResponseOf`).
 */
export function uiMessageResponse(
  deps: UiMessageResponseDeps,
  turnId: string,
  onClose: () => void,
  nodeResponse?: NodeResponse,
): Response {
  const run = deps.manager.get(turnId);
  if (!run) {
    onClose();
    throw new Error(`uiMessageResponse: turn ${turnId} is not running`);
  }
  const mapper = new UiMessageMapper({ inferenceOf: inferenceLookup(deps.store, run.sessionId, turnId) });
  let dispose = () => {};
  return sseResponse({
    pingIntervalMs: deps.pingIntervalMs,
    format: { headers: UI_MESSAGE_STREAM_HEADERS, preamble: "", ping: () => PING_FRAME },
    nodeResponse,
    onClose: () => {
      dispose();
      onClose();
    },
    open: (writer) => {
      const send = (event: TurnEvent) => {
        if (writer.closed) return;
        for (const chunk of mapper.map(event)) writer.write(formatChunk(chunk));
        if (!isTerminalEvent(event)) return;
        writer.write(DONE_FRAME);
        writer.close();
      };
      const followed = deps.manager.follow(run, 0, send);
      dispose = followed.dispose;
      for (const event of followed.replay) send(event);
    },
  });
}

/**
 * Which assistant message of the turn holds a call: history keeps each model response as one run of
 * assistant blocks (its text, thinking and calls), so the responses are counted run by run.
 */
function inferenceLookup(store: HistoryStore, sessionId: string, turnId: string) {
  return (toolId: string): number | undefined => {
    const history = store.getHistory(sessionId);
    let first = history.length;
    while (first > 0 && history[first - 1]?.turnId === turnId) first--;
    let response = -1;
    let previousRole: string | undefined;
    for (let index = first; index < history.length; index++) {
      const block = history[index];
      if (!block) continue;
      if (block.role === "assistant" && previousRole !== "assistant") response++;
      previousRole = block.role;
      if (block.kind === "tool_call" && block.callId === toolId) return response;
    }
    return undefined;
  };
}
