/**
 * Scripted one-tool turns per second over HTTP (`/tool echo {"text":"x"}`, each streamed to its end),
 * side by side with a bare Hono SSE endpoint in its own process that streams the same events per
 * request (bench/hono-baseline.ts). The same client code drives both and checks every response:
 * `turn_start` … `turn_complete` with the echo's completed result.
 *
 * Each concurrency level gets a fresh process of each server, measured twice: cold (the 1,000 turns
 * after 25) and warm (1,000 more after WARMUP_TURNS further turns). Both servers speed up as V8
 * optimizes the code their turns run, reins more and for longer (a few thousand turns): it runs far
 * more JavaScript per turn. The bench client speeds up the same way, so it is warmed first, on a
 * throwaway reins process that also records the events the baseline replays; and at each level the
 * servers take turns going first, so that a change in the machine's load falls on neither alone.
 */
import { performance } from "node:perf_hooks";
import type { TurnEvent } from "../src/events.js";
import { formatEvent } from "../src/http/sse.js";
import { ECHO_MESSAGE, TURNS_PER_SESSION, WARMUP_TURNS, runEchoTurns } from "./echo-turns.js";
import { startHonoBaseline } from "./hono-baseline-process.js";
import { ownCpuTimeMs, summarize, type BenchServer, type Print, type Summary } from "./lib.js";

const THROUGHPUT_TURNS = 1_000;
const THROUGHPUT_CONCURRENCY_LEVELS = [1, 8] as const;
const THROUGHPUT_WARMUP_TURNS = 25;
/** Concurrency of the bench client's own warm-up. */
const CLIENT_WARMUP_CONCURRENCY = 8;

type PhaseResult = {
  turnsPerSecond: number;
  elapsedMs: number;
  latency: Summary;
  /** Server and client CPU over the run, as a share of one core (`66%`). */
  serverCpu: string;
  clientCpu: string;
};
type ThroughputResult = {
  /** The first THROUGHPUT_TURNS turns of a fresh process (after THROUGHPUT_WARMUP_TURNS). */
  cold: PhaseResult;
  /** THROUGHPUT_TURNS turns after WARMUP_TURNS more. */
  warm: PhaseResult;
};
const PHASES = ["cold", "warm"] as const;

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
    `   (one session per worker, renewed every ${TURNS_PER_SESSION} turns; latency = request sent → last event received; ` +
      `the same client code and checks for both; a fresh process of each server per concurrency level, the servers taking turns to go first)`,
  );
  print(
    `   cold: the ${THROUGHPUT_TURNS} turns after ${THROUGHPUT_WARMUP_TURNS}; ` +
      `warm: ${THROUGHPUT_TURNS} turns after ${WARMUP_TURNS} more at the same concurrency; ` +
      `the bench client ran ${WARMUP_TURNS} turns on a throwaway reins process first`,
  );
  let sampleEvents: TurnEvent[] = [];
  await withReinsServer("throughput client warm-up", {}, async (server) => {
    sampleEvents = (await runEchoTurns(server.baseUrl, THROUGHPUT_WARMUP_TURNS, 1)).lastEvents;
    await runEchoTurns(server.baseUrl, WARMUP_TURNS, CLIENT_WARMUP_CONCURRENCY);
  });
  const frameBytes = sampleEvents.reduce((total, event) => total + formatEvent(event).length, 0);
  print(
    `   one reins echo turn streams ${sampleEvents.length} events (${sampleEvents.map((event) => event.type).join(", ")}), ` +
      `${frameBytes} bytes of SSE frames; the baseline streams those events with a fresh \`at\` per request`,
  );

  const reins = new Map<number, ThroughputResult>();
  const baseline = new Map<number, ThroughputResult>();
  const honoStopNotes: string[] = [];
  for (const [index, concurrency] of THROUGHPUT_CONCURRENCY_LEVELS.entries()) {
    const measureReins = () =>
      withReinsServer(`throughput c=${concurrency}`, {}, async (server) => {
        reins.set(concurrency, await measureTurnsPerSecond(server, concurrency));
      });
    const measureBaseline = async () => {
      const honoServer = await startHonoBaseline(`hono baseline c=${concurrency}`, sampleEvents);
      try {
        baseline.set(concurrency, await measureTurnsPerSecond(honoServer, concurrency));
      } finally {
        honoStopNotes.push(`c=${concurrency}: ${await honoServer.stop()}`);
      }
    };
    const [first, second] =
      index % 2 === 0 ? [measureReins, measureBaseline] : [measureBaseline, measureReins];
    await first();
    await second();
  }
  for (const phase of PHASES) {
    for (const concurrency of THROUGHPUT_CONCURRENCY_LEVELS) {
      const reinsResult = reins.get(concurrency)?.[phase];
      const honoResult = baseline.get(concurrency)?.[phase];
      if (!reinsResult || !honoResult)
        throw new Error(`throughput ${phase} c=${concurrency}: missing result`);
      print(formatRow(`reins ${phase}`, concurrency, reinsResult));
      print(formatRow(`Hono ${phase}`, concurrency, honoResult));
      print(
        `    ${"".padEnd(16)} reins / Hono: ${(reinsResult.turnsPerSecond / honoResult.turnsPerSecond).toFixed(3)}× the rate ` +
          `(Hono serves ${(honoResult.turnsPerSecond / reinsResult.turnsPerSecond).toFixed(1)}× as many)`,
      );
    }
  }
  print(`   (Hono baseline processes stopped: ${honoStopNotes.join("; ")})`);
}

function formatRow(label: string, concurrency: number, result: PhaseResult): string {
  const { latency } = result;
  return (
    `  ${label.padEnd(15)} c=${String(concurrency).padEnd(2)} ${result.turnsPerSecond.toFixed(1).padStart(8)} turns/s` +
    `  (${THROUGHPUT_TURNS} in ${(result.elapsedMs / 1000).toFixed(2)} s)` +
    `  latency p50 ${latency.p50.toFixed(2)} ms  p99 ${latency.p99.toFixed(2)} ms  max ${latency.max.toFixed(2)} ms` +
    `  CPU of one core: server ${result.serverCpu}, client ${result.clientCpu}`
  );
}

async function measureTurnsPerSecond(server: BenchServer, concurrency: number): Promise<ThroughputResult> {
  await runEchoTurns(server.baseUrl, THROUGHPUT_WARMUP_TURNS, 1);
  const cold = await measurePhase(server, concurrency);
  await runEchoTurns(server.baseUrl, WARMUP_TURNS, concurrency);
  const warm = await measurePhase(server, concurrency);
  return { cold, warm };
}

/** THROUGHPUT_TURNS turns at `concurrency`: their rate, latency and CPU. */
async function measurePhase(server: BenchServer, concurrency: number): Promise<PhaseResult> {
  const serverCpuBeforeMs = server.cpuTimeMs();
  const clientCpuBeforeMs = ownCpuTimeMs();
  const startedAtMs = performance.now();
  const { latencies } = await runEchoTurns(server.baseUrl, THROUGHPUT_TURNS, concurrency);
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
  };
}
