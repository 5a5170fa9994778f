/**
 * ToolScheduler (docs/semantics.md#scheduling): one batch through a real ToolRunner and ToolRegistry, with
 * fake tools that sleep on (fake) timers and log when they start and end.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { TurnAbortedError } from "../../src/errors.js";
import { CallCancellation } from "../../src/tools/call-cancellation.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import { TOOL_CANCELLED_RESULT } from "../../src/tools/results.js";
import { PermanentToolError } from "../../src/tools/resilience/tool-error.js";
import { ToolRunner, ZOMBIE_GRACE_MS, type CallScope, type RunnerSettings } from "../../src/tools/runner.js";
import { ToolScheduler } from "../../src/tools/scheduler.js";
import type { ToolCallRequest, ToolConcurrency, ToolDefinition, ToolOutcome } from "../../src/tools/types.js";

type Entry = { at: number; what: "start" | "end"; callId: string };

/** The world of one test: what ran when, and how many ran at once. */
class Bench {
  readonly log: Entry[] = [];
  running = 0;
  maxRunning = 0;
  executed = new Set<string>();

  /** A tool that waits `ms` on a timer, honours its signal and clears its timer when aborted. */
  napTool(name: string, concurrency: ToolConcurrency): ToolDefinition<{ ms: number }> {
    return {
      name,
      description: `waits (${concurrency})`,
      inputSchema: z.object({ ms: z.number() }),
      concurrency,
      execute: ({ ms }, context) =>
        new Promise<string>((resolve, reject) => {
          this.began(context.callId);
          const timer = setTimeout(() => {
            context.signal.removeEventListener("abort", onAbort);
            this.ended(context.callId);
            resolve(`${context.callId} slept ${ms}`);
          }, ms);
          const onAbort = () => {
            clearTimeout(timer);
            this.ended(context.callId);
            reject(new Error("aborted"));
          };
          context.signal.addEventListener("abort", onAbort, { once: true });
        }),
    };
  }

  /** A tool that never settles and ignores its signal. */
  stuckTool(): ToolDefinition<Record<string, never>> {
    return {
      name: "stuck",
      description: "never returns",
      inputSchema: z.object({}),
      concurrency: "parallel",
      execute: (_input, context) => {
        this.began(context.callId);
        return new Promise<never>(() => {});
      },
    };
  }

  /** A tool that fails after `ms`. */
  boomTool(): ToolDefinition<{ ms: number }> {
    return {
      name: "boom",
      description: "fails",
      inputSchema: z.object({ ms: z.number() }),
      concurrency: "parallel",
      execute: ({ ms }, context) =>
        new Promise<string>((_resolve, reject) => {
          this.began(context.callId);
          setTimeout(() => {
            this.ended(context.callId);
            reject(new PermanentToolError("kaboom"));
          }, ms);
        }),
    };
  }

  private began(callId: string) {
    this.executed.add(callId);
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    this.log.push({ at: Date.now(), what: "start", callId });
  }

  private ended(callId: string) {
    this.running--;
    this.log.push({ at: Date.now(), what: "end", callId });
  }

  lines(): string[] {
    return this.log.map((entry) => `${entry.at} ${entry.what} ${entry.callId}`);
  }
}

const RUNNER_SETTINGS: RunnerSettings = {
  defaults: { timeoutMs: 10_000, idleTimeoutMs: 0 },
  maxCallTimeoutMs: 60_000,
  overrides: {},
  progressAfterMs: 60_000,
  progressIntervalMs: 60_000,
};

