/**
 * MCP servers that misbehave (docs/semantics.md#mcp-servers), in-process against real servers: stdio
 * children (test/support/mcp-servers/misbehaving-server.ts and test-server.ts) and a Streamable HTTP
 * server on a loopback port. A tool list that never ends, a server that fails soon after every start,
 * an HTTP server that dies under a running call, a busy stdio server that must not be taken for a dead
 * one, a result that is not a tool result, and an input that does not match the tool's schema.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryHistoryStore, createRuntime, parseConfig, type Runtime } from "../../src/index.js";
import { McpServers } from "../../src/mcp/index.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import { eventually } from "../helpers/eventually.js";
import { resultOf, runTurn } from "../helpers/runtime-turns.js";
import { PROJECT_ROOT } from "../helpers/server.js";
import { startHttpMcpServer } from "../support/mcp-servers/http-server.js";

const MISBEHAVING = join(PROJECT_ROOT, "test/support/mcp-servers/misbehaving-server.ts");
const TEST_SERVER = join(PROJECT_ROOT, "test/support/mcp-servers/test-server.ts");
const READY_WAIT_MS = 30_000;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function stdio(script: string, argument: string, env: Record<string, string> = {}) {
  return { command: process.execPath, args: ["--import", "tsx", script, argument], env, cwd: PROJECT_ROOT };
}

function build(servers: Record<string, unknown>, config: Record<string, unknown> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "reins-mcp-failures-"));
  const runtime = createRuntime(
    parseConfig({
      dataDir,
      resilience: { retry: { maxAttempts: 3, initialDelayMs: 10 } },
      mcpServers: servers,
      ...config,
    }).config,
    { store: createMemoryHistoryStore(), logger: pino({ level: "silent" }) },
  );
  cleanups.push(async () => {
    await runtime.mcp.stop();
    runtime.store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return runtime;
}

function statusOf(runtime: Runtime, name: string) {
  return runtime.mcp.list().find((server) => server.name === name);
}

describe("MCP servers that misbehave", () => {
  it.each([
    [
      "repeats a page of its tool list",
      "same-cursor",
      /^the server's tool list repeats a page \(cursor "again"\)$/,
    ],
    ["lists tools without end", "endless-pages", /^the server lists more than 1000 tools$/],
  ])(
    "a server that %s is down saying so, and lists nothing",
    async (_label, mode, lastError) => {
      const runtime = build({ pages: stdio(MISBEHAVING, mode) });
      await eventually(
        () => expect(statusOf(runtime, "pages")).toMatchObject({ status: "down", lastError, tools: [] }),
        READY_WAIT_MS,
      );
    },
    60_000,
  );

  it.each([
    ["is retried ever more slowly when it never stays up for the longest delay", 60_000, [100, 200, 400]],
    ["starts its backoff over after staying up for the longest delay", 250, [100, 100, 100]],
  ])(
    "a server that exits soon after every start %s",
    async (_label, maxDelayMs, expected) => {
      const retries: number[] = [];
      const logger = pino(
        { level: "warn" },
        {
          write: (line: string) => {
            const entry = JSON.parse(line) as { msg: string; retryInMs?: number };
            if (entry.msg === "MCP server down" && entry.retryInMs !== undefined)
              retries.push(entry.retryInMs);
          },
        },
      );
      const servers = new McpServers({
        servers: { flap: stdio(MISBEHAVING, "exit-after-ready") },
        registry: new ToolRegistry(),
        logger,
        backoff: { initialDelayMs: 100, maxDelayMs },
      });
      cleanups.push(() => servers.stop());
      servers.start();
      // each start is ready for about a second (the server exits 300 ms after `initialized`, plus the
      // time its process took to start): longer than 250 ms, shorter than a minute
      await eventually(() => expect(retries.length).toBeGreaterThanOrEqual(3), READY_WAIT_MS);
      expect(retries.slice(0, 3)).toEqual(expected);
    },
    60_000,
  );

  it("a Streamable HTTP server that dies is down, and a call running on it ends at once, not at its limit", async () => {
    const http = await startHttpMcpServer();
    cleanups.push(() => http.close());
    const runtime = build(
      { web: { url: http.url } },
      { tools: { overrides: { web__hang: { timeoutMs: 60_000, idleTimeoutMs: 60_000 } } } },
    );
    await eventually(() => expect(statusOf(runtime, "web")?.status).toBe("ready"), READY_WAIT_MS);
    const events = await runTurn(runtime, "/tool web__hang {}", (event) => {
      if (event.type === "tool_start") setTimeout(() => http.kill(), 200);
    });
    // the call's limits are a minute away: only the lost connection can have ended it
    expect(resultOf(events)).toMatchObject({ isError: true, status: "error" });
    expect(statusOf(runtime, "web")).toMatchObject({
      status: "down",
      lastError: expect.stringMatching(/then a ping failed/),
    });
    const again = await runTurn(runtime, '/tool web__echo {"text":"anyone?"}');
    expect(resultOf(again).result).toMatch(/^\[UNAVAILABLE\] MCP server "web" is not available/);
  }, 60_000);

  it("a stdio server that prints a stray line and is busy past the ping timeout keeps its call", async () => {
    // helper 78: the ping after a transport error took a healthy single-threaded server down mid-call
    const runtime = build(
      { b: stdio(MISBEHAVING, "busy") },
      { tools: { overrides: { b__busy: { timeoutMs: 60_000, idleTimeoutMs: 60_000 } } } },
    );
    await eventually(() => expect(statusOf(runtime, "b")?.status).toBe("ready"), READY_WAIT_MS);
    const events = await runTurn(runtime, "/tool b__busy {}");
    expect(resultOf(events)).toMatchObject({ isError: false, result: "done" });
    expect(statusOf(runtime, "b")).toMatchObject({ status: "ready", restarts: 0 });
  }, 60_000);

  it("a result that is not a tool result is a permanent error: the tool is called once", async () => {
    const recordDir = mkdtempSync(join(tmpdir(), "reins-mcp-calls-"));
    cleanups.push(() => rmSync(recordDir, { recursive: true, force: true }));
    const recordFile = join(recordDir, "calls.jsonl");
    const runtime = build({ m: stdio(MISBEHAVING, "malformed", { MCP_RECORD_FILE: recordFile }) });
    await eventually(() => expect(statusOf(runtime, "m")?.status).toBe("ready"), READY_WAIT_MS);
    const events = await runTurn(runtime, "/tool m__bad {}");
    expect(resultOf(events)).toMatchObject({ isError: true, status: "error" });
    expect(resultOf(events).result).toMatch(
      /MCP server "m" answered with a malformed tool result \(content: .+\)/,
    );
    expect(events.some((event) => event.type === "tool_retry")).toBe(false);
    expect(readFileSync(recordFile, "utf8").trim().split("\n")).toEqual(['{"tool":"bad"}']);
  }, 60_000);

  it("an input that does not match the tool's schema is refused naming the field, from the model and at approval", async () => {
    const runtime = build(
      { t: stdio(TEST_SERVER, "reins-mcp-failures-schema") },
      {
        agents: { careful: { tools: ["*"], approval: { t__echo: "always", "*": "never" } } },
        defaultAgent: "careful",
      },
    );
    await eventually(() => expect(statusOf(runtime, "t")?.status).toBe("ready"), READY_WAIT_MS);
    const fromModel = await runTurn(runtime, '/tool t__progress {"steps":"three","intervalMs":1}');
    expect(resultOf(fromModel)).toMatchObject({ isError: true, status: "error" });
    expect(resultOf(fromModel).result).toContain("invalid input (steps: must be integer)");

    const refusals: unknown[] = [];
    const approved = await runTurn(runtime, '/tool t__echo {"text":"draft"}', (event, turnId) => {
      if (event.type !== "tool_approval_request") return;
      refusals.push(
        runtime.manager.decideApproval(turnId, event.toolId, { decision: "approve", input: { text: 5 } }),
      );
      refusals.push(runtime.manager.decideApproval(turnId, event.toolId, { decision: "approve", input: {} }));
      runtime.manager.decideApproval(turnId, event.toolId, { decision: "approve", input: { text: "final" } });
    });
    expect(refusals).toEqual([
      { accepted: false, problem: "invalid_input", message: "Invalid input: input.text: must be string" },
      {
        accepted: false,
        problem: "invalid_input",
        message: "Invalid input: input.text: must have required property 'text'",
      },
    ]);
    expect(resultOf(approved)).toMatchObject({ isError: false });
    expect(resultOf(approved).result).toMatch(/^\[EDITED\] .* it ran with: \{"text":"final"\}\n\nfinal$/);
  }, 60_000);
});
