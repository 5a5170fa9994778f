/**
 * Tool approval (docs/semantics.md#approval) in-process, through the real TurnManager, loop, scheduler and
 * runner with the scripted model: the wait holds no concurrency slot, its deadline (fake timers: nothing at
 * n−1, the rejection at n), abort, per-tool cancel and the turn's deadline release it, and approve, edit and
 * reject end as a user would see them in events, history and the model's next answer.
 */
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { approvalPolicy } from "../../src/agents/approval-policy.js";
import { parseConfig } from "../../src/config/load.js";
import type { ConfigInput } from "../../src/config/schema.js";
import type { TurnEvent } from "../../src/events.js";
import { createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import type { TurnRun } from "../../src/turns/turn-run.js";

const silent = pino({ level: "silent" });
const runtimes: Runtime[] = [];
const APPROVAL_TIMEOUT_MS = 5_000;

function makeRuntime(approval: Record<string, "always" | "never">, config: ConfigInput = {}): Runtime {
  let counter = 0;
  const runtime = createRuntime(
    parseConfig({
      logLevel: "silent",
      agents: { careful: { tools: ["*"], approval } },
      ...config,
      turns: { approvalTimeoutMs: APPROVAL_TIMEOUT_MS, ...config.turns },
    }).config,
    { store: createMemoryHistoryStore(), logger: silent, generateId: (prefix) => `${prefix}_${++counter}` },
  );
  runtimes.push(runtime);
  return runtime;
}

afterEach(async () => {
  vi.useRealTimers();
  for (const runtime of runtimes.splice(0)) {
    await runtime.manager.abortAll("shutdown", 1_000);
    expect(runtime.manager.approvals.size).toBe(0);
    runtime.store.close();
  }
});

async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let tick = 0; tick < 10_000; tick++) {
    if (predicate()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`never happened: ${what}`);
}

function start(runtime: Runtime, message: string, stepMode = false) {
  const turn = runtime.manager.startTurn({ message, agentId: "careful", stepMode });
  const events: TurnEvent[] = [];
  const followed = runtime.manager.follow(turn, 0, (event) => events.push(event));
  events.unshift(...followed.replay);
  const types = (toolId?: string) =>
    events
      .filter((event) => toolId === undefined || ("toolId" in event && event.toolId === toolId))
      .map((event) => event.type);
  const waitingFor = (toolName: string) =>
    until(
      () => events.some((event) => event.type === "tool_approval_request" && event.toolName === toolName),
      `approval request of ${toolName}`,
    );
  return { turn, events, types, waitingFor, dispose: followed.dispose };
}

function requestOf(events: readonly TurnEvent[], toolName: string) {
  const request = events.find(
    (event) => event.type === "tool_approval_request" && event.toolName === toolName,
  );
  if (request?.type !== "tool_approval_request") throw new Error(`no approval request for ${toolName}`);
  return request;
}

function resultOf(events: readonly TurnEvent[], toolId: string) {
  const result = events.find((event) => event.type === "tool_result" && event.toolId === toolId);
  return result?.type === "tool_result" ? result : undefined;
}

function answer(runtime: Runtime, turn: TurnRun): string {
  return runtime.store
    .getHistory(turn.sessionId)
    .filter((block) => block.kind === "text" && block.role === "assistant")
    .map((block) => (block.kind === "text" ? block.text : ""))
    .join("\n");
}

describe("approvalPolicy", () => {
  const agents = {
    careful: {
      approval: { "docs__*": "always", docs__read: "never", "*": "never", exec: "always" } as const,
    },
    plain: {},
  };
  it.each([
    ["careful", "exec", "always"],
    ["careful", "docs__delete_page", "always"],
    ["careful", "docs__read", "never"],
    ["careful", "echo", "never"],
    ["plain", "exec", "never"],
    ["unknown", "exec", "never"],
  ])("agent %s, tool %s: %s", (agentId, toolName, mode) => {
    expect(approvalPolicy(agents, agentId)(toolName)).toBe(mode);
  });
});

