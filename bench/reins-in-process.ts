/**
 * reins in the in-process comparison, through its public library surface only — the built package
 * (`dist/`, which `npm run bench` builds first), as a library user or the Docker image runs it; the
 * peers run their published builds too. (Sources run through tsx pay esbuild's `keepNames` on every
 * function made, which the build does not.) `createRuntime` with
 * one fake `ModelEngine` per cell (the workload's stateless model, reading the tool results of the
 * current turn from `request.history`) and the no-op tool, then `manager.startTurn` and `turn.done`.
 * Two stores: SQLite in memory, and a SQLite file in a fresh temporary data directory.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import type * as ReinsPackage from "../src/index.js";
import type {
  HistoryBlock,
  ModelEngine,
  ModelEvent,
  ModelRequest,
  Runtime,
  ToolDefinition,
} from "../src/index.js";
import { PROJECT_ROOT } from "../test/helpers/server.js";
import {
  CELLS,
  NOOP_RESULT,
  NOOP_TOOL_DESCRIPTION,
  NOOP_TOOL_NAME,
  USER_MESSAGE,
  answerAfter,
  callIdOf,
  cellLabel,
  callsPerTurn,
  type Cell,
  type WorkloadCounter,
} from "./workload.js";

export type ReinsStoreKind = "memory" | "file";

export type ReinsInProcess = {
  /** `reins, in-memory store` or `reins, SQLite file`. */
  label: string;
  /** One turn of `cell`: a new session, started and awaited. */
  turn(cell: Cell): () => Promise<void>;
  /** Throws unless every turn started so far completed with K·S tool calls; forgets them. */
  checkTurns(): void;
  close(): void;
};

/** The provider name under which the fake engine of `cell` is registered. */
function providerOf(cell: Cell): string {
  return `bench-${cellLabel(cell).replace("×", "x")}`;
}

/** Tool results of the current turn: the blocks after the newest user message. */
function resultsOfCurrentTurn(history: readonly HistoryBlock[]): number {
  let results = 0;
  for (let index = history.length - 1; index >= 0; index--) {
    const block = history[index];
    if (block?.kind === "text" && block.role === "user") break;
    if (block?.kind === "tool_response") results++;
  }
  return results;
}

function fakeEngine(cell: Cell, counter: WorkloadCounter): ModelEngine {
  return {
    provider: providerOf(cell),
    defaultModel: "bench-fake",
    async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
      const answer = answerAfter(cell, resultsOfCurrentTurn(request.history));
      if (answer.kind === "text") {
        counter.finalAnswers++;
        yield { type: "text_delta", text: answer.text };
        yield { type: "stop", reason: "end_turn" };
        return;
      }
      for (const index of answer.indices) {
        yield { type: "tool_call", id: callIdOf(index), name: NOOP_TOOL_NAME, input: { index } };
      }
      yield { type: "stop", reason: "tool_use" };
    },
  };
}

function noopTool(counter: WorkloadCounter): ToolDefinition {
  const tool: ToolDefinition<{ index: number }> = {
    name: NOOP_TOOL_NAME,
    description: NOOP_TOOL_DESCRIPTION,
    inputSchema: z.strictObject({ index: z.number().int() }),
    concurrency: "parallel",
    execute: async () => {
      counter.toolCalls++;
      return NOOP_RESULT;
    },
  };
  return tool as ToolDefinition;
}

/**
 * A runtime with the default configuration (as `npm start` has it, LOG_LEVEL aside: the logger is
 * silent, as a library user's would be in a hot loop) and the chosen store.
 */
export async function createReinsInProcess(
  storeKind: ReinsStoreKind,
  counter: WorkloadCounter,
): Promise<ReinsInProcess> {
  const { createMemoryHistoryStore, createRuntime, parseConfig } = await loadBuiltPackage();
  const dataDir = mkdtempSync(join(tmpdir(), "reins-bench-"));
  const { config } = parseConfig({ dataDir, logLevel: "silent" });
  let runtime: Runtime;
  try {
    runtime = createRuntime(config, {
      logger: pino({ level: "silent" }),
      ...(storeKind === "memory" ? { store: createMemoryHistoryStore() } : {}),
      engines: CELLS.map((cell) => fakeEngine(cell, counter)),
      tools: [noopTool(counter)],
    });
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const started: { turnId: string; cell: Cell }[] = [];
  return {
    label: storeKind === "memory" ? "reins, in-memory store" : "reins, SQLite file",
    turn(cell) {
      const provider = providerOf(cell);
      return async () => {
        const turn = runtime.manager.startTurn({ message: USER_MESSAGE, provider });
        started.push({ turnId: turn.turnId, cell });
        await turn.done;
      };
    },
    checkTurns() {
      for (const { turnId, cell } of started.splice(0)) {
        const record = runtime.store.getTurn(turnId);
        if (record?.status !== "completed" || record.toolCallCount !== callsPerTurn(cell)) {
          throw new Error(
            `reins (${storeKind}), ${cellLabel(cell)}: turn ${turnId} ended ${record?.status} ` +
              `(${record?.stopReason ?? record?.abortReason}) with ${record?.toolCallCount} tool calls, ` +
              `expected completed with ${callsPerTurn(cell)}`,
          );
        }
      }
    },
    close() {
      try {
        runtime.store.close();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}

/** The built package's entry; `npm run build` makes it (and `npm run bench` runs that first). */
async function loadBuiltPackage(): Promise<typeof ReinsPackage> {
  const entry = join(PROJECT_ROOT, "dist", "index.js");
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` (npm run bench does)`);
  return (await import(pathToFileURL(entry).href)) as typeof ReinsPackage;
}
