/**
 * Scripted one-tool turns per second over HTTP (`/tool echo {"text":"x"}`, each streamed to its end),
 * side by side with a bare Hono SSE endpoint in its own process that streams the same events per
 * request (bench/hono-baseline.ts). The same client code drives both and checks every response:
 * `turn_start` … `turn_complete` with the echo's completed result. Each reins concurrency level gets
 * its own fresh server; the baseline serves both levels.
 */
import { performance } from "node:perf_hooks";
import type { TurnEvent } from "../src/events.js";
import { startHonoBaseline } from "./hono-baseline-process.js";
import {
  EventStream,
  ownCpuTimeMs,
  summarize,
  withTimeout,
  type BenchServer,
  type Print,
  type Summary,
} from "./lib.js";

const THROUGHPUT_TURNS = 1_000;
const THROUGHPUT_CONCURRENCY_LEVELS = [1, 8] as const;
const THROUGHPUT_WARMUP_TURNS = 25;
/** Each worker continues its own session for this many turns, then starts a new one. */
const TURNS_PER_SESSION = 25;
const ECHO_MESSAGE = '/tool echo {"text":"x"}';
const EVENT_WAIT_LIMIT_MS = 10_000;
const REQUEST_LIMIT_MS = 10_000;

type ThroughputResult = {
  turnsPerSecond: number;
  elapsedMs: number;
  latency: Summary;
  /** Server and client CPU over the run, as a share of one core (`66%`). */
  serverCpu: string;
  clientCpu: string;
  /** The events of the last warm-up turn, as the client received them. */
  sampleEvents: TurnEvent[];
};

/** Runs a measurement against a fresh reins server started with `environment`, then stops it. */
export type WithReinsServer = (
  label: string,
  environment: Record<string, string>,
  measure: (server: BenchServer) => Promise<void>,
) => Promise<void>;

export async function measureThroughput(
  withReinsServer: WithReinsServer,
  print: Print,
  section: number,
): Promise<void> {
  print(
    `${section}. Scripted turns over HTTP — ${THROUGHPUT_TURNS} turns of \`${ECHO_MESSAGE}\`, each streamed to turn_complete, ` +
      `against a bare Hono SSE endpoint streaming the same events`,
  );
  print(
    `   (one session per worker, renewed every ${TURNS_PER_SESSION} turns; ${THROUGHPUT_WARMUP_TURNS} warm-up turns first; ` +
      `latency = request sent → last event received; the same client code and checks for both)`,
  );
  const reins = new Map<number, ThroughputResult>();
  for (const concurrency of THROUGHPUT_CONCURRENCY_LEVELS) {
    await withReinsServer(`throughput c=${concurrency}`, {}, async (server) => {
      reins.set(concurrency, await measureTurnsPerSecond(server, concurrency));
    });
  }
  const sampleEvents = reins.get(THROUGHPUT_CONCURRENCY_LEVELS[0])?.sampleEvents ?? [];
  const frameBytes = sampleEvents.reduce((total, event) => total + sseFrame(event).length, 0);
  print(
    `   one reins echo turn streams ${sampleEvents.length} events (${sampleEvents.map((event) => event.type).join(", ")}), ` +
      `${frameBytes} bytes of SSE frames; the baseline streams those events with a fresh \`at\` per request`,
  );

  const baseline = new Map<number, ThroughputResult>();
  const honoServer = await startHonoBaseline("hono baseline", sampleEvents);
  let honoStopNote: string;
  try {
    for (const concurrency of THROUGHPUT_CONCURRENCY_LEVELS) {
      baseline.set(concurrency, await measureTurnsPerSecond(honoServer, concurrency));
    }
  } finally {
    honoStopNote = await honoServer.stop();
  }
  for (const concurrency of THROUGHPUT_CONCURRENCY_LEVELS) {
    const reinsResult = reins.get(concurrency);
    const honoResult = baseline.get(concurrency);
    if (!reinsResult || !honoResult) throw new Error(`throughput c=${concurrency}: missing result`);
    print(formatRow("reins", concurrency, reinsResult));
    print(formatRow("Hono streamSSE", concurrency, honoResult));
    print(
      `    ${"".padEnd(16)} reins / Hono: ${(reinsResult.turnsPerSecond / honoResult.turnsPerSecond).toFixed(3)}× the rate ` +
        `(Hono serves ${(honoResult.turnsPerSecond / reinsResult.turnsPerSecond).toFixed(1)}× as many)`,
    );
  }
  print(`   (Hono baseline process stopped: ${honoStopNote})`);
}

function formatRow(label: string, concurrency: number, result: ThroughputResult): string {
  const { latency } = result;
  return (
    `  ${label.padEnd(15)} c=${String(concurrency).padEnd(2)} ${result.turnsPerSecond.toFixed(1).padStart(8)} turns/s` +
    `  (${THROUGHPUT_TURNS} in ${(result.elapsedMs / 1000).toFixed(2)} s)` +
    `  latency p50 ${latency.p50.toFixed(2)} ms  p99 ${latency.p99.toFixed(2)} ms  max ${latency.max.toFixed(2)} ms` +
    `  CPU of one core: server ${result.serverCpu}, client ${result.clientCpu}`
  );
}

/** The SSE frame reins writes for `event` (src/http/sse.ts), for counting bytes. */
function sseFrame(event: TurnEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

async function measureTurnsPerSecond(server: BenchServer, concurrency: number): Promise<ThroughputResult> {
  const warmup = await runTurns(server.baseUrl, THROUGHPUT_WARMUP_TURNS, 1);
  const serverCpuBeforeMs = server.cpuTimeMs();
  const clientCpuBeforeMs = ownCpuTimeMs();
  const startedAtMs = performance.now();
  const { latencies } = await runTurns(server.baseUrl, THROUGHPUT_TURNS, concurrency);
  const elapsedMs = performance.now() - startedAtMs;
  const serverCpuAfterMs = server.cpuTimeMs();
  const clientCpuMs = ownCpuTimeMs() - clientCpuBeforeMs;
  const percentOfOneCore = (cpuMs: number) => `${((cpuMs / elapsedMs) * 100).toFixed(0)}%`;
  return {
    turnsPerSecond: THROUGHPUT_TURNS / (elapsedMs / 1000),
    elapsedMs,
    latency: summarize(latencies),
    serverCpu:
      serverCpuBeforeMs === undefined || serverCpuAfterMs === undefined
        ? "n/a"
        : percentOfOneCore(serverCpuAfterMs - serverCpuBeforeMs),
    clientCpu: percentOfOneCore(clientCpuMs),
    sampleEvents: warmup.lastEvents,
  };
}

/** Runs `turnCount` echo turns with `concurrency` workers; each turn's latency in ms, the last turn's events. */
async function runTurns(
  baseUrl: string,
  turnCount: number,
  concurrency: number,
): Promise<{ latencies: number[]; lastEvents: TurnEvent[] }> {
  const latencies: number[] = [];
  let lastEvents: TurnEvent[] = [];
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
      lastEvents = events.map(({ event }) => event);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { latencies, lastEvents };
}
