/**
 * Benchmark plumbing: the test helpers' server launcher with CPU and memory accounting and a bounded
 * stop (the same stop serves other server processes, such as the Hono baseline), a lean SSE client
 * that stamps every event with a high-resolution receive time (kept apart from the tests' client so
 * that measurement code does no per-wait re-parsing), the garbage collections of the bench client and
 * of a server (whose pauses are in a latency figure), percentile summaries, and fresh processes for
 * measurements that must not share the bench's heap.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { PerformanceObserver, performance, type PerformanceEntry } from "node:perf_hooks";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { TurnEvent } from "../src/events.js";
import {
  PROJECT_ROOT,
  SERVER_NODE_FLAGS,
  startServer as startServerProcess,
  type ServerHandle,
} from "../test/helpers/server.js";

const SERVER_START_LIMIT_MS = 30_000;
/** How long a bench request, and a wait for an event on a stream, may take before the run fails. */
export const REQUEST_LIMIT_MS = 10_000;
export const EVENT_WAIT_LIMIT_MS = 10_000;
const SERVER_STOP_GRACE_MS = 12_000;
const SERVER_KILL_WAIT_MS = 3_000;
/** Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ, 100 on every mainstream Linux). */
const PROC_CLOCK_TICKS_PER_SECOND = 100;

export type Print = (line?: string) => void;

/** Epoch milliseconds with sub-millisecond resolution, comparable with the server's `at` stamps. */
export function epochNowMs(): number {
  return performance.timeOrigin + performance.now();
}

export function describeMachine(): string[] {
  const processors = cpus();
  return [
    `node      ${process.version} (${process.platform}/${process.arch})`,
    `cpu       ${processors[0]?.model.trim() ?? "unknown"}`,
    `cores     ${processors.length}`,
    `load      ${formatLoadAverage()} (the machine may be shared: other processes add noise)`,
  ];
}

/** The 1, 5 and 15 minute load averages: `1.61 / 1.42 / 1.26 (1/5/15 min)`. */
export function formatLoadAverage(): string {
  const averages = loadavg().map((load) => load.toFixed(2));
  return `${averages.join(" / ")} (1/5/15 min)`;
}