function setup(
  bench: Bench,
  maxParallelTools: number,
  timeoutMs = RUNNER_SETTINGS.defaults.timeoutMs,
  cancellation?: CallCancellation,
) {
  const registry = new ToolRegistry([
    bench.napTool("nap", "parallel"),
    bench.napTool("solo", "exclusive"),
    bench.stuckTool(),
    bench.boomTool(),
  ] as ToolDefinition[]);
  const runner = new ToolRunner(registry, {
    ...RUNNER_SETTINGS,
    defaults: { timeoutMs, idleTimeoutMs: 0 },
  });
  const scheduler = new ToolScheduler(runner, registry, { maxParallelTools });
  const controller = new AbortController();
  const scope: CallScope = {
    turnId: "turn_1",
    sessionId: "ses_1",
    agentId: "default",
    workspace: undefined,
    allowedRoots: [],
    depth: 0,
    signal: controller.signal,
    cancellation,
  };
  const reported: { callId: string; index: number; status: string }[] = [];
  const run = (calls: ToolCallRequest[]) => {
    let settled: ToolOutcome[] | undefined;
    const promise = scheduler
      .runBatch(calls, scope, {
        onResult: (call, outcome, index) =>
          reported.push({ callId: call.callId, index, status: outcome.status }),
      })
      .then((outcomes) => (settled = outcomes));
    return { promise, settled: () => settled };
  };
  return { run, controller, reported };
}

const call = (callId: string, name: string, input: Record<string, unknown> = {}): ToolCallRequest => ({
  callId,
  name,
  input,
});

