/**
 * A section of `npm run bench`: MCP servers as tools, in-process. (1) What an MCP call costs over a
 * built-in no-op: `ToolRunner.run` of the built-in `echo` against `t__echo` of a real stdio MCP server
 * (test/support/mcp-servers/test-server.ts, the SDK's McpServer), both sequential. (2) Time from an
 * abort of a running call (turn abort) to the server's receipt of `notifications/cancelled`, as the
 * server records it (its `Date.now()`, same machine clock).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import pino from "pino";
import { parseConfig } from "../src/config/load.js";
import { createMemoryHistoryStore } from "../src/history/sqlite-store.js";
import { createRuntime, type Runtime } from "../src/runtime.js";
import type { CallScope } from "../src/tools/runner.js";
import { formatSummaryMs, summarize, type Print } from "./lib.js";

const PROJECT_ROOT = join(import.meta.dirname, "..");
const SERVER_SCRIPT = join(PROJECT_ROOT, "test/support/mcp-servers/test-server.ts");
const READY_WAIT_MS = 30_000;
const WARMUP_CALLS = 50;
const TIMED_CALLS = 500;
const ABORT_SAMPLES = 20;
const ABORT_AFTER_MS = 50;
const RECEIPT_WAIT_MS = 5_000;

export async function measureMcp(print: Print, section: number): Promise<void> {
  print(`${section}. MCP tools (in-process, stdio server built with the SDK's McpServer)`);
  const dataDir = mkdtempSync(join(tmpdir(), "reins-bench-mcp-"));
  const recordFile = join(dataDir, "cancellations.jsonl");
  const runtime = createRuntime(
    parseConfig({
      dataDir,
      resilience: { retry: { maxAttempts: 1 } },
      mcpServers: {
        t: {
          command: process.execPath,
          args: ["--import", "tsx", SERVER_SCRIPT, "reins-bench-mcp"],
          env: { MCP_RECORD_FILE: recordFile },
          cwd: PROJECT_ROOT,
        },
      },
    }).config,
    { store: createMemoryHistoryStore(), logger: pino({ level: "silent" }) },
  );
  try {
    await waitReady(runtime);
    const builtin = await timeCalls(runtime, "echo");
    const mcp = await timeCalls(runtime, "t__echo");
    print(formatSummaryMs("built-in echo (ToolRunner.run)", summarize(builtin)));
    print(formatSummaryMs("MCP t__echo over stdio (ToolRunner.run)", summarize(mcp)));
    print(
      `  MCP overhead per call: p50 ${(summarize(mcp).p50 - summarize(builtin).p50).toFixed(3)} ms ` +
        `(a JSON-RPC round trip through a pipe to another process)`,
    );
    const latencies = await measureCancelReceipt(runtime, recordFile);
    print(formatSummaryMs("abort → server receives notifications/cancelled", summarize(latencies)));
  } finally {
    await runtime.mcp.stop();
    runtime.store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function waitReady(runtime: Runtime): Promise<void> {
  const deadline = performance.now() + READY_WAIT_MS;
  while (runtime.mcp.list()[0]?.status !== "ready") {
    if (performance.now() > deadline)
      throw new Error(`MCP server not ready: ${JSON.stringify(runtime.mcp.list())}`);
    await delay(20);
  }
}

function scope(signal: AbortSignal): CallScope {
  return {
    turnId: "turn_bench",
    sessionId: "ses_bench",
    agentId: "default",
    workspace: undefined,
    allowedRoots: [],
    depth: 0,
    signal,
  };
}

/** Milliseconds per call of `toolName`, sequential, after a warm-up. */
async function timeCalls(runtime: Runtime, toolName: string): Promise<number[]> {
  const signal = new AbortController().signal;
  const samples: number[] = [];
  for (let index = 0; index < WARMUP_CALLS + TIMED_CALLS; index++) {
    const startedAt = performance.now();
    const outcome = await runtime.runner.run(
      { callId: `call_${index}`, name: toolName, input: { text: "x" } },
      scope(signal),
    );
    if (outcome.status !== "complete") throw new Error(`${toolName}: ${outcome.result}`);
    if (index >= WARMUP_CALLS) samples.push(performance.now() - startedAt);
  }
  return samples;
}

/** Per sample: a `t__silent` call is aborted; ms until the server recorded the cancellation. */
async function measureCancelReceipt(runtime: Runtime, recordFile: string): Promise<number[]> {
  const latencies: number[] = [];
  for (let sample = 0; sample < ABORT_SAMPLES; sample++) {
    const before = receipts(recordFile).length;
    const controller = new AbortController();
    const running = runtime.runner.run(
      { callId: `call_abort_${sample}`, name: "t__silent", input: { ms: 10_000 } },
      scope(controller.signal),
    );
    await delay(ABORT_AFTER_MS);
    const abortedAt = Date.now();
    controller.abort();
    await running;
    const deadline = performance.now() + RECEIPT_WAIT_MS;
    let received: number | undefined;
    while (received === undefined) {
      received = receipts(recordFile)[before];
      if (received === undefined) {
        if (performance.now() > deadline)
          throw new Error("the server never received notifications/cancelled");
        await delay(1);
      }
    }
    latencies.push(received - abortedAt);
  }
  return latencies;
}

function receipts(recordFile: string): number[] {
  if (!existsSync(recordFile)) return [];
  return readFileSync(recordFile, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { at: number }).at);
}