/** Rejects with `label` when `promise` has not settled within `limitMs`. */
export async function withTimeout<T>(promise: Promise<T>, limitMs: number, label: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${label}: no answer within ${limitMs} ms`)), limitMs);
  });
  try {
    return await Promise.race([promise, expiry]);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------------
// Measurement processes

/**
 * Runs the bench module `script` with `args` in a fresh Node process with the server's Node flags (its
 * sources through tsx, as `npm start` runs them; PATH and HOME its only environment, as a test server's),
 * and resolves with what it printed once it exited with 0. It is killed, and the run fails, at
 * `limitMs`; it is killed when the bench exits first.
 */
export async function runMeasurementProcess(
  script: string,
  args: readonly string[],
  limitMs: number,
  label: string,
): Promise<string> {
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, "--import", "tsx", script, ...args], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, limitMs);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  try {
    // "close", not "exit": it comes once stdout and stderr have ended too
    const [code, signal] = (await once(child, "close").catch((error: unknown) => {
      throw new Error(`${label}: could not start: ${error instanceof Error ? error.message : String(error)}`);
    })) as [number | null, NodeJS.Signals | null];
    if (timedOut) throw new Error(`${label}: did not finish within ${limitMs} ms`);
    if (code !== 0) {
      throw new Error(`${label}: ended with ${code ?? signal}${stderr.trim() ? `:\n${stderr.trim()}` : ""}`);
    }
    return stdout;
  } finally {
    clearTimeout(timer);
    process.removeListener("exit", kill);
  }
}

// ---------------------------------------------------------------------------------------------------
// Server processes

export type BenchServer = {
  label: string;
  baseUrl: string;
  /** CPU time (user + system) the server process has used so far; undefined without /proc. */
  cpuTimeMs(): number | undefined;
  /** The server process's resident set size (VmRSS) in bytes; undefined without /proc. */
  residentMemoryBytes(): number | undefined;
  /** SIGTERM, SIGKILL after a grace period; deletes the data directory. Returns how it ended. */
  stop(): Promise<string>;
};

/** A child process serving HTTP, as `trackServer` needs to know it. */
export type ServerProcess = {
  baseUrl: string;
  pid: number | undefined;
  /** Sends a signal and resolves with the exit code (or signal name). */
  stop(signal: NodeJS.Signals): Promise<number | string | null>;
  /** Removes what the process left behind (after it has exited). */
  cleanup(): void;
};

const liveServers = new Set<BenchServer>();

/**
 * Starts the built server as the Docker image runs it (`node`, SERVER_NODE_FLAGS, `dist/main.js`),
 * through test/helpers/server.ts on a free loopback port with a fresh data directory, as the tests do,
 * adding what a benchmark needs: the process's CPU time and memory, and a stop that escalates from
 * SIGTERM to SIGKILL and always removes the data directory.
 */
export async function startServer(label: string, environment: Record<string, string>): Promise<BenchServer> {
  let handle: ServerHandle;
  try {
    handle = await startServerProcess({
      env: { LOG_LEVEL: "info", ...environment },
      timeoutMs: SERVER_START_LIMIT_MS,
      built: true,
    });
  } catch (error) {
    throw new Error(`${label} server did not start: ${(error as Error).message}`, { cause: error });
  }
  // The helper keeps every log line for the tests to read; here the log is drained unread, so that
  // the bench client does not parse two lines a turn for reins (the baseline logs nothing).
  handle.child.stdout?.removeAllListeners("data").resume();
  return trackServer(label, {
    baseUrl: handle.baseUrl,
    pid: handle.child.pid,
    stop: (signal) => handle.stop(signal),
    cleanup: () => handle.cleanup(),
  });
}

/** A started server process as a BenchServer, stopped by `stopAllServers` if still running then. */
export function trackServer(label: string, serverProcess: ServerProcess): BenchServer {
  const { pid } = serverProcess;
  let stopped: Promise<string> | undefined;
  const server: BenchServer = {
    label,
    baseUrl: serverProcess.baseUrl,
    cpuTimeMs: () => (pid === undefined ? undefined : processCpuTimeMs(pid)),
    residentMemoryBytes: () => (pid === undefined ? undefined : processResidentMemoryBytes(pid)),
    stop() {
      stopped ??= stopProcess(serverProcess).finally(() => {
        liveServers.delete(server);
        serverProcess.cleanup();
      });
      return stopped;
    },
  };
  liveServers.add(server);
  return server;
}

/** SIGTERM, then SIGKILL if it has not exited after a grace period; says how it ended. */
async function stopProcess(serverProcess: ServerProcess): Promise<string> {
  const describe = (how: number | string | null) =>
    typeof how === "number" ? `exit code ${how}` : String(how);
  const graceful = await Promise.race([
    serverProcess.stop("SIGTERM").then(describe),
    sleep(SERVER_STOP_GRACE_MS).then(() => undefined),
  ]);
  if (graceful !== undefined) return graceful;
  const killed = await Promise.race([
    serverProcess.stop("SIGKILL").then(describe),
    sleep(SERVER_KILL_WAIT_MS).then(() => "unknown"),
  ]);
  return `killed after ${SERVER_STOP_GRACE_MS} ms without exiting (${killed})`;
}

/** VmRSS of process `pid` in bytes, read from /proc; undefined where that fails. */
function processResidentMemoryBytes(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match?.[1] === undefined ? undefined : Number(match[1]) * 1024;
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) of process `pid` in ms, read from /proc; undefined where that fails. */
function processCpuTimeMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after "(comm)" start at field 3 (state); utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? (ticks * 1000) / PROC_CLOCK_TICKS_PER_SECOND : undefined;
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) this process has used so far, in ms. */
export function ownCpuTimeMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** Stops every server still running (used on failure and on interruption). */
export async function stopAllServers(): Promise<void> {
  await Promise.allSettled([...liveServers].map((server) => server.stop()));
}

function sleep(milliseconds: number): Promise<void> {
  return new Promise((resolveSleep) => setTimeout(resolveSleep, milliseconds).unref());
}

// ---------------------------------------------------------------------------------------------------
// SSE client

/** A turn event as the client received it. */
export type ReceivedEvent<E extends TurnEvent = TurnEvent> = {
  event: E;
  /** `performance.now()` when the chunk carrying it was read. */
  receivedAtMs: number;
  /** The same instant in epoch milliseconds (fractional), comparable with `event.at`. */
  receivedEpochMs: number;
};

type Waiter = { predicate: (event: TurnEvent) => boolean; resolve: (received: ReceivedEvent) => void };

/** One `text/event-stream` response read to its end; events are parsed once, as they arrive. */
export class EventStream {
  readonly received: ReceivedEvent[] = [];
  /** Resolves when the server closes the stream (or the connection fails). */
  readonly ended: Promise<void>;
  private readonly waiters = new Set<Waiter>();
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private finished = false;

  private constructor(body: ReadableStream<Uint8Array>) {
    const reader = body.getReader();
    this.reader = reader;
    let chunkReceivedAtMs = 0;
    const parser = createParser({
      onEvent: (message: EventSourceMessage) => {
        if (message.event === "ping") return;
        const received: ReceivedEvent = {
          event: JSON.parse(message.data) as TurnEvent,
          receivedAtMs: chunkReceivedAtMs,
          receivedEpochMs: performance.timeOrigin + chunkReceivedAtMs,
        };
        this.received.push(received);
        for (const waiter of this.waiters) {
          if (!waiter.predicate(received.event)) continue;
          this.waiters.delete(waiter);
          waiter.resolve(received);
        }
      },
    });
    const decoder = new TextDecoder();
    this.ended = (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          chunkReceivedAtMs = performance.now();
          parser.feed(decoder.decode(value, { stream: true }));
        }
      } catch {
        // connection reset or cancelled: the stream has ended all the same
      } finally {
        this.finished = true;
        this.waiters.clear();
      }
    })();
  }

  /** Starts a turn with `POST /api/sessions/stream`. */
  static async startTurn(
    baseUrl: string,
    body: { message: string; sessionId?: string },
  ): Promise<EventStream> {
    const response = await fetch(`${baseUrl}/api/sessions/stream`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!response.ok || !response.body) {
      throw new Error(`POST /api/sessions/stream: HTTP ${response.status} ${await response.text()}`);
    }
    return new EventStream(response.body);
  }

  /** The first event matching `predicate` (already received ones count). */
  async waitFor<E extends TurnEvent>(
    predicate: (event: TurnEvent) => event is E,
    limitMs: number,
    label: string,
  ): Promise<ReceivedEvent<E>> {
    const found = this.received.find((received) => predicate(received.event));
    if (found) return found as ReceivedEvent<E>;
    if (this.finished) throw new Error(`${label}: stream ended without it; got ${this.typeList()}`);
    let waiter: Waiter | undefined;
    const arrival = new Promise<ReceivedEvent>((resolveArrival, reject) => {
      waiter = { predicate, resolve: resolveArrival };
      this.waiters.add(waiter);
      void this.ended.then(() =>
        reject(new Error(`${label}: stream ended without it; got ${this.typeList()}`)),
      );
    });
    try {
      return (await withTimeout(arrival, limitMs, `${label} (got ${this.typeList()})`)) as ReceivedEvent<E>;
    } finally {
      if (waiter) this.waiters.delete(waiter);
    }
  }

  /** Waits for the server to close the stream; returns every event received. */
  async untilEnd(limitMs: number, label: string): Promise<ReceivedEvent[]> {
    await withTimeout(this.ended, limitMs, `${label}: stream did not end (got ${this.typeList()})`);
    return this.received;
  }

  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => {});
    await this.ended;
  }

  /** The received event types, runs of one type collapsed: `turn_start, tool_start ×200`. */
  typeList(): string {
    const runs: { type: string; count: number }[] = [];
    for (const { event } of this.received) {
      const last = runs.at(-1);
      if (last?.type === event.type) last.count++;
      else runs.push({ type: event.type, count: 1 });
    }
    if (runs.length === 0) return "nothing";
    return runs.map((run) => (run.count === 1 ? run.type : `${run.type} ×${run.count}`)).join(", ");
  }
}

export function isEventOfType<T extends TurnEvent["type"]>(
  type: T,
): (event: TurnEvent) => event is Extract<TurnEvent, { type: T }> {
  return (event): event is Extract<TurnEvent, { type: T }> => event.type === type;
}

// ---------------------------------------------------------------------------------------------------
// Garbage collection

/** A stretch of `performance.now()` time. */
export type Span = { startMs: number; endMs: number };

/**
 * The garbage-collection pauses of this process (the bench client) while it is observed: a pause of
 * the client delays what it receives, so it is in a latency figure without being the server's doing.
 */
export class ClientGcPauses {
  private readonly pauses: Span[] = [];
  private readonly observer = new PerformanceObserver((list) => this.add(list.getEntries()));

  constructor() {
    this.observer.observe({ entryTypes: ["gc"] });
  }

  /**
   * Takes in every pause so far. Node hands a GC's entry to the observer a turn or two of the event
   * loop after the pause: after one more turn, what has not reached the callback yet is taken from the
   * observer's buffer.
   */
  async settle(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    this.add(this.observer.takeRecords());
  }

  /** The longest pause (ms) overlapping `span`, as of the last `settle`; undefined when none does. */
  longestDuring(span: Span): number | undefined {
    let longest: number | undefined;
    for (const pause of this.pauses) {
      if (pause.startMs >= span.endMs || pause.endMs <= span.startMs) continue;
      longest = Math.max(longest ?? 0, pause.endMs - pause.startMs);
    }
    return longest;
  }

  stop(): void {
    this.observer.disconnect();
  }

  private add(entries: readonly PerformanceEntry[]): void {
    for (const entry of entries) {
      this.pauses.push({ startMs: entry.startTime, endMs: entry.startTime + entry.duration });
    }
  }
}

/** A server's garbage collections so far, by kind (`minor`, `major`, …): how many, and their pauses in ms. */
export type ServerGcTotals = Map<string, { count: number; ms: number }>;

/**
 * The server's garbage collections so far, from the `nodejs_gc_duration_seconds` histogram its
 * `/metrics` serves (prom-client's default metrics, which `dist/main.js` turns on). A fresh server may
 * not have collected yet (its young generation is large): the histogram is then declared with no
 * samples, which is none so far, not a missing metric.
 */
export async function fetchServerGcTotals(baseUrl: string): Promise<ServerGcTotals> {
  const response = await withTimeout(fetch(`${baseUrl}/metrics`), REQUEST_LIMIT_MS, "GET /metrics");
  const text = await response.text();
  const totals: ServerGcTotals = new Map();
  const line = /^nodejs_gc_duration_seconds_(sum|count)\{kind="(\w+)"\} (\S+)$/gm;
  for (const [, field, kind, value] of text.matchAll(line)) {
    const entry = totals.get(kind!) ?? { count: 0, ms: 0 };
    if (field === "count") entry.count = Number(value);
    else entry.ms = Number(value) * 1000;
    totals.set(kind!, entry);
  }
  const declared = text.includes("# TYPE nodejs_gc_duration_seconds histogram");
  const sampled = /^nodejs_gc_duration_seconds_(sum|count)/m.test(text);
  if (totals.size === 0 && (!declared || sampled)) {
    throw new Error("the server's /metrics has no nodejs_gc_duration_seconds samples by kind");
  }
  return totals;
}

/** `later` − `earlier`, kind by kind, kinds without a collection left out. */
export function serverGcBetween(earlier: ServerGcTotals, later: ServerGcTotals): ServerGcTotals {
  const between: ServerGcTotals = new Map();
  for (const [kind, { count, ms }] of later) {
    const before = earlier.get(kind) ?? { count: 0, ms: 0 };
    if (count > before.count) between.set(kind, { count: count - before.count, ms: ms - before.ms });
  }
  return between;
}

/** `3 minor (41.2 ms in all), 1 major (9.4 ms in all)`, or `none`. */
export function formatServerGc(totals: ServerGcTotals): string {
  const kinds = [...totals].map(([kind, { count, ms }]) => `${count} ${kind} (${ms.toFixed(1)} ms in all)`);
  return kinds.length === 0 ? "none" : kinds.join(", ");
}

// ---------------------------------------------------------------------------------------------------
// Statistics

export type Summary = { count: number; p50: number; p99: number; max: number; min: number; mean: number };

/** Nearest-rank percentiles of `values` (which need not be sorted). */
export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) throw new Error("no samples to summarize");
  const sorted = [...values].sort((left, right) => left - right);
  const rank = (percent: number) =>
    sorted[Math.max(0, Math.ceil((percent / 100) * sorted.length) - 1)] ?? NaN;
  const total = sorted.reduce((sum, value) => sum + value, 0);
  return {
    count: sorted.length,
    p50: rank(50),
    p99: rank(99),
    max: sorted[sorted.length - 1] ?? NaN,
    min: sorted[0] ?? NaN,
    mean: total / sorted.length,
  };
}

/** One aligned report line: `label  n=…  p50 …  p99 …  max …` in milliseconds. */
export function formatSummaryMs(label: string, summary: Summary, labelWidth = 44): string {
  const cell = (name: string, value: number) => `${name} ${value.toFixed(2).padStart(8)} ms`;
  return [
    `  ${label.padEnd(labelWidth)}`,
    `n=${String(summary.count).padEnd(4)}`,
    cell("p50", summary.p50),
    cell("p99", summary.p99),
    cell("max", summary.max),
  ].join("  ");
}
