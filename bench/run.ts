/**
 * `npm run bench`: measures the real server over loopback HTTP/SSE — abort latency, tool-timeout
 * precision under 200 concurrent calls, and scripted turns per second — then the tool runner's own
 * cost in-process, and prints a report. Each server measurement gets its own server process and data
 * directory; everything is bounded in time and cleaned up, and the process exits non-zero with a
 * message when a measurement fails.
 */
import { performance } from "node:perf_hooks";
import {
  EventStream,
  describeMachine,
  formatSummaryMs,
  isEventOfType,
  ownCpuTimeMs,
  startServer,
  stopAllServers,
  summarize,
  withTimeout,
  type BenchServer,
  type ReceivedEvent,
} from "./lib.js";
import { formatRenderReport, measureRenderer } from "./render-bench.js";
import { measureRunnerOverhead } from "./runner-overhead.js";

const OVERALL_TIME_LIMIT_MS = 150_000;
const EVENT_WAIT_LIMIT_MS = 10_000;
const REQUEST_LIMIT_MS = 10_000;

const ABORT_SAMPLES = 200;
const ABORT_WARMUP_TURNS = 10;

/** Each call is a `sleep` far longer than its own `_meta.timeout`, so its deadline always fires first. */
const CALL_TIMEOUT_MS = 1_000;
/**
 * Call i sleeps `SLEEP_BASE_MS + i` ms: distinct inputs, so the loop detector of DESIGN.md §5.3 (same
 * tool, same input apart from `_meta`, 5 times in a window) sees no repeat and lets a batch of 200 run.
 */
const SLEEP_BASE_MS = 3_600_000;
const CONCURRENT_CALLS = 200;
/**
 * Every timeout counts as a transient failure for the `sleep` circuit breaker (DESIGN.md §5.4); with
 * the default threshold of 5 it would open in the first round and later calls would fail fast.
 */
const BREAKER_FAILURE_THRESHOLD_FOR_TIMEOUTS = 1_000_000;
/**
 * The 200 concurrent calls are laid out two ways: one batch of 200 in one turn (all deadlines within a
 * few ms: the worst burst), and 50 turns of 4, each in its own session.
 */
const BURST_LAYOUT = { turns: 1, callsPerTurn: 200 };
const SPREAD_LAYOUT = { turns: 50, callsPerTurn: 4 };
const TIMEOUT_LAYOUTS = [BURST_LAYOUT, SPREAD_LAYOUT];
const TIMEOUT_ROUNDS = 3;
const TIMEOUT_WARMUP_ROUNDS = 1;
/** A second step so each turn ends with one short answer instead of a word stream per result. */
const TIMEOUT_MESSAGE_TAIL = "/then\nok";
const MAX_PARALLEL_TOOLS_FOR_TIMEOUTS = 256;

const THROUGHPUT_TURNS = 500;
const THROUGHPUT_CONCURRENCY_LEVELS = [1, 8] as const;
const THROUGHPUT_WARMUP_TURNS = 25;
/** Each worker continues its own session for this many turns, then starts a new one. */
const TURNS_PER_SESSION = 25;
const ECHO_MESSAGE = '/tool echo {"text":"x"}';

function print(line = ""): void {
  console.log(line);
}

