/**
 * Timeout precision over HTTP: many concurrent `sleep` calls far longer than their own `_meta.timeout`,
 * so every deadline fires; lateness = `tool_timeout` − deadline (deadline = `tool_start.at` + T),
 * as the server stamped it and as the client received it. Layouts: 200 calls in one turn (the worst
 * burst), 200 calls as 50 turns of 4, and 1,000 calls as 4 concurrent turns of 250 (the configuration
 * bounds MAX_PARALLEL_TOOLS to 256, so one turn cannot hold 1,000). Every call is checked: a total
 * timeout, a `timeout` result, all calls of a round in flight before the first deadline.
 */
import {
  EVENT_WAIT_LIMIT_MS,
  EventStream,
  REQUEST_LIMIT_MS,
  fetchServerGcTotals,
  formatServerGc,
  formatSummaryMs,
  serverGcBetween,
  summarize,
  withTimeout,
  type BenchServer,
  type Print,
  type ReceivedEvent,
} from "./lib.js";

/** Each call is a `sleep` far longer than its own `_meta.timeout`, so its deadline always fires first. */
const CALL_TIMEOUT_MS = 1_000;
/**
 * Call i sleeps `SLEEP_BASE_MS + i` ms: distinct inputs, so the loop detector of docs/semantics.md#scheduling
 * (same tool, same input apart from `_meta`, 5 times in a window) sees no repeat and lets a batch run.
 */
const SLEEP_BASE_MS = 3_600_000;
/**
 * Every timeout counts as a transient failure for the `sleep` circuit breaker (docs/semantics.md#resilience);
 * with the default threshold of 5 it would open in the first round and later calls would fail fast.
 */
const BREAKER_FAILURE_THRESHOLD_FOR_TIMEOUTS = 1_000_000;
/** The schema's upper bound (src/config/schema.ts): one batch of a turn runs at most this many calls. */
const MAX_PARALLEL_TOOLS_FOR_TIMEOUTS = 256;

type Layout = { turns: number; callsPerTurn: number };

const BURST_LAYOUT: Layout = { turns: 1, callsPerTurn: 200 };
const SPREAD_LAYOUT: Layout = { turns: 50, callsPerTurn: 4 };
const THOUSAND_LAYOUT: Layout = { turns: 4, callsPerTurn: 250 };
const TIMEOUT_LAYOUTS = [BURST_LAYOUT, SPREAD_LAYOUT, THOUSAND_LAYOUT];
const TIMEOUT_ROUNDS = 3;
const TIMEOUT_WARMUP_ROUNDS = 1;
/** A second step so each turn ends with one short answer instead of a word stream per result. */
const TIMEOUT_MESSAGE_TAIL = "/then\nok";

/** The server settings this section needs beside the common ones. */
export const TIMEOUT_SERVER_ENVIRONMENT: Record<string, string> = {
  MAX_PARALLEL_TOOLS: String(MAX_PARALLEL_TOOLS_FOR_TIMEOUTS),
  BREAKER_FAILURE_THRESHOLD: String(BREAKER_FAILURE_THRESHOLD_FOR_TIMEOUTS),
};

function callsOf(layout: Layout): number {
  return layout.turns * layout.callsPerTurn;
}

