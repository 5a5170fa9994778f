/**
 * Scripted one-tool turns streamed to their end (`/tool echo {"text":"x"}`), each checked: `turn_start`
 * … `turn_complete` with the echo's completed result. The throughput section times them; the abort
 * section runs them to warm a server up.
 */
import { performance } from "node:perf_hooks";
import type { TurnEvent } from "../src/events.js";
import { EVENT_WAIT_LIMIT_MS, EventStream, REQUEST_LIMIT_MS, withTimeout } from "./lib.js";

/** Each worker continues its own session for this many turns, then starts a new one. */
export const TURNS_PER_SESSION = 25;
export const ECHO_MESSAGE = '/tool echo {"text":"x"}';
/** Turns a server (and the bench client) runs before a warm measurement. */
export const WARMUP_TURNS = 2_000;

/** Runs `turnCount` echo turns with `concurrency` workers; each turn's latency in ms, the last turn's events. */
export async function runEchoTurns(
  baseUrl: string,
  turnCount: number,
  concurrency: number,
): Promise<{ latencies: number[]; lastEvents: TurnEvent[] }> {
  const latencies: number[] = [];
  let lastEvents: TurnEvent[] = [];
  let claimed = 0;
  // once a turn fails, the other workers stop taking turns (the run fails with the first error)
  let failed = false;
  const worker = async () => {
    let sessionId: string | undefined;
    let turnsInSession = 0;
    while (!failed && claimed < turnCount) {
      const index = claimed++;
      if (turnsInSession === TURNS_PER_SESSION) {
        sessionId = undefined;
        turnsInSession = 0;
      }
      const label = `echo turn ${index}`;
      const sentAtMs = performance.now();
      const stream = await withTimeout(
        EventStream.startTurn(baseUrl, { message: ECHO_MESSAGE, ...(sessionId ? { sessionId } : {}) }),
        REQUEST_LIMIT_MS,
        label,
      );
      const events = await stream.untilEnd(EVENT_WAIT_LIMIT_MS, label);
      const start = events[0]?.event;
      const terminal = events.at(-1);
      const result = events.find(({ event }) => event.type === "tool_result")?.event;
      if (start?.type !== "turn_start" || terminal?.event.type !== "turn_complete") {
        throw new Error(`${label}: expected turn_start … turn_complete; got ${stream.typeList()}`);
      }
      if (result?.type !== "tool_result" || result.status !== "complete" || !result.result.includes("x")) {
        throw new Error(`${label}: echo did not complete: ${JSON.stringify(result)}`);
      }
      sessionId = start.sessionId;
      turnsInSession++;
      latencies.push(terminal.receivedAtMs - sentAtMs);
      lastEvents = events.map(({ event }) => event);
    }
  };
  const guarded = () =>
    worker().catch((error: unknown) => {
      failed = true;
      throw error;
    });
  await Promise.all(Array.from({ length: concurrency }, guarded));
  return { latencies, lastEvents };
}