describe("tool approval: the wait", () => {
  it("holds no slot: with one slot, another call of the batch runs and finishes while one waits", async () => {
    const runtime = makeRuntime({ echo: "always" }, { tools: { maxParallelTools: 1 } });
    const run = start(runtime, '/tool echo {"text":"needs a yes"}\n/tool sleep {"ms":10}');
    await run.waitingFor("echo");
    const echo = requestOf(run.events, "echo");
    expect(echo).toMatchObject({ input: { text: "needs a yes" } });
    // the deadline is set when the call starts waiting; the event is stamped a moment later (real clock)
    expect(echo.deadlineMs - echo.at).toBeLessThanOrEqual(APPROVAL_TIMEOUT_MS);
    expect(echo.deadlineMs - echo.at).toBeGreaterThan(APPROVAL_TIMEOUT_MS - 1_000);

    await until(
      () => run.events.some((event) => event.type === "tool_result" && event.toolName === "sleep"),
      "sleep",
    );
    expect(resultOf(run.events, echo.toolId)).toBeUndefined();
    expect(run.types(echo.toolId)).toEqual(["tool_approval_request"]);
    const active = runtime.manager.getActiveTurnDetails()[0];
    expect(active?.pendingApprovals).toEqual([
      {
        toolId: echo.toolId,
        toolName: "echo",
        input: { text: "needs a yes" },
        // set together with the deadline (the event's own `at` may be a millisecond later)
        requestedAt: echo.deadlineMs - APPROVAL_TIMEOUT_MS,
        deadlineMs: echo.deadlineMs,
      },
    ]);
    expect(active?.runningTools).toEqual([]);

    expect(runtime.manager.decideApproval(run.turn.turnId, echo.toolId, { decision: "approve" })).toEqual({
      accepted: true,
    });
    await run.turn.done;
    expect(run.types(echo.toolId)).toEqual([
      "tool_approval_request",
      "tool_approval",
      "tool_start",
      "tool_result",
    ]);
    expect(run.events.find((event) => event.type === "tool_approval")).toMatchObject({
      decision: "approve",
      edited: false,
    });
    expect(resultOf(run.events, echo.toolId)).toMatchObject({ status: "complete", result: "needs a yes" });
    expect(runtime.manager.getActiveTurnDetails()).toEqual([]);
  });

  it("is rejected with `approval timed out` at APPROVAL_TIMEOUT_MS, not a millisecond before", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    const runtime = makeRuntime({ echo: "always" });
    const run = start(runtime, '/tool echo {"text":"x"}');
    await run.waitingFor("echo");
    const { toolId } = requestOf(run.events, "echo");

    await vi.advanceTimersByTimeAsync(APPROVAL_TIMEOUT_MS - 1);
    expect(run.types(toolId)).toEqual(["tool_approval_request"]);
    expect(runtime.manager.approvals.size).toBe(1);

    await vi.advanceTimersByTimeAsync(1);
    await run.turn.done;
    expect(run.types(toolId)).toEqual(["tool_approval_request", "tool_approval", "tool_result"]);
    expect(run.events.find((event) => event.type === "tool_approval")).toMatchObject({
      decision: "reject",
      edited: false,
      reason: "approval timed out",
    });
    expect(resultOf(run.events, toolId)).toMatchObject({
      status: "rejected",
      result: "[REJECTED] approval timed out",
      isError: true,
      attempts: 0,
    });
    // the model goes on with the rejection
    expect(answer(runtime, run.turn)).toContain("echo: [REJECTED] approval timed out");
    expect(run.events.at(-1)).toMatchObject({ type: "turn_complete" });
  });

  it("starts the call's own timeouts only when it starts", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    const runtime = makeRuntime({ sleep: "always" });
    const run = start(runtime, '/tool sleep {"ms":500,"_meta":{"timeout":1000}}');
    await run.waitingFor("sleep");
    const { toolId } = requestOf(run.events, "sleep");
    await vi.advanceTimersByTimeAsync(3_000); // three times its wall-clock limit
    runtime.manager.decideApproval(run.turn.turnId, toolId, { decision: "approve" });
    await vi.advanceTimersByTimeAsync(500);
    await run.turn.done;
    expect(resultOf(run.events, toolId)).toMatchObject({ status: "complete", result: "Slept 500ms." });
  });

  it("is released as cancelled when the turn is aborted", async () => {
    const runtime = makeRuntime({ echo: "always" });
    const run = start(runtime, '/tool echo {"text":"x"}');
    await run.waitingFor("echo");
    const { toolId } = requestOf(run.events, "echo");
    expect(runtime.manager.abortTurn(run.turn.turnId, "user")).toBe(true);
    await run.turn.done;
    expect(runtime.manager.approvals.size).toBe(0);
    expect(run.types(toolId)).toEqual(["tool_approval_request", "tool_result"]);
    expect(resultOf(run.events, toolId)).toMatchObject({ status: "cancelled" });
    expect(run.events.at(-1)).toMatchObject({ type: "turn_abort", reason: "user" });
    // too late: nothing is waiting any more
    expect(runtime.manager.decideApproval(run.turn.turnId, toolId, { decision: "approve" })).toEqual({
      accepted: false,
      problem: "not_waiting",
    });
  });

  it("is cancelled on its own by the per-tool cancel; the turn goes on", async () => {
    const runtime = makeRuntime({ echo: "always" });
    const run = start(runtime, '/tool echo {"text":"x"}');
    await run.waitingFor("echo");
    const { toolId } = requestOf(run.events, "echo");
    expect(runtime.manager.abortTool(run.turn.turnId, toolId)).toBe(true);
    await run.turn.done;
    expect(resultOf(run.events, toolId)).toMatchObject({
      status: "cancelled",
      result: "[CANCELLED] Tool cancelled by user.",
    });
    expect(run.events.at(-1)).toMatchObject({ type: "turn_complete" });
  });

  it("is closed by the turn's deadline like a running call, and the model answers", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    const runtime = makeRuntime({ echo: "always" }, { turns: { timeoutMs: 1_000 } });
    const run = start(runtime, '/tool echo {"text":"x"}');
    await run.waitingFor("echo");
    const { toolId } = requestOf(run.events, "echo");
    await vi.advanceTimersByTimeAsync(1_000);
    await run.turn.done;
    expect(resultOf(run.events, toolId)).toMatchObject({ status: "timeout" });
    expect(runtime.manager.approvals.size).toBe(0);
    expect(run.events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "timeout" });
  });

  it("comes after the step-mode pause: nothing is asked before the turn is continued", async () => {
    const runtime = makeRuntime({ echo: "always" });
    const run = start(runtime, '/tool echo {"text":"x"}', true);
    await until(() => run.events.some((event) => event.type === "debugger.pause"), "pause");
    expect(run.types().includes("tool_approval_request")).toBe(false);
    const pause = run.events.find((event) => event.type === "debugger.pause");
    if (pause?.type !== "debugger.pause") throw new Error("no pause");
    runtime.manager.continueTurn(run.turn.turnId, pause.pauseId);
    await run.waitingFor("echo");
    expect(runtime.manager.approvals.size).toBe(1);
  });

  it("asks nothing for tools the policy does not name", async () => {
    const runtime = makeRuntime({ sleep: "always" });
    const run = start(runtime, '/tool echo {"text":"free"}');
    await run.turn.done;
    expect(run.types().includes("tool_approval_request")).toBe(false);
    expect(run.events.find((event) => event.type === "tool_result")).toMatchObject({ status: "complete" });
  });
});