async function main(): Promise<void> {
  const benchStartedAtMs = performance.now();
  print(`reins benchmark — ${new Date().toISOString()}`);
  print("machine");
  for (const line of describeMachine()) print(`  ${line}`);
  print(
    `  all traffic on 127.0.0.1; one server process (node --import tsx src/main.ts, LOG_LEVEL=info) per section`,
  );
  print();

  const stopNotes: string[] = [];
  const runSection = async (
    label: string,
    environment: Record<string, string>,
    measure: (server: BenchServer) => Promise<void>,
  ) => {
    const server = await startServer(label, environment);
    try {
      await measure(server);
    } finally {
      stopNotes.push(`${label}: ${await server.stop()}`);
    }
  };

  await runSection("abort", {}, measureAbortLatency);
  print();
  await runSection(
    "timeouts",
    {
      MAX_PARALLEL_TOOLS: String(MAX_PARALLEL_TOOLS_FOR_TIMEOUTS),
      BREAKER_FAILURE_THRESHOLD: String(BREAKER_FAILURE_THRESHOLD_FOR_TIMEOUTS),
    },
    measureTimeoutPrecision,
  );
  print();
  print(
    `3. Scripted turns over HTTP — ${THROUGHPUT_TURNS} turns of \`${ECHO_MESSAGE}\`, each streamed to turn_complete`,
  );
  print(
    `   (one session per worker, renewed every ${TURNS_PER_SESSION} turns; ${THROUGHPUT_WARMUP_TURNS} warm-up turns first; latency = request sent → turn_complete received)`,
  );
  for (const concurrency of THROUGHPUT_CONCURRENCY_LEVELS) {
    await runSection(`throughput c=${concurrency}`, {}, (server) => measureThroughput(server, concurrency));
  }
  print();
  await measureRunnerOverhead(print);

  print();
  print("5. Transcript renderer — renderProviderRequest (render + adapter), thinking on, no budget cut");
  const renderReport = measureRenderer();
  for (const line of formatRenderReport(renderReport)) print(`  ${line}`);
  if (!renderReport.linear) throw new Error("render time did not grow linearly with history size");

  print();
  print(`server shutdowns (SIGTERM): ${stopNotes.join("; ")}`);
  const unclean = stopNotes.filter((note) => !note.endsWith("exit code 0"));
  if (unclean.length > 0) print(`  warning: not every server exited cleanly with code 0`);
  print(`total bench time ${((performance.now() - benchStartedAtMs) / 1000).toFixed(1)} s`);
}

// ---------------------------------------------------------------------------------------------------
// 1. Abort latency

