/**
 * `npm run bench`: reins per tool call in-process against the Vercel AI SDK and OpenAI Agents JS;
 * then the real server over loopback HTTP/SSE — turns per second against a bare Hono SSE endpoint,
 * abort latency, timeout precision with 200 and 1,000 concurrent deadlines, 2,000 concurrent streams
 * (memory and delivery lag) — then the tool runner's and the renderer's own cost, and prints a report.
 * Each server measurement gets its own server process and data directory; everything is bounded in
 * time and cleaned up, and the process exits non-zero with a message when a measurement fails.
 */
import { performance } from "node:perf_hooks";
import { SERVER_NODE_FLAGS } from "../test/helpers/server.js";
import { measureAbortLatency } from "./abort-latency.js";
import { CONCURRENCY_SERVER_ENVIRONMENT, measureConcurrentStreams } from "./concurrency.js";
import { measureInProcess } from "./in-process.js";
import { measureMcp } from "./mcp.js";
import {
  describeMachine,
  formatLoadAverage,
  startServer,
  stopAllServers,
  withTimeout,
  type BenchServer,
} from "./lib.js";
import {
  RENDER_PROCESSES,
  combineRenderReports,
  formatRenderReport,
  measureRendererInFreshProcesses,
} from "./render-bench.js";
import { measureRunnerOverhead } from "./runner-overhead.js";
import { measureThroughput } from "./throughput.js";
import { TIMEOUT_SERVER_ENVIRONMENT, measureTimeoutPrecision } from "./timeout-precision.js";

/** The target is about five minutes on two cores; this only stops a run that hangs. */
const OVERALL_TIME_LIMIT_MS = 420_000;
/**
 * Every request of the bench comes from the one unauthenticated loopback principal, and several
 * sections run more turns and streams at once than the per-principal defaults (8 and 32) allow.
 */
const COMMON_SERVER_ENVIRONMENT: Record<string, string> = {
  MAX_TURNS_PER_PRINCIPAL: "100000",
  MAX_STREAMS_PER_PRINCIPAL: "100000",
};

function print(line = ""): void {
  console.log(line);
}

async function main(): Promise<void> {
  const benchStartedAtMs = performance.now();
  print(`reins benchmark — ${new Date().toISOString()}`);
  print("machine");
  for (const line of describeMachine()) print(`  ${line}`);
  print(
    `  all traffic on 127.0.0.1; fresh server processes (the build, node ${SERVER_NODE_FLAGS.join(" ")} dist/main.js, as the Docker image runs it; LOG_LEVEL=info) for each server section (section 2: one per server and concurrency level, and one to warm up the client), ` +
      `with ${Object.entries(COMMON_SERVER_ENVIRONMENT)
        .map(([name, value]) => `${name}=${value}`)
        .join(", ")}`,
  );
  print();

  const stopNotes: string[] = [];
  const withServer = async (
    label: string,
    environment: Record<string, string>,
    measure: (server: BenchServer) => Promise<void>,
  ) => {
    const server = await startServer(label, { ...COMMON_SERVER_ENVIRONMENT, ...environment });
    try {
      await measure(server);
    } finally {
      stopNotes.push(`${label}: ${await server.stop()}`);
    }
  };
  const section = async (measure: () => Promise<void>) => {
    const startedAtMs = performance.now();
    await measure();
    print(
      `  [section took ${((performance.now() - startedAtMs) / 1000).toFixed(1)} s; load now ${formatLoadAverage()}]`,
    );
    print();
  };

  await section(() => measureInProcess(print, 1));
  await section(() => measureThroughput(withServer, print, 2));
  await section(() => withServer("abort", {}, (server) => measureAbortLatency(server, print, 3)));
  await section(() =>
    withServer("timeouts", TIMEOUT_SERVER_ENVIRONMENT, (server) => measureTimeoutPrecision(server, print, 4)),
  );
  await section(() =>
    withServer("concurrency", CONCURRENCY_SERVER_ENVIRONMENT, (server) =>
      measureConcurrentStreams(server, print, 5),
    ),
  );
  await section(() => measureRunnerOverhead(print, 6));
  await section(async () => {
    print(
      "7. Transcript renderer — renderProviderRequest (render + adapter), thinking on, a system prompt, no budget cut",
    );
    const processReports = await measureRendererInFreshProcesses(RENDER_PROCESSES);
    const renderReport = combineRenderReports(processReports);
    for (const line of formatRenderReport(renderReport, processReports)) print(`  ${line}`);
    if (!renderReport.linear) throw new Error("render time did not grow linearly with history size");
  });

  await section(() => measureMcp(print, 8));

  print(`server shutdowns (SIGTERM): ${stopNotes.join("; ")}`);
  const unclean = stopNotes.filter((note) => !note.endsWith("exit code 0"));
  if (unclean.length > 0) print(`  warning: not every server exited cleanly with code 0`);
  print(`total bench time ${((performance.now() - benchStartedAtMs) / 1000).toFixed(1)} s`);
}

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
