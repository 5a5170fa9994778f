/**
 * Abort latency over HTTP: sequential turns of `/tool hang {}`; after each one's `tool_start`, a
 * `POST /api/turns/:id/abort`, timed to the `turn_abort` on the stream and to the HTTP response. Every
 * turn is checked: abort reason `user` and one cancelled result for the hanging call.
 */
import { performance } from "node:perf_hooks";
import {
  EventStream,
  formatSummaryMs,
  isEventOfType,
  summarize,
  withTimeout,
  type BenchServer,
  type Print,
} from "./lib.js";

const ABORT_SAMPLES = 200;
const ABORT_WARMUP_TURNS = 10;
const EVENT_WAIT_LIMIT_MS = 10_000;
const REQUEST_LIMIT_MS = 10_000;

export async function measureAbortLatency(server: BenchServer, print: Print, section: number): Promise<void> {
  print(
    `${section}. Abort latency — ${ABORT_SAMPLES} sequential turns of \`/tool hang {}\`; after its tool_start, POST /api/turns/:id/abort`,
  );
  const toTurnAbort: number[] = [];
  const toResponse: number[] = [];
  for (let index = 0; index < ABORT_WARMUP_TURNS + ABORT_SAMPLES; index++) {
    const sample = await abortOneTurn(server.baseUrl, index);
    if (index < ABORT_WARMUP_TURNS) continue;
    toTurnAbort.push(sample.toTurnAbortMs);
    toResponse.push(sample.toResponseMs);
  }
  print(formatSummaryMs("abort sent → turn_abort received on stream", summarize(toTurnAbort)));
  print(formatSummaryMs("abort sent → HTTP 200 response received", summarize(toResponse)));
}

async function abortOneTurn(baseUrl: string, index: number) {
  const label = `abort turn ${index}`;
  const stream = await withTimeout(
    EventStream.startTurn(baseUrl, { message: "/tool hang {}" }),
    REQUEST_LIMIT_MS,
    label,
  );
  const toolStart = await stream.waitFor(
    isEventOfType("tool_start"),
    EVENT_WAIT_LIMIT_MS,
    `${label} tool_start`,
  );
  const turnId = toolStart.event.turnId;

  const sentAtMs = performance.now();
  const responded = fetch(`${baseUrl}/api/turns/${turnId}/abort`, { method: "POST" }).then(
    async (response) => ({
      status: response.status,
      body: await response.text(),
      respondedAtMs: performance.now(),
    }),
  );
  const turnAbort = await stream.waitFor(
    isEventOfType("turn_abort"),
    EVENT_WAIT_LIMIT_MS,
    `${label} turn_abort`,
  );
  const response = await withTimeout(responded, REQUEST_LIMIT_MS, `${label} abort request`);

  if (response.status !== 200)
    throw new Error(`${label}: abort answered HTTP ${response.status} ${response.body}`);
  if (turnAbort.event.type !== "turn_abort" || turnAbort.event.reason !== "user") {
    throw new Error(`${label}: expected turn_abort reason "user", got ${JSON.stringify(turnAbort.event)}`);
  }
  const events = await stream.untilEnd(EVENT_WAIT_LIMIT_MS, label);
  const cancelled = events.filter(
    ({ event }) => event.type === "tool_result" && event.toolId === toolStart.event.toolId,
  );
  if (
    cancelled.length !== 1 ||
    cancelled[0]?.event.type !== "tool_result" ||
    cancelled[0].event.status !== "cancelled"
  ) {
    throw new Error(
      `${label}: expected one cancelled tool_result for the hang call; got ${stream.typeList()}`,
    );
  }
  return {
    toTurnAbortMs: turnAbort.receivedAtMs - sentAtMs,
    toResponseMs: response.respondedAtMs - sentAtMs,
  };
}