async function measureAbortLatency(server: BenchServer): Promise<void> {
  print(
    `1. Abort latency — ${ABORT_SAMPLES} sequential turns of \`/tool hang {}\`; after its tool_start, POST /api/turns/:id/abort`,
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

// ---------------------------------------------------------------------------------------------------
// 2. Timeout precision

async function measureTimeoutPrecision(server: BenchServer): Promise<void> {
  print(
    `2. Timeout precision — ${CONCURRENT_CALLS} concurrent \`/tool sleep {"ms":${SLEEP_BASE_MS}+i,"_meta":{"timeout":${CALL_TIMEOUT_MS}}}\` calls ` +
      `(a sleep of ≥ ${SLEEP_BASE_MS / 60_000} min that honours its signal, under a ${CALL_TIMEOUT_MS / 1000} s _meta.timeout; ` +
      `i = 0…${CONCURRENT_CALLS - 1} keeps inputs distinct for the loop detector),`,
  );
  print(
    `   MAX_PARALLEL_TOOLS=${MAX_PARALLEL_TOOLS_FOR_TIMEOUTS}, BREAKER_FAILURE_THRESHOLD=${BREAKER_FAILURE_THRESHOLD_FOR_TIMEOUTS} (timeouts would open the sleep circuit), ` +
      `${TIMEOUT_ROUNDS} rounds per layout after ${TIMEOUT_WARMUP_ROUNDS} warm-up round`,
  );
  print(
    `   lateness = tool_timeout − deadline, deadline = tool_start.at + T (T = ${CALL_TIMEOUT_MS} ms); ` +
      `each message ends with \`/then ok\` so a turn answers in one word after its calls time out`,
  );
  for (let round = 0; round < TIMEOUT_WARMUP_ROUNDS; round++) {
    await runTimeoutRound(server.baseUrl, SPREAD_LAYOUT, `timeout warm-up ${round}`);
  }
  for (const layout of TIMEOUT_LAYOUTS) {
    const layoutLabel = `${layout.turns} turn${layout.turns === 1 ? "" : "s"} × ${layout.callsPerTurn} calls`;
    const serverLateness: number[] = [];
    const clientLateness: number[] = [];
    const startSpreads: number[] = [];
    for (let round = 0; round < TIMEOUT_ROUNDS; round++) {
      const outcome = await runTimeoutRound(server.baseUrl, layout, `${layoutLabel}, round ${round}`);
      serverLateness.push(...outcome.serverLateness);
      clientLateness.push(...outcome.clientLateness);
      startSpreads.push(outcome.startSpreadMs);
    }
    print(`  ${layoutLabel}`);
    print(formatSummaryMs("  server: tool_timeout.at − deadline", summarize(serverLateness)));
    print(formatSummaryMs("  client: tool_timeout received − deadline", summarize(clientLateness)));
    print(
      `    all ${CONCURRENT_CALLS} in flight before the first deadline; ` +
        `tool_start spread per round: ${startSpreads.map((spread) => `${spread} ms`).join(", ")}`,
    );
  }
  print(`  (event \`at\` stamps are whole milliseconds, so server-side lateness is quantised to ±1 ms)`);
}

type TimeoutRoundResult = { serverLateness: number[]; clientLateness: number[]; startSpreadMs: number };

/** The message of turn `turnIndex`: its calls, each with an input no other call of the round has. */
function timeoutMessage(layout: { callsPerTurn: number }, turnIndex: number): string {
  const calls = Array.from({ length: layout.callsPerTurn }, (_, callIndex) => {
    const sleepMs = SLEEP_BASE_MS + turnIndex * layout.callsPerTurn + callIndex;
    return `/tool sleep {"ms":${sleepMs},"_meta":{"timeout":${CALL_TIMEOUT_MS}}}`;
  });
  return [...calls, TIMEOUT_MESSAGE_TAIL].join("\n");
}

/** Starts the layout's turns at once and pairs each call's tool_start with its tool_timeout. */
async function runTimeoutRound(
  baseUrl: string,
  layout: { turns: number; callsPerTurn: number },
  label: string,
): Promise<TimeoutRoundResult> {
  const streams = await withTimeout(
    Promise.all(
      Array.from({ length: layout.turns }, (_, turnIndex) =>
        EventStream.startTurn(baseUrl, { message: timeoutMessage(layout, turnIndex) }),
      ),
    ),
    REQUEST_LIMIT_MS,
    `${label}: starting turns`,
  );
  const allEvents = await Promise.all(
    streams.map((stream, index) =>
      stream.untilEnd(CALL_TIMEOUT_MS + EVENT_WAIT_LIMIT_MS, `${label}, turn ${index}`),
    ),
  );

  const result: TimeoutRoundResult = { serverLateness: [], clientLateness: [], startSpreadMs: 0 };
  const startTimes: number[] = [];
  let earliestTimeoutAtMs = Infinity;
  for (const [index, events] of allEvents.entries()) {
    const turnLabel = `${label}, turn ${index}`;
    const terminal = events.at(-1)?.event;
    if (terminal?.type === "turn_abort" && terminal.reason === "loop") {
      throw new Error(`${turnLabel}: the loop detector stopped the turn; the calls' inputs must be distinct`);
    }
    if (terminal?.type !== "turn_complete") {
      throw new Error(`${turnLabel}: expected turn_complete at the end; got ${streams[index]?.typeList()}`);
    }
    const timeouts = new Map<string, ReceivedEvent>();
    const results = new Map<string, string>();
    for (const received of events) {
      if (received.event.type === "tool_timeout") timeouts.set(received.event.toolId, received);
      if (received.event.type === "tool_result") results.set(received.event.toolId, received.event.status);
    }
    const starts = events.filter(({ event }) => event.type === "tool_start");
    if (starts.length !== layout.callsPerTurn) {
      throw new Error(`${turnLabel}: ${starts.length} tool_start events, expected ${layout.callsPerTurn}`);
    }
    for (const { event: start } of starts) {
      if (start.type !== "tool_start") continue;
      if (start.toolName !== "sleep" || start.timeoutMs !== CALL_TIMEOUT_MS) {
        throw new Error(
          `${turnLabel}: tool_start of ${start.toolName} with timeoutMs ${start.timeoutMs}, expected sleep with ${CALL_TIMEOUT_MS}`,
        );
      }
      const timeout = timeouts.get(start.toolId);
      if (timeout?.event.type !== "tool_timeout" || timeout.event.kind !== "total") {
        throw new Error(`${turnLabel}: no total tool_timeout for ${start.toolId}`);
      }
      if (results.get(start.toolId) !== "timeout") {
        throw new Error(
          `${turnLabel}: tool_result of ${start.toolId} is ${results.get(start.toolId)}, not timeout`,
        );
      }
      const deadlineAtMs = start.at + start.timeoutMs;
      result.serverLateness.push(timeout.event.at - deadlineAtMs);
      result.clientLateness.push(timeout.receivedEpochMs - deadlineAtMs);
      earliestTimeoutAtMs = Math.min(earliestTimeoutAtMs, timeout.event.at);
      startTimes.push(start.at);
    }
  }
  const latestStartAtMs = Math.max(...startTimes);
  if (latestStartAtMs >= earliestTimeoutAtMs) {
    throw new Error(`${label}: the ${CONCURRENT_CALLS} calls were not all in flight at once`);
  }
  result.startSpreadMs = latestStartAtMs - Math.min(...startTimes);
  return result;
}

// ---------------------------------------------------------------------------------------------------
// 3. Scripted turns per second

async function measureThroughput(server: BenchServer, concurrency: number): Promise<void> {
  await runTurns(server.baseUrl, THROUGHPUT_WARMUP_TURNS, 1);
  const serverCpuBeforeMs = server.cpuTimeMs();
  const clientCpuBeforeMs = ownCpuTimeMs();
  const startedAtMs = performance.now();
  const latencies = await runTurns(server.baseUrl, THROUGHPUT_TURNS, concurrency);
  const elapsedMs = performance.now() - startedAtMs;
  const serverCpuAfterMs = server.cpuTimeMs();
  const clientCpuMs = ownCpuTimeMs() - clientCpuBeforeMs;
  const summary = summarize(latencies);
  const turnsPerSecond = THROUGHPUT_TURNS / (elapsedMs / 1000);
  const percentOfOneCore = (cpuMs: number) => `${((cpuMs / elapsedMs) * 100).toFixed(0)}%`;
  const serverCpu =
    serverCpuBeforeMs === undefined || serverCpuAfterMs === undefined
      ? "n/a"
      : percentOfOneCore(serverCpuAfterMs - serverCpuBeforeMs);
  print(
    `  concurrency ${String(concurrency).padEnd(2)}  ${turnsPerSecond.toFixed(1).padStart(7)} turns/s` +
      `  (${THROUGHPUT_TURNS} turns in ${(elapsedMs / 1000).toFixed(2)} s)` +
      `  latency p50 ${summary.p50.toFixed(2)} ms  p99 ${summary.p99.toFixed(2)} ms  max ${summary.max.toFixed(2)} ms`,
  );
  print(
    `                  CPU of one core: server ${serverCpu}, bench client ${percentOfOneCore(clientCpuMs)}`,
  );
}

/** Runs `turnCount` echo turns with `concurrency` workers; returns each turn's latency in ms. */
async function runTurns(baseUrl: string, turnCount: number, concurrency: number): Promise<number[]> {
  const latencies: number[] = [];
  let claimed = 0;
  const worker = async () => {
    let sessionId: string | undefined;
    let turnsInSession = 0;
    while (claimed < turnCount) {
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
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return latencies;
}

// ---------------------------------------------------------------------------------------------------

let failing = false;

/** Reports the first failure, stops every server, deletes their data and exits; later calls wait. */
async function failAndExit(message: string, exitCode: number): Promise<void> {
  if (failing) return;
  failing = true;
  console.error(`\nbench FAILED: ${message}`);
  await withTimeout(stopAllServers(), 20_000, "stopping servers").catch((error: unknown) =>
    console.error(String(error)),
  );
  process.exit(exitCode);
}

const overallTimer = setTimeout(
  () => void failAndExit(`did not finish within ${OVERALL_TIME_LIMIT_MS / 1000} s`, 1),
  OVERALL_TIME_LIMIT_MS,
);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => void failAndExit(`interrupted by ${signal}`, 130));
}

try {
  await main();
  clearTimeout(overallTimer);
  // Exit on our own; the timer only matters if a stray handle would keep the process alive.
  setTimeout(() => process.exit(0), 2_000).unref();
} catch (error) {
  await failAndExit(error instanceof Error ? (error.stack ?? error.message) : String(error), 1);
}
