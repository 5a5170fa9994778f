/**
 * Errors that are not the model's are not blamed on it (docs/events.md): a TurnManager over a store
 * that fails while storing the model's answer reports `internal_error` (without the failure's own
 * text) and ends the turn with `turn_abort` reason `error`; a real model failure is still `model_error`.
 */
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { isTerminalEvent, type TurnEvent } from "../../src/events.js";
import { createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import type { HistoryStore } from "../../src/history/store.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";

const silent = pino({ level: "silent" });
const runtimes: Runtime[] = [];

afterEach(async () => {
  for (const runtime of runtimes.splice(0)) {
    await runtime.manager.abortAll("shutdown", 1_000);
    runtime.store.close();
  }
});

/** An in-memory store whose `appendAssistant` throws `error`; every other method is the real one. */
function storeFailingToAppendAssistant(error: Error): HistoryStore {
  const store = createMemoryHistoryStore();
  return new Proxy(store, {
    get(target, key) {
      if (key === "appendAssistant") {
        return () => {
          throw error;
        };
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function makeRuntime(store: HistoryStore = createMemoryHistoryStore()): Runtime {
  let counter = 0;
  const runtime = createRuntime(parseConfig({ logLevel: "silent" }).config, {
    store,
    logger: silent,
    generateId: (prefix) => `${prefix}_${++counter}`,
  });
  runtimes.push(runtime);
  return runtime;
}

/** Runs one turn to its end and returns every event a client following it saw. */
async function runTurn(runtime: Runtime, message: string): Promise<TurnEvent[]> {
  const turn = runtime.manager.startTurn({ message });
  const events: TurnEvent[] = [];
  const followed = runtime.manager.follow(turn, 0, (event) => events.push(event));
  events.unshift(...followed.replay);
  await turn.done;
  followed.dispose();
  return events;
}

describe("errors that are not the model's", () => {
  it("a store failing to record the answer is an internal_error, and the turn ends with reason error", async () => {
    const secret = "SQLITE_FULL: database or disk is full at /var/lib/reins/reins.db";
    const runtime = makeRuntime(storeFailingToAppendAssistant(new Error(secret)));
    const events = await runTurn(runtime, "hello there");

    const errors = events.filter((event) => event.type === "error");
    expect(errors).toEqual([expect.objectContaining({ type: "error", code: "internal_error" })]);
    expect(JSON.stringify(errors)).not.toContain(secret);
    expect(events.filter(isTerminalEvent)).toEqual([
      expect.objectContaining({ type: "turn_abort", reason: "error" }),
    ]);
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "error" });
    expect(runtime.manager.activeCount()).toBe(0);
  });

  it("a model that fails is still a model_error", async () => {
    const runtime = makeRuntime();
    const events = await runTurn(runtime, "/tool echo {not json}");
    expect(events.filter((event) => event.type === "error")).toEqual([
      expect.objectContaining({ code: "model_error" }),
    ]);
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "error" });
  });
});
