/**
 * Crash recovery at start-up: turns the previous process left running are marked interrupted, their
 * open calls closed with `[INTERRUPTED] …` results, and their event logs ended with `tool_result`s and
 * a `turn_abort` (reason `interrupted`), so history is valid and replaying the log terminates.
 */
import type { HistoryStore } from "../history/store.js";
import { interruptedResult } from "../tools/results.js";
import { TurnEventBus } from "./event-bus.js";

export function recoverInterruptedTurns(store: HistoryStore, now: () => number = Date.now): string[] {
  const recovered: string[] = [];
  for (const turn of store.listTurns({ status: "running" })) {
    // Read before the end is queued: a read commits what is queued, and the turn's end must commit with
    // its closing events, in one batch. A crash between the two would leave a turn that is no longer
    // running, so never recovered again, with a log that never ends.
    const lastSeq = store.lastEventSeq(turn.id);
    const closed = store.endTurn(turn.id, { status: "interrupted", abortReason: "interrupted" }, (call) => ({
      status: "interrupted",
      result: interruptedResult(call.name),
      isError: true,
    }));
    const bus = new TurnEventBus(turn.id, store, now, lastSeq);
    for (const response of closed) {
      bus.emit({
        type: "tool_result",
        toolId: response.callId,
        toolName: response.name,
        result: response.result,
        isError: true,
        status: "interrupted",
        durationMs: 0,
        attempts: 0,
      });
    }
    bus.emit({ type: "turn_abort", reason: "interrupted" });
    recovered.push(turn.id);
  }
  return recovered;
}
