/**
 * MCP servers as tools (docs/semantics.md#mcp-servers), in-process against real MCP servers built with the
 * SDK's server classes: stdio children (test/support/mcp-servers/test-server.ts) and a Streamable HTTP server
 * on a loopback port. What a server receives is read from the file it records cancellations in.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryHistoryStore, createRuntime, parseConfig, type Runtime } from "../../src/index.js";
import { MCP_CANCEL_REASON } from "../../src/mcp/index.js";
import { eventually } from "../helpers/eventually.js";
import { resultOf, runTurn } from "../helpers/runtime-turns.js";
import { listProcesses } from "../helpers/processes.js";
import { PROJECT_ROOT } from "../helpers/server.js";
import { startHttpMcpServer, startSseOnlyMcpServer } from "../support/mcp-servers/http-server.js";

const SERVER_SCRIPT = join(PROJECT_ROOT, "test/support/mcp-servers/test-server.ts");
const READY_WAIT_MS = 30_000;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Setup = { runtime: Runtime; recordFile: string; marker: string; dataDir: string };

function stdioServer(marker: string, recordFile: string) {
  return {
    command: process.execPath,
    args: ["--import", "tsx", SERVER_SCRIPT, marker],
    env: { MCP_RECORD_FILE: recordFile },
    cwd: PROJECT_ROOT,
  };
}

function build(
  config: Record<string, unknown> = {},
  servers?: Record<string, unknown>,
  logger = pino({ level: "silent" }),
): Setup {
  const dataDir = mkdtempSync(join(tmpdir(), "reins-mcp-"));
  const recordFile = join(dataDir, "cancellations.jsonl");
  const marker = `reins-mcp-marker-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const runtime = createRuntime(
    parseConfig({
      dataDir,
      resilience: { retry: { maxAttempts: 1 } },
      stream: { progressAfterMs: 100, progressIntervalMs: 100 },
      mcpServers: servers ?? { t: stdioServer(marker, recordFile) },
      ...config,
    }).config,
    { store: createMemoryHistoryStore(), logger },
  );
  cleanups.push(async () => {
    await runtime.mcp.stop();
    runtime.store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { runtime, recordFile, marker, dataDir };
}

async function ready(runtime: Runtime, name = "t") {
  return eventually(() => {
    const server = runtime.mcp.list().find((candidate) => candidate.name === name);
    expect(server?.status).toBe("ready");
    return server!;
  }, READY_WAIT_MS);
}

function cancellations(recordFile: string): { tool: string; reason: string }[] {
  if (!existsSync(recordFile)) return [];
  return readFileSync(recordFile, "utf8")
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const { tool, reason } = JSON.parse(line) as { tool: string; reason: string };
      return { tool, reason };
    });
}

function markerProcesses(marker: string) {
  return listProcesses().filter((process) => {
    if (process.state === "Z") return false;
    try {
      return readFileSync(`/proc/${process.pid}/cmdline`, "utf8").includes(marker);
    } catch {
      return false;
    }
  });
}

describe("MCP servers as tools", () => {
  it("offers the server's tools as <server>__<tool> with its description and JSON Schema, and calls them", async () => {
    const { runtime } = build();
    const server = await ready(runtime);
    expect(server).toMatchObject({ name: "t", transport: "stdio", lastError: null, restarts: 0 });
    expect(server.tools).toEqual(expect.arrayContaining(["t__progress", "t__silent", "t__echo"]));
    const spec = runtime.registry.specs().find((candidate) => candidate.name === "t__echo");
    expect(spec?.description).toBe("Echoes text.");
    expect(spec?.inputSchema).toMatchObject({ type: "object", properties: { text: { type: "string" } } });
    const events = await runTurn(runtime, '/tool t__echo {"text":"hello over stdio"}');
    expect(resultOf(events)).toMatchObject({ isError: false, result: "hello over stdio" });
  }, 60_000);

  it("progress keeps a call alive past its idle limit, and its message becomes tool_progress.message", async () => {
    // progress every 400 ms against a 3 s idle limit (a stalled process must not look idle), for 4 s
    const { runtime } = build({ tools: { overrides: { t__progress: { idleTimeoutMs: 3_000 } } } });
    await ready(runtime);
    const events = await runTurn(runtime, '/tool t__progress {"steps":10,"intervalMs":400}');
    expect(resultOf(events)).toMatchObject({
      isError: false,
      result: "done after 10 steps",
      status: "complete",
    });
    const messages = events.flatMap((event) => (event.type === "tool_progress" ? [event.message] : []));
    expect(messages).toContain("step 3 of 10");
  }, 60_000);

  it("silence hits the idle limit: timeout result, and the server receives notifications/cancelled with the fixed reason", async () => {
    const { runtime, recordFile } = build({ tools: { overrides: { t__silent: { idleTimeoutMs: 1_000 } } } });
    await ready(runtime);
    const events = await runTurn(runtime, '/tool t__silent {"ms":4000}');
    expect(resultOf(events)).toMatchObject({ isError: true, status: "timeout" });
    await eventually(() =>
      expect(cancellations(recordFile)).toEqual([{ tool: "silent", reason: MCP_CANCEL_REASON }]),
    );
  }, 60_000);

  it.each([
    ["an abort of the turn", "turn"],
    ["a per-tool cancel", "tool"],
  ] as const)(
    "%s sends notifications/cancelled with the fixed reason",
    async (_label, how) => {
      const { runtime, recordFile } = build();
      await ready(runtime);
      const events = await runTurn(runtime, '/tool t__silent {"ms":3000}', (event, turnId) => {
        if (event.type !== "tool_start") return;
        setTimeout(() => {
          if (how === "turn") runtime.manager.abortTurn(turnId, "user");
          else runtime.manager.abortTool(turnId, event.toolId);
        }, 300);
      });
      expect(resultOf(events)).toMatchObject({ isError: true, status: "cancelled" });
      await eventually(() =>
        expect(cancellations(recordFile)).toEqual([{ tool: "silent", reason: MCP_CANCEL_REASON }]),
      );
    },
    60_000,
  );

  it("an isError result is a permanent tool error (not retried)", async () => {
    const { runtime } = build({ resilience: { retry: { maxAttempts: 3, initialDelayMs: 10 } } });
    await ready(runtime);
    const events = await runTurn(runtime, '/tool t__fail {"message":"boom"}');
    expect(resultOf(events)).toMatchObject({ isError: true, status: "error" });
    expect(resultOf(events).result).toContain("failed: boom");
    expect(events.some((event) => event.type === "tool_retry")).toBe(false);
  }, 60_000);

  it("a server that exits mid-call fails the call transiently and is restarted back to ready", async () => {
    const { runtime } = build();
    await ready(runtime);
    const events = await runTurn(runtime, "/tool t__exit_now {}");
    const result = resultOf(events);
    expect(result).toMatchObject({ isError: true, status: "error" });
    const trace = runtime.store.listTrace(events[0]!.turnId);
    expect(trace.some((entry) => JSON.stringify(entry).includes('"classification":"transient"'))).toBe(true);
    const restarted = await eventually(() => {
      const server = runtime.mcp.list()[0]!;
      expect(server).toMatchObject({ status: "ready", restarts: 1 });
      return server;
    }, READY_WAIT_MS);
    expect(restarted.lastError).toBeNull();
    const again = await runTurn(runtime, '/tool t__echo {"text":"back"}');
    expect(resultOf(again)).toMatchObject({ isError: false, result: "back" });
  }, 60_000);

  it("a reply too large to read fails the call, and the server is down saying so, then back", async () => {
    const warnings: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => void warnings.push(line) });
    const { runtime } = build({}, undefined, logger);
    await ready(runtime);
    // past the SDK's 10 MiB read buffer: the message cannot be read, the connection is closed
    const events = await runTurn(runtime, '/tool t__big {"bytes":11000000}');
    expect(resultOf(events)).toMatchObject({ isError: true, status: "error" });
    const down = warnings.map((line) => JSON.parse(line) as { msg: string; error?: string });
    expect(down.find((line) => line.msg === "MCP server down")?.error).toMatch(
      /^reins closed the connection: one message from the server was too large \(ReadBuffer exceeded maximum size of 10485760 bytes\)$/,
    );
    await eventually(
      () => expect(runtime.mcp.list()[0]).toMatchObject({ status: "ready", restarts: 1 }),
      READY_WAIT_MS,
    );
    const again = await runTurn(runtime, '/tool t__big {"bytes":1000}');
    expect(resultOf(again)).toMatchObject({ isError: false, result: "x".repeat(1000) });
  }, 60_000);

  it("notifications/tools/list_changed adds the new tool to the registry", async () => {
    const { runtime } = build();
    await ready(runtime);
    expect(runtime.registry.get("t__late")).toBeUndefined();
    await runTurn(runtime, '/tool t__add_tool {"name":"late"}');
    await eventually(() => expect(runtime.registry.specs().map((spec) => spec.name)).toContain("t__late"));
    const events = await runTurn(runtime, "/tool t__late {}");
    expect(resultOf(events)).toMatchObject({ isError: false, result: "late answers" });
  }, 60_000);

  it("refuses a tool whose sanitised name collides, with a warning naming both", async () => {
    const warnings: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => void warnings.push(line) });
    const { runtime } = build({}, undefined, logger);
    await ready(runtime);
    await runTurn(runtime, '/tool t__add_tool {"name":"x.y"}');
    await eventually(() => expect(runtime.registry.has("t__x_y")).toBe(true));
    await runTurn(runtime, '/tool t__add_tool {"name":"x_y"}');
    await eventually(() =>
      expect(warnings.join("\n")).toContain(
        'MCP tool \\"x_y\\" of server \\"t\\" is refused: its name \\"t__x_y\\" collides with tool \\"x.y\\" of the same server',
      ),
    );
    const events = await runTurn(runtime, "/tool t__x_y {}");
    expect(resultOf(events)).toMatchObject({ isError: false, result: "x.y answers" });
  }, 60_000);

  it("a server that cannot start does not block boot: it is down and its tools answer [UNAVAILABLE]", async () => {
    const { runtime } = build({}, { bad: { command: "/nonexistent/mcp-server" } });
    expect(runtime.mcp.list()[0]).toMatchObject({ name: "bad", status: "connecting" });
    await eventually(() =>
      expect(runtime.mcp.list()[0]).toMatchObject({
        status: "down",
        lastError: expect.stringContaining("ENOENT"),
      }),
    );
    const events = await runTurn(runtime, '/tool bad__search {"q":"x"}');
    expect(resultOf(events).result).toMatch(/^\[UNAVAILABLE\] MCP server "bad" is not available/);
    const trace = runtime.store.listTrace(events[0]!.turnId);
    expect(trace.some((entry) => JSON.stringify(entry).includes('"classification":"transient"'))).toBe(true);
    const metrics = await runtime.metrics.render();
    expect(metrics).toContain('reins_mcp_call_failures_total{server="bad",kind="unavailable"} 1');
    await eventually(() => expect(runtime.mcp.list()[0]!.restarts).toBeGreaterThanOrEqual(1), 10_000);
  }, 60_000);

  it("speaks Streamable HTTP", async () => {
    const http = await startHttpMcpServer();
    cleanups.push(() => http.close());
    const { runtime } = build({}, { web: { url: http.url } });
    const server = await ready(runtime, "web");
    expect(server).toMatchObject({ transport: "http", tools: ["web__echo", "web__hang"] });
    const events = await runTurn(runtime, '/tool web__echo {"text":"hi"}');
    expect(resultOf(events)).toMatchObject({ isError: false, result: "http: hi" });
    expect(await runtime.metrics.render()).toContain('reins_mcp_calls_total{server="web"} 1');
  }, 60_000);

  it("falls back to the SSE transport for a server without Streamable HTTP, and stays connected", async () => {
    const sse = await startSseOnlyMcpServer();
    cleanups.push(() => sse.close());
    const { runtime } = build({}, { old: { url: sse.url } });
    const server = await ready(runtime, "old");
    expect(server).toMatchObject({ transport: "http", tools: ["old__echo", "old__hang"] });
    const events = await runTurn(runtime, '/tool old__echo {"text":"hi"}');
    expect(resultOf(events)).toMatchObject({ isError: false, result: "http: hi" });
    // one stream, no reconnection loop: the fallback is not mistaken for a lost connection
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(runtime.mcp.list().find((entry) => entry.name === "old")).toMatchObject({
      status: "ready",
      restarts: 0,
    });
    expect(sse.streams()).toBe(1);
  }, 60_000);

  it("stopping leaves no process of a stdio server alive, the child it started included", async () => {
    const { runtime, marker } = build();
    await ready(runtime);
    const events = await runTurn(runtime, "/tool t__spawn_child {}");
    const childPid = Number(resultOf(events).result);
    expect(markerProcesses(marker).map((process) => process.pid)).toContain(childPid);
    await runtime.mcp.stop();
    await eventually(() => expect(markerProcesses(marker)).toEqual([]));
  }, 60_000);
});