describe("tool approval: decisions", () => {
  it("edit: an invalid input is refused naming the field and the call keeps waiting; a valid one runs", async () => {
    const runtime = makeRuntime({ echo: "always" });
    const run = start(runtime, '/tool echo {"text":"model wrote this"}');
    await run.waitingFor("echo");
    const { toolId } = requestOf(run.events, "echo");
    const turnId = run.turn.turnId;

    const refused = runtime.manager.decideApproval(turnId, toolId, {
      decision: "approve",
      input: { text: 42 },
    });
    expect(refused).toMatchObject({ accepted: false, problem: "invalid_input" });
    expect(refused.accepted === false && refused.problem === "invalid_input" && refused.message).toMatch(
      /input\.text/,
    );
    expect(runtime.manager.approvals.pendingOf(turnId)).toHaveLength(1);
    expect(run.types(toolId)).toEqual(["tool_approval_request"]);

    expect(
      runtime.manager.decideApproval(turnId, toolId, {
        decision: "approve",
        input: { text: "person wrote this" },
      }),
    ).toEqual({ accepted: true });
    await run.turn.done;
    expect(run.events.find((event) => event.type === "tool_approval")).toMatchObject({
      decision: "approve",
      edited: true,
    });
    expect(run.events.find((event) => event.type === "tool_start")).toMatchObject({
      input: { text: "person wrote this" },
    });
    const result = resultOf(run.events, toolId);
    expect(result?.status).toBe("complete");
    expect(result?.result).toBe(
      '[EDITED] A person changed this call\'s input before approving it; it ran with: {"text":"person wrote this"}' +
        "\n\nperson wrote this",
    );
    // history keeps what the model asked for; its result says what ran
    const call = runtime.store.getHistory(run.turn.sessionId).find((block) => block.kind === "tool_call");
    expect(call).toMatchObject({ input: { text: "model wrote this" } });
    // a second decision finds nothing waiting
    expect(runtime.manager.decideApproval(turnId, toolId, { decision: "reject" })).toEqual({
      accepted: false,
      problem: "not_waiting",
    });
  });

  it("reject: [REJECTED] with the reason, status rejected in history, and the model continues", async () => {
    const runtime = makeRuntime({ echo: "always" });
    const run = start(runtime, '/tool echo {"text":"x"}');
    await run.waitingFor("echo");
    const { toolId } = requestOf(run.events, "echo");
    runtime.manager.decideApproval(run.turn.turnId, toolId, { decision: "reject", reason: "not today" });
    await run.turn.done;
    expect(run.types(toolId)).toEqual(["tool_approval_request", "tool_approval", "tool_result"]);
    expect(run.events.find((event) => event.type === "tool_approval")).toMatchObject({
      decision: "reject",
      edited: false,
      reason: "not today",
    });
    const stored = runtime.store
      .getHistory(run.turn.sessionId)
      .find((block) => block.kind === "tool_response");
    expect(stored).toMatchObject({ status: "rejected", result: "[REJECTED] not today", isError: true });
    expect(answer(runtime, run.turn)).toContain("echo: [REJECTED] not today");
  });

  it("reject without a reason says the user rejected it", async () => {
    const runtime = makeRuntime({ echo: "always" });
    const run = start(runtime, '/tool echo {"text":"x"}');
    await run.waitingFor("echo");
    const { toolId } = requestOf(run.events, "echo");
    runtime.manager.decideApproval(run.turn.turnId, toolId, { decision: "reject" });
    await run.turn.done;
    expect(resultOf(run.events, toolId)).toMatchObject({ result: "[REJECTED] Rejected by the user." });
  });

  it("a decision for another turn's call finds nothing waiting", async () => {
    const runtime = makeRuntime({ echo: "always" });
    const first = start(runtime, '/tool echo {"text":"x"}');
    const second = start(runtime, "hello");
    await first.waitingFor("echo");
    await second.turn.done;
    const { toolId } = requestOf(first.events, "echo");
    expect(runtime.manager.decideApproval(second.turn.turnId, toolId, { decision: "approve" })).toMatchObject(
      {
        accepted: false,
      },
    );
    expect(runtime.manager.approvals.size).toBe(1);
  });
});