describe("ToolScheduler", () => {
  let bench: Bench;
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
    bench = new Bench();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("runs parallel calls concurrently", async () => {
    const { run } = setup(bench, 8);
    const batch = run([
      call("a", "nap", { ms: 100 }),
      call("b", "nap", { ms: 50 }),
      call("c", "nap", { ms: 75 }),
    ]);
    await vi.advanceTimersByTimeAsync(100);
    await batch.promise;

    expect(bench.lines()).toEqual([
      "0 start a",
      "0 start b",
      "0 start c",
      "50 end b",
      "75 end c",
      "100 end a",
    ]);
    expect(bench.maxRunning).toBe(3);
  });

  it("never runs more than maxParallelTools calls at once", async () => {
    const { run } = setup(bench, 2);
    const batch = run([
      call("a", "nap", { ms: 100 }),
      call("b", "nap", { ms: 30 }),
      call("c", "nap", { ms: 50 }),
      call("d", "nap", { ms: 10 }),
      call("e", "nap", { ms: 10 }),
    ]);
    await vi.advanceTimersByTimeAsync(29);
    expect(bench.executed).toEqual(new Set(["a", "b"]));
    await vi.advanceTimersByTimeAsync(1000);
    const outcomes = await batch.promise;

    expect(bench.maxRunning).toBe(2);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(5).fill("complete"));
    // a freed slot is taken at once: c starts when b ends, d when c ends, e when d ends
    expect(bench.lines()).toEqual([
      "0 start a",
      "0 start b",
      "30 end b",
      "30 start c",
      "80 end c",
      "80 start d",
      "90 end d",
      "90 start e",
      "100 end a",
      "100 end e",
    ]);
  });

  it("runs an exclusive call alone, after earlier calls and before later ones", async () => {
    const { run } = setup(bench, 8);
    const batch = run([
      call("p1", "nap", { ms: 100 }),
      call("p2", "nap", { ms: 50 }),
      call("x", "solo", { ms: 30 }),
      call("p3", "nap", { ms: 10 }),
      call("p4", "nap", { ms: 20 }),
    ]);
    await vi.advanceTimersByTimeAsync(99);
    expect(bench.executed.has("x")).toBe(false);
    await vi.advanceTimersByTimeAsync(1000);
    await batch.promise;

    expect(bench.lines()).toEqual([
      "0 start p1",
      "0 start p2",
      "50 end p2",
      "100 end p1",
      "100 start x",
      "130 end x",
      "130 start p3",
      "130 start p4",
      "140 end p3",
      "150 end p4",
    ]);
  });

  it("reports results in completion order and returns them in call order", async () => {
    const { run, reported } = setup(bench, 8);
    const batch = run([
      call("slow", "nap", { ms: 300 }),
      call("fast", "nap", { ms: 100 }),
      call("medium", "nap", { ms: 200 }),
    ]);
    await vi.advanceTimersByTimeAsync(100);
    expect(reported).toEqual([{ callId: "fast", index: 1, status: "complete" }]);
    await vi.advanceTimersByTimeAsync(200);
    const outcomes = await batch.promise;

    expect(reported.map((entry) => [entry.callId, entry.index])).toEqual([
      ["fast", 1],
      ["medium", 2],
      ["slow", 0],
    ]);
    expect(outcomes.map((outcome) => outcome.result)).toEqual([
      "slow slept 300",
      "fast slept 100",
      "medium slept 200",
    ]);
  });

  it("keeps the siblings' results when one call hangs until its timeout", async () => {
    const { run, reported } = setup(bench, 8, 1000);
    const batch = run([call("h", "stuck"), call("a", "nap", { ms: 100 }), call("b", "nap", { ms: 200 })]);
    await vi.advanceTimersByTimeAsync(999);
    expect(batch.settled()).toBeUndefined();
    expect(reported.map((entry) => entry.callId)).toEqual(["a", "b"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(batch.settled()).toBeDefined();
    const outcomes = await batch.promise;

    const [hung, a, b] = outcomes;
    expect(hung?.status).toBe("timeout");
    expect(hung?.result).toMatch(/^\[TIMEOUT\] Tool "stuck" exceeded wall-clock limit of 1s\./);
    expect(hung?.timeout).toEqual({ kind: "total", timeoutMs: 1000 });
    expect(a).toMatchObject({ status: "complete", result: "a slept 100", isError: false });
    expect(b).toMatchObject({ status: "complete", result: "b slept 200", isError: false });
    // the stuck tool is a zombie now; its one grace timer is all that remains, then nothing
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(ZOMBIE_GRACE_MS);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("keeps the other results when one call fails", async () => {
    const { run } = setup(bench, 8);
    const batch = run([
      call("a", "nap", { ms: 100 }),
      call("f", "boom", { ms: 10 }),
      call("b", "nap", { ms: 5 }),
    ]);
    await vi.advanceTimersByTimeAsync(100);
    const outcomes = await batch.promise;

    expect(outcomes.map((outcome) => outcome.status)).toEqual(["complete", "error", "complete"]);
    expect(outcomes[1]).toMatchObject({ isError: true, result: '[ERROR] Tool "boom" failed: kaboom' });
    expect(outcomes[0]?.result).toBe("a slept 100");
    expect(outcomes[2]?.result).toBe("b slept 5");
  });

  it("cancels running and not-yet-started calls on abort and leaves no timer behind", async () => {
    const { run, controller, reported } = setup(bench, 2);
    const batch = run([
      call("a", "nap", { ms: 100 }),
      call("h", "stuck"),
      call("c", "nap", { ms: 100 }),
      call("x", "solo", { ms: 100 }),
    ]);
    await vi.advanceTimersByTimeAsync(50);
    expect(bench.executed).toEqual(new Set(["a", "h"]));
    controller.abort(new TurnAbortedError("user"));
    await vi.advanceTimersByTimeAsync(0);
    const outcomes = await batch.promise;

    expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(4).fill("cancelled"));
    for (const outcome of outcomes) {
      expect(outcome.result).toBe("[CANCELLED] Turn aborted by user.");
      expect(outcome.isError).toBe(true);
    }
    // the calls that had not started never ran
    expect(bench.executed).toEqual(new Set(["a", "h"]));
    expect(reported.map((entry) => entry.callId).sort()).toEqual(["a", "c", "h", "x"]);
    await vi.advanceTimersByTimeAsync(ZOMBIE_GRACE_MS);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("gives a batch started under an aborted signal the same cancelled outcomes", async () => {
    const { run, controller } = setup(bench, 8);
    controller.abort(new TurnAbortedError("disconnect"));
    const outcomes = await run([call("a", "nap", { ms: 100 }), call("x", "solo", { ms: 100 })]).promise;

    expect(outcomes.map((outcome) => outcome.result)).toEqual([
      "[CANCELLED] Turn aborted: the client disconnected.",
      "[CANCELLED] Turn aborted: the client disconnected.",
    ]);
    expect(bench.executed.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("skips a dependent of a failed call while an independent sibling runs at once", async () => {
    const { run } = setup(bench, 8);
    const batch = run([
      call("f", "boom", { ms: 50 }),
      call("d", "nap", { ms: 10, _meta: { dependsOn: [0] } }),
      call("i", "nap", { ms: 10 }),
    ]);
    await vi.advanceTimersByTimeAsync(10);
    // the independent call was not held back by the dependent waiting before it
    expect(bench.lines()).toEqual(["0 start f", "0 start i", "10 end i"]);
    await vi.advanceTimersByTimeAsync(40);
    const outcomes = await batch.promise;
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["error", "error", "complete"]);
    expect(outcomes[1]?.result).toBe(
      '[SKIPPED] Tool "nap" was not run because call #0 ("boom") of this batch failed.',
    );
    expect(bench.executed.has("d")).toBe(false);
  });

  it("runs a dependent after its dependency succeeds, and answers with _meta.default when it fails", async () => {
    const { run } = setup(bench, 8);
    const batch = run([
      call("a", "nap", { ms: 30 }),
      call("after", "nap", { ms: 10, _meta: { dependsOn: [0] } }),
      call("f", "boom", { ms: 5 }),
      call("fallback", "nap", { ms: 10, _meta: { dependsOn: [2], default: { rows: 0 } } }),
    ]);
    await vi.advanceTimersByTimeAsync(40);
    const outcomes = await batch.promise;
    expect(bench.lines()).toContain("30 start after");
    expect(outcomes[1]).toMatchObject({ status: "complete", result: "after slept 10" });
    expect(outcomes[3]).toMatchObject({ status: "complete", isError: false });
    expect(outcomes[3]?.result).toMatch(/^\[DEFAULT\] Call #2 \("boom"\).*\{"rows":0\}$/);
  });

  it("cancels a call waiting for a slot at once (cancel one tool), and the slot goes on to the next", async () => {
    const cancellation = new CallCancellation();
    const { run, reported } = setup(bench, 1, undefined, cancellation);
    const calls = [
      call("a", "nap", { ms: 1_000 }),
      call("b", "nap", { ms: 10 }),
      call("c", "nap", { ms: 10 }),
    ];
    cancellation.openCalls(calls.map((entry) => entry.callId));
    const batch = run(calls);
    await vi.advanceTimersByTimeAsync(5);
    expect(cancellation.cancel("b", new TurnAbortedError("user"))).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(reported).toEqual([{ callId: "b", index: 1, status: "cancelled" }]);
    await vi.advanceTimersByTimeAsync(1_100);
    const outcomes = await batch.promise;
    expect(outcomes[1]).toMatchObject({ status: "cancelled", result: TOOL_CANCELLED_RESULT, attempts: 0 });
    expect(bench.lines()).toEqual(["0 start a", "1000 end a", "1000 start c", "1010 end c"]);
  });

  it("cancels a call waiting for the call it depends on at once: cancelled, not skipped later", async () => {
    const cancellation = new CallCancellation();
    const { run, reported } = setup(bench, 8, undefined, cancellation);
    const calls = [call("a", "boom", { ms: 1_000 }), call("d", "nap", { ms: 10, _meta: { dependsOn: [0] } })];
    cancellation.openCalls(calls.map((entry) => entry.callId));
    const batch = run(calls);
    await vi.advanceTimersByTimeAsync(5);
    cancellation.cancel("d", new TurnAbortedError("user"));
    await vi.advanceTimersByTimeAsync(0);
    expect(reported).toEqual([{ callId: "d", index: 1, status: "cancelled" }]);
    await vi.advanceTimersByTimeAsync(1_000);
    const outcomes = await batch.promise;
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["error", "cancelled"]);
    expect(outcomes[1]?.result).toBe(TOOL_CANCELLED_RESULT);
    expect(bench.executed.has("d")).toBe(false);
  });

  it("refuses a dependsOn that does not name an earlier call", async () => {
    const { run } = setup(bench, 8);
    const outcomes = await run([call("a", "nap", { ms: 1, _meta: { dependsOn: [0] } })]).promise;
    expect(outcomes[0]).toMatchObject({ status: "error", isError: true });
    expect(outcomes[0]?.result).toContain("_meta.dependsOn must list indexes of earlier calls");
  });
});
