/**
 * Many concurrent streaming turns against one server: 2,000 turns, each a long `sleep` with
 * heartbeats whose progress the server reports every second, opened with a bounded number of
 * connection setups in flight. With all of them open: the server's resident memory (VmRSS) and the
 * delivery lag of every event received in a fixed window (client receive time − the event's `at`,
 * one clock since all traffic is on loopback). Then every client stream is cancelled and the server
 * must end every turn (ON_DISCONNECT=abort). Bounded in time at every step.
 */
import { performance } from "node:perf_hooks";
import { isTerminalEvent } from "../src/events.js";
import {
  ClientGcPauses,
  EventStream,
  fetchServerGcTotals,
  formatServerGc,
  formatSummaryMs,
  isEventOfType,
  serverGcBetween,
  summarize,
  withTimeout,
  type BenchServer,
  type Print,
  type ServerGcTotals,
  type Span,
} from "./lib.js";

const CONCURRENT_TURNS = 2_000;
/** Connection setups (request sent → the turn's tool_start received) in flight at once. */
const OPEN_CONCURRENCY = 32;
const OPEN_LIMIT_MS = 120_000;
const TOOL_START_LIMIT_MS = 30_000;
/** Longer than opening and the window together: the turns end when their clients go away. */
const HOLD_SLEEP_MS = 240_000;
const HEARTBEAT_MS = 1_000;
const PROGRESS_INTERVAL_MS = 1_000;
const WINDOW_MS = 5_000;
const MEMORY_SAMPLE_INTERVAL_MS = 250;
const CANCEL_LIMIT_MS = 30_000;
const DRAIN_LIMIT_MS = 30_000;
const DRAIN_POLL_INTERVAL_MS = 100;
const BYTES_PER_MEGABYTE = 1_048_576;
const TURN_MESSAGE = `/tool sleep {"ms":${HOLD_SLEEP_MS},"heartbeatMs":${HEARTBEAT_MS}}`;

/** The server settings this section needs beside the common ones (the per-principal limits raised). */
export const CONCURRENCY_SERVER_ENVIRONMENT: Record<string, string> = {
  PROGRESS_AFTER_MS: String(PROGRESS_INTERVAL_MS),
  PROGRESS_INTERVAL_MS: String(PROGRESS_INTERVAL_MS),
  ON_DISCONNECT: "abort",
};

export async function measureConcurrentStreams(
  server: BenchServer,
  print: Print,
  section: number,
): Promise<void> {
  print(
    `${section}. ${CONCURRENT_TURNS.toLocaleString("en-US")} concurrent streaming turns against one server — ` +
      `each \`${TURN_MESSAGE}\`, PROGRESS_AFTER_MS = PROGRESS_INTERVAL_MS = ${PROGRESS_INTERVAL_MS}`,
  );
  print(
    `   opened with ${OPEN_CONCURRENCY} setups in flight (request → tool_start); then a ${WINDOW_MS / 1000} s window with all open: ` +
      `server VmRSS (sampled every ${MEMORY_SAMPLE_INTERVAL_MS} ms) and delivery lag of every event received in it`,
  );
  const memory = new MemorySampler(server);
  const clientPauses = new ClientGcPauses();
  const idleBytes = server.residentMemoryBytes();
  const opening = new AbortController();
  const streams: EventStream[] = [];
  try {
    const openStartedAtMs = performance.now();
    const opened = openStreams(server.baseUrl, streams, opening.signal);
    // if the time limit wins, a later failure of the abandoned opening must not go unhandled
    opened.catch(() => {});
    const setupLatencies = await withTimeout(
      opened,
      OPEN_LIMIT_MS,
      `opening ${CONCURRENT_TURNS} streams (${streams.length} open so far)`,
    );
    const openedInMs = performance.now() - openStartedAtMs;

    const gcBefore = await fetchServerGcTotals(server.baseUrl);
    const windowStartMs = performance.now();
    memory.resetPeak();
    await delay(WINDOW_MS);
    const windowEndMs = performance.now();
    const serverGc = serverGcBetween(gcBefore, await fetchServerGcTotals(server.baseUrl));
    const openBytes = server.residentMemoryBytes();
    const lags = lagsWithin(streams, windowStartMs, windowEndMs);
    await clientPauses.settle();

    print(
      `  opened ${streams.length.toLocaleString("en-US")} streams in ${(openedInMs / 1000).toFixed(1)} s ` +
        `(${(streams.length / (openedInMs / 1000)).toFixed(0)} turns/s started)`,
    );
    print(formatSummaryMs("setup: request sent → tool_start received", summarize(setupLatencies)));
    print(
      formatSummaryMs(
        `delivery lag in the window (${lags.length.toLocaleString("en-US")} events)`,
        summarize(lags.map((lag) => lag.ms)),
      ),
    );
    printLagAttribution(print, lags, clientPauses, serverGc);
    const perStream =
      openBytes === undefined || idleBytes === undefined
        ? "n/a"
        : `${((openBytes - idleBytes) / streams.length / 1024).toFixed(0)} kB`;
    print(
      `  server VmRSS: ${megabytes(idleBytes)} idle before, ${megabytes(openBytes)} with all open ` +
        `(${perStream} per open turn and stream), peak ${megabytes(memory.peakBytes)} in the window; ` +
        `bench client RSS ${megabytes(process.memoryUsage().rss)}`,
    );
  } catch (error) {
    opening.abort();
    await Promise.allSettled(streams.map((stream) => stream.cancel()));
    throw error;
  } finally {
    memory.stop();
    clientPauses.stop();
  }
  const closing = await closeAll(server.baseUrl, streams);
  print(
    `  closed: ${streams.length.toLocaleString("en-US")} client streams cancelled; ` +
      `the server ended every turn ${closing.drainedInMs.toFixed(0)} ms after the last cancel (ON_DISCONNECT=abort); ` +
      `VmRSS then ${megabytes(server.residentMemoryBytes())}`,
  );
  print(
    `  (lag = client receive time − event.at; \`at\` is whole milliseconds, and the single bench client's own event loop is part of the lag)`,
  );
}

