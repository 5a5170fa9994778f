/**
 * MCP stdio servers' processes over the real server (`src/main.ts` as a child): the route, the
 * metrics, and that no process of a stdio server — the child process it started included — survives
 * reins' shutdown (SIGTERM), nor a `kill -9` of reins followed by a restart on the same DATA_DIR (a
 * child running when the crash record was last written: the record is rewritten every REFRESH_MS).
 * Processes are found by a unique marker on their command line (/proc scan).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { REFRESH_MS } from "../../src/tools/system/process-record.js";
import { eventually } from "../helpers/eventually.js";
import { listProcesses } from "../helpers/processes.js";
import { PROJECT_ROOT, startServer, type ServerHandle } from "../helpers/server.js";

const SERVER_SCRIPT = join(PROJECT_ROOT, "test/support/mcp-servers/test-server.ts");
const READY_WAIT_MS = 30_000;

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function newMarker(): string {
  return `reins-mcp-proc-${process.pid}-${Math.random().toString(36).slice(2)}`;
}

/** A configuration file with one stdio server `t` carrying `marker`. */
function configWith(directory: string, marker: string): string {
  const path = join(directory, `config-${marker}.json`);
  writeFileSync(
    path,
    JSON.stringify({
      mcpServers: {
        t: { command: process.execPath, args: ["--import", "tsx", SERVER_SCRIPT, marker], cwd: PROJECT_ROOT },
        broken: { command: "/nonexistent/mcp-server" },
      },
    }),
  );
  return path;
}

function markerProcesses(marker: string) {
  return listProcesses().filter((entry) => {
    if (entry.state === "Z") return false;
    try {
      return readFileSync(`/proc/${entry.pid}/cmdline`, "utf8").includes(marker);
    } catch {
      return false;
    }
  });
}

async function start(directory: string, marker: string, dataDir?: string): Promise<ServerHandle> {
  const server = await startServer({ env: { CONFIG_FILE: configWith(directory, marker) }, dataDir });
  cleanups.push(() => server.stop("SIGKILL"));
  return server;
}

async function servers(server: ServerHandle) {
  const response = await fetch(`${server.baseUrl}/api/mcp/servers`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { servers: Record<string, unknown>[] }).servers;
}

async function whenReady(server: ServerHandle) {
  await eventually(async () => {
    const list = await servers(server);
    expect(list.find((entry) => entry.name === "t")).toMatchObject({ status: "ready" });
  }, READY_WAIT_MS);
}

/** Runs a turn calling `t__spawn_child`; answers the pid of the child the MCP server started. */
async function spawnChild(server: ServerHandle): Promise<number> {
  const response = await fetch(`${server.baseUrl}/api/sessions/stream`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message: "/tool t__spawn_child {}" }),
  });
  const body = await response.text();
  const line = body
    .split("\n")
    .find((candidate) => candidate.startsWith("data:") && candidate.includes('"tool_result"'));
  const result = JSON.parse(line!.slice("data:".length)) as { result: string; isError: boolean };
  expect(result.isError).toBe(false);
  return Number(result.result);
}

describe("MCP stdio servers over the real server", () => {
  it("lists servers, counts calls, and leaves no process alive after SIGTERM", async () => {
    const directory = mkdtempSync(join(tmpdir(), "reins-mcp-proc-"));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const marker = newMarker();
    const server = await start(directory, marker);
    cleanups.push(() => server.cleanup());
    await whenReady(server);
    const list = await servers(server);
    expect(list).toEqual([
      expect.objectContaining({
        name: "t",
        transport: "stdio",
        status: "ready",
        lastError: null,
        restarts: 0,
      }),
      expect.objectContaining({
        name: "broken",
        transport: "stdio",
        status: expect.stringMatching(/connecting|down/),
      }),
    ]);
    expect(list[0]!.tools).toEqual(expect.arrayContaining(["t__spawn_child", "t__echo"]));

    const childPid = await spawnChild(server);
    expect(markerProcesses(marker).map((entry) => entry.pid)).toContain(childPid);
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    expect(metrics).toContain('reins_mcp_calls_total{server="t"} 1');

    expect(await server.stop("SIGTERM")).toBe(0);
    await eventually(() => expect(markerProcesses(marker)).toEqual([]));
  }, 90_000);

  it("after kill -9 of reins, the next start kills the processes the dead one left", async () => {
    const directory = mkdtempSync(join(tmpdir(), "reins-mcp-proc-"));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const marker = newMarker();
    const first = await start(directory, marker);
    cleanups.push(() => {
      for (const entry of markerProcesses(marker)) process.kill(entry.pid, "SIGKILL");
    });
    await whenReady(first);
    const childPid = await spawnChild(first);
    // the record proves a group whose leader is gone by a member it was written after
    await new Promise((resolve) => setTimeout(resolve, REFRESH_MS + 500));
    expect(await first.stop("SIGKILL")).toBe("SIGKILL");
    // the crashed server could clean nothing up: its server's child is still running
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(markerProcesses(marker).map((entry) => entry.pid)).toContain(childPid);

    const second = await start(directory, newMarker(), first.dataDir);
    cleanups.push(() => second.cleanup());
    await eventually(() => expect(markerProcesses(marker)).toEqual([]));
    // the line is written by the server's batched log, which may reach us after the kill
    await eventually(() =>
      expect(second.logs().join("\n")).toContain("killed MCP server processes left by a previous run"),
    );
  }, 90_000);
});
