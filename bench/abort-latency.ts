/**
 * Abort latency over HTTP: sequential turns of `/tool hang {}`; after each one's `tool_start`, a
 * `POST /api/turns/:id/abort`, timed to the `turn_abort` on the stream and to the HTTP response. Every
 * turn is checked: abort reason `user` and one cancelled result for the hanging call. Measured on the
 * fresh server (cold), then again after it has also run WARMUP_TURNS echo turns (warm; see
 * throughput.ts). The bench client is a Node process too: the samples one of its own garbage
 * collections overlapped are counted, since that pause is in the figure and not the server's doing;
 * the server's own collections meanwhile are reported too (from its `/metrics`).
 */
import { performance } from "node:perf_hooks";
import { WARMUP_TURNS, runEchoTurns } from "./echo-turns.js";
import {
  ClientGcPauses,
  EVENT_WAIT_LIMIT_MS,
  EventStream,
  REQUEST_LIMIT_MS,
  fetchServerGcTotals,
  formatServerGc,
  formatSummaryMs,
  isEventOfType,
  serverGcBetween,
  summarize,
  withTimeout,
  type BenchServer,
  type Print,
  type Span,
} from "./lib.js";

const ABORT_SAMPLES = 200;
const ABORT_WARMUP_TURNS = 10;
const WARMUP_CONCURRENCY = 8;

export async function measureAbortLatency(server: BenchServer, print: Print, section: number): Promise<void> {
  print(
    `${section}. Abort latency — ${ABORT_SAMPLES} sequential turns of \`/tool hang {}\`; after its tool_start, POST /api/turns/:id/abort`,
  );
  print(
    `   cold: the fresh server (after ${ABORT_WARMUP_TURNS} warm-up aborts); ` +
      `warm: after those turns and ${WARMUP_TURNS} echo turns at concurrency ${WARMUP_CONCURRENCY}`,
  );
  const pauses = new ClientGcPauses();
  try {
    await measureAbortPhase(server.baseUrl, "cold", pauses, print);
    await runEchoTurns(server.baseUrl, WARMUP_TURNS, WARMUP_CONCURRENCY);
    await measureAbortPhase(server.baseUrl, "warm", pauses, print);
  } finally {
    pauses.stop();
  }
}

async function measureAbortPhase(
  baseUrl: string,
  phase: string,
  pauses: ClientGcPauses,
  print: Print,
): Promise<void> {
  const toTurnAbort: number[] = [];
  const toResponse: number[] = [];
  const windows: Span[] = [];
  for (let index = 0; index < ABORT_WARMUP_TURNS; index++) {
    await abortOneTurn(baseUrl, `${phase} warm-up abort turn ${index}`);
  }
  const gcBefore = await fetchServerGcTotals(baseUrl);
  for (let index = 0; index < ABORT_SAMPLES; index++) {
    const sample = await abortOneTurn(baseUrl, `${phase} abort turn ${index}`);
    toTurnAbort.push(sample.toTurnAbortMs);
    toResponse.push(sample.toResponseMs);
    windows.push({ startMs: sample.sentAtMs, endMs: sample.sentAtMs + sample.toTurnAbortMs });
  }
  const serverGc = serverGcBetween(gcBefore, await fetchServerGcTotals(baseUrl));
  const labels = {
    turnAbort: `${phase}: abort sent → turn_abort received on stream`,
    response: `${phase}: abort sent → HTTP 200 response received`,
  };
  const labelWidth = Math.max(labels.turnAbort.length, labels.response.length) + 2;
  print(formatSummaryMs(labels.turnAbort, summarize(toTurnAbort), labelWidth));
  print(formatSummaryMs(labels.response, summarize(toResponse), labelWidth));
  await pauses.settle();
  const paused = windows.flatMap((window) => pauses.longestDuring(window) ?? []);
  print(
    `    ${paused.length} of ${windows.length} turn_abort samples overlap a garbage-collection pause of the bench client itself` +
      (paused.length === 0 ? "" : ` (longest ${Math.max(...paused).toFixed(1)} ms)`),
  );
  print(`    the server's own garbage collections meanwhile: ${formatServerGc(serverGc)}`);
}

async function abortOneTurn(baseUrl: string, label: string) {
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
    sentAtMs,
    toTurnAbortMs: turnAbort.receivedAtMs - sentAtMs,
    toResponseMs: response.respondedAtMs - sentAtMs,
  };
}
