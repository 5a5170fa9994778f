/**
 * reins as a library: governed turns in-process through `src/index.ts`, no HTTP. Also the leak check:
 * after many turns ending every way, no timer or handle is left behind; and a runtime given a store of
 * its own leaves alone the process groups a server on the same data directory recorded.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { MCP_PROCESS_RECORD_FILE } from "../../src/mcp/manager.js";
import { EXEC_PROCESS_RECORD_FILE, ProcessRecord } from "../../src/tools/system/index.js";
import {
  createMemoryHistoryStore,
  createRuntime,
  parseConfig,
  PermanentToolError,
  TransientToolError,
  type Runtime,
  type ToolDefinition,
  type TurnEvent,
} from "../../src/index.js";
import { z } from "zod";

const runtimes: Runtime[] = [];
afterEach(() => {
  for (const runtime of runtimes.splice(0)) runtime.store.close();
});

function build(config: Record<string, unknown> = {}, tools: ToolDefinition[] = []): Runtime {
  const runtime = createRuntime(parseConfig(config).config, {
    store: createMemoryHistoryStore(),
    logger: pino({ level: "silent" }),
    tools,
  });
  runtimes.push(runtime);
  return runtime;
}

async function runTurn(runtime: Runtime, message: string, onEvent?: (event: TurnEvent) => void) {
  const events: TurnEvent[] = [];
  const turn = runtime.manager.startTurn({ message });
  const { replay } = runtime.manager.follow(turn, 0, (event) => {
    events.push(event);
    onEvent?.(event);
  });
  events.unshift(...replay);
  await turn.done;
  return { turn, events };
}

/** Timers and handles of this process, by kind (what would leak if a turn left work behind). */
function resources(): string[] {
  return process.getActiveResourcesInfo().filter((kind) => kind === "Timeout" || kind === "Immediate");
}

describe("in-process turns", () => {
  it("runs a tool turn with a custom tool and stores a valid history", async () => {
    const upper: ToolDefinition<{ text: string }> = {
      name: "upper",
      description: "Upper-cases text.",
      inputSchema: z.strictObject({ text: z.string() }),
      concurrency: "exclusive",
      execute: async ({ text }) => text.toUpperCase(),
    };
    const runtime = build({}, [upper as ToolDefinition]);
    const { turn, events } = await runTurn(runtime, '/tool upper {"text":"quiet"}');
    expect(events.map((event) => event.type)).toEqual([
      "turn_start",
      "tool_start",
      "tool_result",
      // the answer's words, coalesced into one event (DELTA_COALESCE_MS / _CHARS)
      "text_delta",
      "turn_complete",
    ]);
    expect(events.find((event) => event.type === "tool_result")).toMatchObject({ result: "QUIET" });
    const blocks = runtime.store.getHistory(turn.sessionId);
    expect(blocks.map((block) => block.kind)).toEqual(["text", "tool_call", "tool_response", "text"]);
  });

  it("retries a tool that throws the package's TransientToolError, and not one that throws PermanentToolError", async () => {
    let calls = 0;
    const moody: ToolDefinition<{ mood: string }> = {
      name: "moody",
      description: "Fails once when transient, always when permanent.",
      concurrency: "parallel",
      inputSchema: z.strictObject({ mood: z.string() }),
      execute: async ({ mood }) => {
        calls++;
        if (mood === "permanent") throw new PermanentToolError("no such record");
        if (calls === 1) throw new TransientToolError("upstream busy", { status: 503 });
        return "fine";
      },
    };
    const runtime = build({ resilience: { retry: { initialDelayMs: 1, maxDelayMs: 1 } } }, [
      moody as ToolDefinition,
    ]);
    const transient = await runTurn(runtime, '/tool moody {"mood":"transient"}');
    expect(transient.events.filter((event) => event.type === "tool_retry")).toHaveLength(1);
    expect(transient.events.find((event) => event.type === "tool_result")).toMatchObject({
      result: "fine",
      attempts: 2,
    });
    const permanent = await runTurn(runtime, '/tool moody {"mood":"permanent"}');
    expect(permanent.events.some((event) => event.type === "tool_retry")).toBe(false);
    expect(permanent.events.find((event) => event.type === "tool_result")).toMatchObject({
      isError: true,
      attempts: 1,
      result: expect.stringContaining("no such record"),
    });
  });

  it("leaves no timer behind after turns that complete, time out and are aborted", async () => {
    const runtime = build({
      tools: { timeoutMs: 50 },
      stream: { progressAfterMs: 10, progressIntervalMs: 10 },
    });
    const baseline = resources().length;
    for (let round = 0; round < 20; round++) {
      await runTurn(runtime, '/tool echo {"text":"x"}\n/tool sleep {"ms":30,"heartbeatMs":5}');
      await runTurn(runtime, '/tool hang {}\n/tool sleep {"ms":10000}');
      await runTurn(runtime, '/tool sleep {"ms":10000,"heartbeatMs":5}\n/tool hang {}', (event) => {
        if (event.type === "tool_start" && event.toolName === "hang") {
          setImmediate(() => runtime.manager.abortTurn(event.turnId, "user"));
        }
      });
    }
    expect(runtime.manager.activeCount()).toBe(0);
    // let the aborted tools' own cancellation callbacks run
    await new Promise((resolve) => setImmediate(resolve));
    expect(resources().length).toBeLessThanOrEqual(baseline);
    const turns = runtime.store.listTurns();
    expect(turns).toHaveLength(60);
    expect(turns.filter((turn) => turn.status === "aborted")).toHaveLength(20);
  });

  it("kills nothing a server on the same data directory recorded when given a store of its own", async () => {
    // a server on this directory runs an exec command and an MCP server, both recorded
    const dataDir = mkdtempSync(join(tmpdir(), "reins-library-records-"));
    const child = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const records = [EXEC_PROCESS_RECORD_FILE, MCP_PROCESS_RECORD_FILE].map((file) => {
      const record = new ProcessRecord(dataDir, file);
      record.add(child.pid!, "server");
      return record;
    });
    try {
      const runtime = createRuntime(parseConfig({ dataDir }).config, {
        store: createMemoryHistoryStore(),
        logger: pino({ level: "silent" }),
      });
      runtimes.push(runtime);
      const outcome = await Promise.race([
        exited.then(() => "killed"),
        new Promise((resolve) => setTimeout(() => resolve("running"), 300)),
      ]);
      expect(outcome).toBe("running");
      for (const file of [EXEC_PROCESS_RECORD_FILE, MCP_PROCESS_RECORD_FILE]) {
        expect(readFileSync(join(dataDir, file), "utf8")).toContain(String(child.pid));
      }
    } finally {
      for (const record of records) record.clear();
      child.kill("SIGKILL");
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
