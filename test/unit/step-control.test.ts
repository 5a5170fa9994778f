/**
 * StepController (docs/semantics.md#step-control) with fake timers: every way a pause ends — continue by id,
 * timeout, abort, step mode switched off — releases the wait, leaves no timer or listener, and pauses of
 * concurrent turns are kept apart by id.
 */
import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { EventBody } from "../../src/events.js";
import { StepController, type PauseOutcome, type PausedTurn } from "../../src/turns/step-control.js";

const PAUSE_TIMEOUT_MS = 30_000;

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

function controller(onTimeout: "continue" | "abort" = "continue") {
  let counter = 0;
  return new StepController(
    { pauseTimeoutMs: PAUSE_TIMEOUT_MS, onTimeout },
    { now: () => Date.now(), generateId: () => `pause_${++counter}` },
  );
}

function turn(turnId: string, sessionId = "ses_1") {
  const abort = new AbortController();
  const emitted: EventBody[] = [];
  let stepMode = true;
  const paused: PausedTurn = {
    turnId,
    sessionId,
    signal: abort.signal,
    stepMode: () => stepMode,
    emit: (body) => emitted.push(body),
  };
  return { paused, abort, emitted, setStepMode: (value: boolean) => (stepMode = value) };
}

/** Starts a pause and exposes its outcome once settled. */
function start(steps: StepController, paused: PausedTurn, summary: unknown = { calls: [] }) {
  let outcome: PauseOutcome | undefined;
  const promise = steps.pause(paused, "after_inference", () => summary).then((value) => (outcome = value));
  return {
    promise,
    get outcome() {
      return outcome;
    },
  };
}

describe("StepController", () => {
  it("emits debugger.pause with the summary and a deadline, and waits until continued by its id", async () => {
    const steps = controller();
    const { paused, emitted } = turn("turn_1");
    const waiting = start(steps, paused, { calls: [{ toolName: "echo" }] });
    expect(emitted).toEqual([
      {
        type: "debugger.pause",
        pauseId: "pause_1",
        phase: "after_inference",
        deadlineMs: Date.now() + PAUSE_TIMEOUT_MS,
        summary: { calls: [{ toolName: "echo" }] },
      },
    ]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(waiting.outcome).toBeUndefined();
    expect(steps.pauseOf("turn_1")).toMatchObject({ pauseId: "pause_1", phase: "after_inference" });

    expect(steps.continue("turn_1", "pause_wrong")).toBe(false);
    expect(steps.continue("turn_other", "pause_1")).toBe(false);
    expect(steps.continue("turn_1", "pause_1")).toBe(true);
    await waiting.promise;
    expect(waiting.outcome).toBe("continued");
    expect(steps.continue("turn_1", "pause_1")).toBe(false);
    expect(steps.pauseOf("turn_1")).toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(paused.signal, "abort")).toHaveLength(0);
  });

  it("times out at the pause timeout, not a millisecond before", async () => {
    const steps = controller();
    const { paused } = turn("turn_1");
    const waiting = start(steps, paused);
    await vi.advanceTimersByTimeAsync(PAUSE_TIMEOUT_MS - 1);
    expect(waiting.outcome).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(waiting.outcome).toBe("timed_out");
    expect(steps.size).toBe(0);
    expect(getEventListeners(paused.signal, "abort")).toHaveLength(0);
  });

  it("releases at once when the turn is aborted, and never outlives it", async () => {
    const steps = controller();
    const { paused, abort } = turn("turn_1");
    const waiting = start(steps, paused);
    abort.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(waiting.outcome).toBe("aborted");
    expect(vi.getTimerCount()).toBe(0);
    expect(steps.size).toBe(0);
    // a turn already aborted does not pause at all
    expect(await steps.pause(paused, "after_tools", () => ({}))).toBe("aborted");
    expect(steps.size).toBe(0);
  });

  it("switching step mode off releases every wait of the session at once, and only that session", async () => {
    const steps = controller();
    const first = turn("turn_1", "ses_a");
    const second = turn("turn_2", "ses_b");
    const a = start(steps, first.paused);
    const b = start(steps, second.paused);
    expect(steps.releaseSession("ses_a")).toBe(1);
    await vi.advanceTimersByTimeAsync(0);
    expect(a.outcome).toBe("disabled");
    expect(b.outcome).toBeUndefined();
    // with step mode off the turn does not pause again
    first.setStepMode(false);
    expect(await steps.pause(first.paused, "after_tools", () => ({}))).toBe("disabled");
    expect(first.emitted.filter((event) => event.type === "debugger.pause")).toHaveLength(1);
    steps.continue("turn_2", steps.pauseOf("turn_2")?.pauseId ?? "");
    await b.promise;
    expect(b.outcome).toBe("continued");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("makes no summary for a turn that does not pause", async () => {
    const steps = controller();
    const { paused, setStepMode, emitted } = turn("turn_1");
    setStepMode(false);
    const summarize = vi.fn(() => ({ calls: [] }));
    expect(await steps.pause(paused, "after_inference", summarize)).toBe("disabled");
    expect(summarize).not.toHaveBeenCalled();
    setStepMode(true);
    const waiting = steps.pause(paused, "after_inference", summarize);
    expect(summarize).toHaveBeenCalledTimes(1);
    expect(emitted).toMatchObject([{ type: "debugger.pause", summary: { calls: [] } }]);
    steps.continue("turn_1", steps.pauseOf("turn_1")?.pauseId ?? "");
    expect(await waiting).toBe("continued");
  });

  it("keeps concurrent pauses of different turns apart by id", async () => {
    const steps = controller();
    const turns = ["turn_1", "turn_2", "turn_3"].map((id) => turn(id));
    const waits = turns.map(({ paused }) => start(steps, paused));
    const ids = turns.map(({ paused }) => steps.pauseOf(paused.turnId)?.pauseId);
    expect(new Set(ids).size).toBe(3);
    expect(steps.continue("turn_2", ids[1] ?? "")).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(waits.map((wait) => wait.outcome)).toEqual([undefined, "continued", undefined]);
    await vi.advanceTimersByTimeAsync(PAUSE_TIMEOUT_MS);
    expect(waits.map((wait) => wait.outcome)).toEqual(["timed_out", "continued", "timed_out"]);
  });
});