/** Opens the streams with bounded concurrency until done or `signal` aborts; each setup's latency in ms. */
async function openStreams(baseUrl: string, streams: EventStream[], signal: AbortSignal): Promise<number[]> {
  const latencies: number[] = [];
  let claimed = 0;
  const worker = async () => {
    while (claimed < CONCURRENT_TURNS && !signal.aborted) {
      const index = claimed++;
      const sentAtMs = performance.now();
      const stream = await EventStream.startTurn(baseUrl, { message: TURN_MESSAGE });
      // given up meanwhile (the caller cancels what it has): this one is not in that list
      if (signal.aborted) {
        await stream.cancel();
        return;
      }
      streams.push(stream);
      const toolStart = await stream.waitFor(
        isEventOfType("tool_start"),
        TOOL_START_LIMIT_MS,
        `concurrent turn ${index} tool_start`,
      );
      latencies.push(toolStart.receivedAtMs - sentAtMs);
    }
  };
  await Promise.all(Array.from({ length: OPEN_CONCURRENCY }, worker));
  return latencies;
}

/** One event's delivery lag: how long, and when (from the server's `at` to the client's receipt). */
type Lag = { ms: number; span: Span };

/** Lag of every event received within [startMs, endMs]; throws if a turn ended meanwhile. */
function lagsWithin(streams: readonly EventStream[], startMs: number, endMs: number): Lag[] {
  const lags: Lag[] = [];
  for (const [index, stream] of streams.entries()) {
    for (const received of stream.received) {
      if (isTerminalEvent(received.event)) {
        throw new Error(`concurrent turn ${index} ended while all should run: ${stream.typeList()}`);
      }
      if (received.receivedAtMs < startMs || received.receivedAtMs > endMs) continue;
      const ms = received.receivedEpochMs - received.event.at;
      lags.push({ ms, span: { startMs: received.receivedAtMs - ms, endMs: received.receivedAtMs } });
    }
  }
  if (lags.length === 0) throw new Error("no event arrived in the measurement window");
  return lags;
}

/**
 * Whose pauses are in the lag: the events whose way from the server to the client overlapped a garbage
 * collection of the bench client itself, and the lag of the others; the server's own collections in the
 * window (from its `/metrics`). Either side's pause delays every event due meanwhile.
 */
function printLagAttribution(
  print: Print,
  lags: readonly Lag[],
  clientPauses: ClientGcPauses,
  serverGc: ServerGcTotals,
): void {
  const clear: number[] = [];
  let longestClientPause = 0;
  for (const lag of lags) {
    const pause = clientPauses.longestDuring(lag.span);
    if (pause === undefined) clear.push(lag.ms);
    else longestClientPause = Math.max(longestClientPause, pause);
  }
  const overlapped = lags.length - clear.length;
  print(
    `    ${overlapped.toLocaleString("en-US")} of ${lags.length.toLocaleString("en-US")} events overlap a garbage-collection pause of the bench client itself` +
      (overlapped === 0 ? "" : ` (longest ${longestClientPause.toFixed(1)} ms)`),
  );
  if (overlapped > 0 && clear.length > 0) {
    print(formatSummaryMs("delivery lag of the others", summarize(clear)));
  }
  print(`    the server's own garbage collections in the window: ${formatServerGc(serverGc)}`);
}

/** Cancels every client stream, then waits until the server has no active turn left. */
async function closeAll(baseUrl: string, streams: readonly EventStream[]): Promise<{ drainedInMs: number }> {
  await withTimeout(
    Promise.all(streams.map((stream) => stream.cancel())),
    CANCEL_LIMIT_MS,
    "cancelling the client streams",
  );
  const cancelledAtMs = performance.now();
  const drainDeadlineMs = cancelledAtMs + DRAIN_LIMIT_MS;
  for (;;) {
    const response = await withTimeout(fetch(`${baseUrl}/api/turns/active`), DRAIN_LIMIT_MS, "active turns");
    const { turns } = (await response.json()) as { turns: unknown[] };
    if (turns.length === 0) return { drainedInMs: performance.now() - cancelledAtMs };
    if (performance.now() > drainDeadlineMs) {
      throw new Error(`${turns.length} turns still active ${DRAIN_LIMIT_MS} ms after their clients left`);
    }
    await delay(DRAIN_POLL_INTERVAL_MS);
  }
}

/** Samples a server's VmRSS on an interval, keeping the peak. */
class MemorySampler {
  peakBytes: number | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly server: BenchServer) {
    this.timer = setInterval(() => this.sample(), MEMORY_SAMPLE_INTERVAL_MS);
    this.timer.unref();
  }

  resetPeak(): void {
    this.peakBytes = undefined;
    this.sample();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private sample(): void {
    const bytes = this.server.residentMemoryBytes();
    if (bytes !== undefined) this.peakBytes = Math.max(this.peakBytes ?? 0, bytes);
  }
}

function megabytes(bytes: number | undefined, digits = 0): string {
  return bytes === undefined ? "n/a" : `${(bytes / BYTES_PER_MEGABYTE).toFixed(digits)} MB`;
}

function delay(milliseconds: number): Promise<void> {
  return new Promise((resolveDelay) => setTimeout(resolveDelay, milliseconds));
}
