/**
 * Regressions for defects found in review: each test failed on the code before its fix.
 */
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { ConfigError } from "../../src/errors.js";
import { isTerminalEvent, type TurnEvent } from "../../src/events.js";
import { createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import type { HistoryStore } from "../../src/history/store.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import type { TurnRun } from "../../src/turns/turn-run.js";

const runtimes: Runtime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) {
    await runtime.manager.abortAll("shutdown", 1_000);
    runtime.store.close();
  }
});

function build(config: ConfigInput = {}, store: HistoryStore = createMemoryHistoryStore()): Runtime {
  let counter = 0;
  const runtime = createRuntime(parseConfig({ logLevel: "silent", ...config }).config, {
    store,
    logger: pino({ level: "silent" }),
    generateId: (prefix) => `${prefix}_${++counter}`,
  });
  runtimes.push(runtime);
  return runtime;
}

function watch(runtime: Runtime, turn: TurnRun): TurnEvent[] {
  const events: TurnEvent[] = [];
  const followed = runtime.manager.follow(turn, 0, (event) => events.push(event));
  events.unshift(...followed.replay);
  return events;
}

describe("review regressions", () => {
  it("a failing database write ends the turn for its client instead of crashing the process", async () => {
    const store = createMemoryHistoryStore();
    const runtime = build({}, store);
    const turn = runtime.manager.startTurn({ message: '/tool sleep {"ms":50}' });
    const events = watch(runtime, turn);
    // from now on every event write fails, as with a locked or full disk
    store.appendEvent = () => {
      throw new Error("database is locked");
    };
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      await turn.done;
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
    expect(unhandled).toEqual([]);
    expect(events.filter(isTerminalEvent)).toHaveLength(1);
    expect(runtime.manager.activeCount()).toBe(0);
  });

  it("refuses millisecond settings a Node timer cannot hold, naming the key", () => {
    expect(() => parseConfig({ tools: { timeoutMs: 3_000_000_000 } })).toThrow(ConfigError);
    expect(() => parseConfig({ turns: { timeoutMs: 2_592_000_000 } })).toThrow(/turns\.timeoutMs/);
    expect(() => parseConfig({ turns: { stepPauseTimeoutMs: 2_147_483_648 } })).toThrow(/stepPauseTimeoutMs/);
  });

  it("sends no tool_start for a call the turn deadline closed before it started", async () => {
    const runtime = build({ tools: { maxParallelTools: 1 }, turns: { timeoutMs: 300 } });
    const turn = runtime.manager.startTurn({
      message: '/tool sleep {"ms":1000}\n/tool echo {"text":"queued"}',
    });
    const events = watch(runtime, turn);
    await turn.done;
    const echoResult = events.find((event) => event.type === "tool_result" && event.toolName === "echo");
    expect(echoResult).toMatchObject({ status: "timeout" });
    const startsAfter = events.filter(
      (event) => event.type === "tool_start" && echoResult && event.seq > echoResult.seq,
    );
    expect(startsAfter).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "timeout" });
  });

  it("a turn deadline releases a step-mode pause so the turn still answers gracefully", async () => {
    const runtime = build({
      turns: { timeoutMs: 300, finalAnswerTimeoutMs: 2_000, stepPauseTimeoutMs: 60_000 },
    });
    const turn = runtime.manager.startTurn({ message: '/tool echo {"text":"x"}', stepMode: true });
    const events = watch(runtime, turn);
    await turn.done;
    expect(events.some((event) => event.type === "debugger.pause")).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "timeout" });
  });

  it("refuses to cancel a call that already has its result", async () => {
    const runtime = build();
    const turn = runtime.manager.startTurn({ message: '/tool echo {"text":"done"}\n/tool sleep {"ms":400}' });
    const events = watch(runtime, turn);
    for (let tick = 0; tick < 5_000 && !events.some((event) => event.type === "tool_result"); tick++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    const echo = events.find((event) => event.type === "tool_result");
    expect(runtime.manager.abortTool(turn.turnId, echo?.type === "tool_result" ? echo.toolId : "")).toBe(
      false,
    );
    const sleeping = events.find((event) => event.type === "tool_start" && event.toolName === "sleep");
    expect(
      runtime.manager.abortTool(turn.turnId, sleeping?.type === "tool_start" ? sleeping.toolId : ""),
    ).toBe(true);
    await turn.done;
  });

  it("counts calls of unregistered tools under one label, not one series per invented name", async () => {
    const runtime = build();
    for (let index = 0; index < 5; index++) {
      await runtime.manager.startTurn({ message: `/tool invented_${index} {}` }).done;
    }
    const text = await runtime.metrics.render();
    expect(text).not.toContain("invented_");
    expect(text).toMatch(/reins_tool_errors_total\{tool="\(unknown\)",classification="permanent"\} 5/);
  });

  it("on shutdown a child turn ends with reason shutdown, like its parent", async () => {
    const runtime = build();
    const parent = runtime.manager.startTurn({
      message: '/tool delegate {"agentId":"helper","message":"/tool hang {}"}',
    });
    for (let tick = 0; tick < 5_000 && parent.childTurnIds.size === 0; tick++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    const [childId] = [...parent.childTurnIds];
    const child = runtime.manager.get(childId ?? "");
    if (!child) throw new Error("child turn did not start");
    const childEvents = watch(runtime, child);
    await runtime.manager.abortAll("shutdown", 1_000);
    expect(childEvents.at(-1)).toMatchObject({ type: "turn_abort", reason: "shutdown" });
  });
});