export async function measureTimeoutPrecision(
  server: BenchServer,
  print: Print,
  section: number,
): Promise<void> {
  print(
    `${section}. Timeout precision — concurrent \`/tool sleep {"ms":${SLEEP_BASE_MS}+i,"_meta":{"timeout":${CALL_TIMEOUT_MS}}}\` calls ` +
      `(a sleep of ≥ ${SLEEP_BASE_MS / 60_000} min that honours its signal, under a ${CALL_TIMEOUT_MS / 1000} s _meta.timeout; ` +
      `i distinct within a round for the loop detector), 200 and 1,000 at once,`,
  );
  print(
    `   MAX_PARALLEL_TOOLS=${MAX_PARALLEL_TOOLS_FOR_TIMEOUTS} (the schema's maximum: 1,000 calls take 4 concurrent turns of 250), ` +
      `BREAKER_FAILURE_THRESHOLD=${BREAKER_FAILURE_THRESHOLD_FOR_TIMEOUTS} (timeouts would open the sleep circuit), ` +
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
    const layoutLabel =
      `${callsOf(layout).toLocaleString("en-US")} calls: ` +
      `${layout.turns} turn${layout.turns === 1 ? "" : "s"} × ${layout.callsPerTurn} calls`;
    const serverLateness: number[] = [];
    const clientLateness: number[] = [];
    const startSpreads: number[] = [];
    const crowdedMilliseconds: number[] = [];
    const gcBefore = await fetchServerGcTotals(server.baseUrl);
    for (let round = 0; round < TIMEOUT_ROUNDS; round++) {
      const outcome = await runTimeoutRound(server.baseUrl, layout, `${layoutLabel}, round ${round}`);
      serverLateness.push(...outcome.serverLateness);
      clientLateness.push(...outcome.clientLateness);
      startSpreads.push(outcome.startSpreadMs);
      crowdedMilliseconds.push(outcome.mostDeadlinesInOneMs);
    }
    const serverGc = serverGcBetween(gcBefore, await fetchServerGcTotals(server.baseUrl));
    print(`  ${layoutLabel}`);
    print(formatSummaryMs("  server: tool_timeout.at − deadline", summarize(serverLateness)));
    print(formatSummaryMs("  client: tool_timeout received − deadline", summarize(clientLateness)));
    print(
      `    all ${callsOf(layout)} in flight before the first deadline; ` +
        `deadlines (tool_start + T) spread over ${startSpreads.map((spread) => `${spread} ms`).join(", ")} per round, ` +
        `at most ${crowdedMilliseconds.join(", ")} of them in one millisecond`,
    );
    print(`    the server's own garbage collections over these rounds: ${formatServerGc(serverGc)}`);
  }
  print(`  (event \`at\` stamps are whole milliseconds, so server-side lateness is quantised to ±1 ms)`);
}

type TimeoutRoundResult = {
  serverLateness: number[];
  clientLateness: number[];
  startSpreadMs: number;
  /** The most deadlines that fall in one millisecond. */
  mostDeadlinesInOneMs: number;
};

/** The message of turn `turnIndex`: its calls, each with an input no other call of the round has. */
function timeoutMessage(layout: Layout, turnIndex: number): string {
  const calls = Array.from({ length: layout.callsPerTurn }, (_, callIndex) => {
    const sleepMs = SLEEP_BASE_MS + turnIndex * layout.callsPerTurn + callIndex;
    return `/tool sleep {"ms":${sleepMs},"_meta":{"timeout":${CALL_TIMEOUT_MS}}}`;
  });
  return [...calls, TIMEOUT_MESSAGE_TAIL].join("\n");
}

/** Starts the layout's turns at once and pairs each call's tool_start with its tool_timeout. */
async function runTimeoutRound(baseUrl: string, layout: Layout, label: string): Promise<TimeoutRoundResult> {
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

  const result: TimeoutRoundResult = {
    serverLateness: [],
    clientLateness: [],
    startSpreadMs: 0,
    mostDeadlinesInOneMs: 0,
  };
  const deadlinesPerMs = new Map<number, number>();
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
      deadlinesPerMs.set(deadlineAtMs, (deadlinesPerMs.get(deadlineAtMs) ?? 0) + 1);
      result.serverLateness.push(timeout.event.at - deadlineAtMs);
      result.clientLateness.push(timeout.receivedEpochMs - deadlineAtMs);
      earliestTimeoutAtMs = Math.min(earliestTimeoutAtMs, timeout.event.at);
      startTimes.push(start.at);
    }
  }
  const latestStartAtMs = Math.max(...startTimes);
  if (latestStartAtMs >= earliestTimeoutAtMs) {
    throw new Error(`${label}: the ${callsOf(layout)} calls were not all in flight at once`);
  }
  result.startSpreadMs = latestStartAtMs - Math.min(...startTimes);
  result.mostDeadlinesInOneMs = Math.max(...deadlinesPerMs.values());
  return result;
}
