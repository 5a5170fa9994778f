/**
 * Resilience over the real server (issue: retries, breakers, deadlines, per-tool cancel, real tools,
 * trace and metrics): each scenario through POST /api/sessions/stream with the scripted model, checked
 * in the SSE events, the persisted trace and /metrics.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import { liveDescendants, liveMembersOfGroup } from "../helpers/processes.js";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { eventually } from "../helpers/eventually.js";
import { SseStream, turnIdOf } from "../helpers/sse.js";

type TraceEntry = { kind: string; [key: string]: unknown };

const ofType = <T extends TurnEvent["type"]>(events: TurnEvent[], type: T) =>
  events.filter((event): event is Extract<TurnEvent, { type: T }> => event.type === type);

const BREAKER_OPEN_MS = 3_000;

describe("resilience over HTTP", () => {
  let server: ServerHandle;
  let root: string;

  const run = async (message: string) => {
    const stream = await SseStream.start(server.baseUrl, { message });
    const events = await stream.untilEnd();
    return { stream, events, turnId: turnIdOf(stream) };
  };
  const trace = async (turnId: string) =>
    ((await (await fetch(`${server.baseUrl}/api/turns/${turnId}/trace`)).json()) as { entries: TraceEntry[] })
      .entries;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "reins-roots-"));
    mkdirSync(join(root, "allowed"));
    writeFileSync(join(root, "allowed", "inside.txt"), "inside the root");
    writeFileSync(join(root, "outside.txt"), "secret outside the root");
    symlinkSync(join(root, "outside.txt"), join(root, "allowed", "escape.txt"));
    server = await startServer({
      env: {
        SYSTEM_TOOLS: "exec,read_file",
        ALLOWED_ROOTS: join(root, "allowed"),
        // the circuit stays open long enough for the next turn to meet it on a busy machine
        BREAKER_OPEN_MS: String(BREAKER_OPEN_MS),
        // five attempts take 1.5 s of backoff: the default 2 s retry budget would leave too little slack
        RETRY_MAX_TIME_MS: "30000",
        EXEC_KILL_GRACE_MS: "300",
      },
    });
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
    rmSync(root, { recursive: true, force: true });
  });

  it("retries a transient failure until it succeeds; events and trace show each attempt", async () => {
    const { events, turnId } = await run('/tool flaky {"failures":2,"kind":"transient"}');
    const retries = ofType(events, "tool_retry");
    expect(retries.map((retry) => [retry.attempt, retry.classification])).toEqual([
      [2, "transient"],
      [3, "transient"],
    ]);
    expect(retries[0]?.delayMs).toBeGreaterThanOrEqual(90);
    expect(retries[0]?.delayMs).toBeLessThanOrEqual(110);
    expect(retries[1]?.delayMs).toBeGreaterThanOrEqual(180);
    expect(retries[1]?.delayMs).toBeLessThanOrEqual(220);
    expect(retries[0]?.error).toContain("failure 1 of 2");
    expect(ofType(events, "tool_result")[0]).toMatchObject({
      status: "complete",
      attempts: 3,
      isError: false,
    });

    const entries = await trace(turnId);
    expect(entries.filter((entry) => entry.kind !== "breaker_transition").map((entry) => entry.kind)).toEqual(
      ["classification", "retry", "classification", "retry", "retry_succeeded"],
    );
    expect(entries[0]).toMatchObject({ classification: "transient", basis: "declared by the tool" });
  });

  it("tries a permanently failing call once", async () => {
    const { events, turnId } = await run('/tool flaky {"failures":3,"kind":"permanent"}');
    expect(ofType(events, "tool_retry")).toHaveLength(0);
    expect(ofType(events, "tool_result")[0]).toMatchObject({ status: "error", attempts: 1, isError: true });
    expect(await trace(turnId)).toEqual([
      expect.objectContaining({ kind: "classification", classification: "permanent", toolName: "flaky" }),
    ]);
  });

  it("opens the breaker, fails fast, half-opens after BREAKER_OPEN_MS and closes after two good probes", async () => {
    // five transient failures within one call's retries open the circuit
    const opening = await run('/tool flaky {"failures":5,"kind":"transient"}');
    expect(ofType(opening.events, "tool_result")[0]).toMatchObject({ status: "error", attempts: 5 });
    expect(await trace(opening.turnId)).toContainEqual(
      expect.objectContaining({ kind: "breaker_transition", from: "closed", to: "open" }),
    );

    const rejected = await run('/tool flaky {"failures":0,"kind":"transient","text":"a"}');
    const fastFail = ofType(rejected.events, "tool_result")[0];
    expect(fastFail).toMatchObject({ status: "error", attempts: 0 });
    expect(fastFail?.result).toMatch(/^\[CIRCUIT_OPEN\] Tool "flaky" has failed repeatedly/);

    await new Promise((resolve) => setTimeout(resolve, BREAKER_OPEN_MS + 100));
    const probe = await run('/tool flaky {"failures":0,"kind":"transient","text":"b"}');
    expect(ofType(probe.events, "tool_result")[0]).toMatchObject({ status: "complete", result: "b" });
    expect(await trace(probe.turnId)).toContainEqual(
      expect.objectContaining({ kind: "breaker_transition", from: "open", to: "half_open" }),
    );
    const second = await run('/tool flaky {"failures":0,"kind":"transient","text":"c"}');
    expect(await trace(second.turnId)).toContainEqual(
      expect.objectContaining({ kind: "breaker_transition", from: "half_open", to: "closed" }),
    );
  });

  it("cancels one running tool while its siblings finish and the turn goes on", async () => {
    const stream = await SseStream.start(server.baseUrl, {
      message:
        '/tool sleep {"ms":30000}\n/tool sleep {"ms":300}\n/tool echo {"text":"sibling"}\n/then\nafter',
    });
    const start = await stream.next(
      (event) => event.type === "tool_start" && (event.input as { ms?: number }).ms === 30000,
    );
    const turnId = turnIdOf(stream);
    const response = await fetch(
      `${server.baseUrl}/api/turns/${turnId}/tools/${start.type === "tool_start" ? start.toolId : ""}/abort`,
      {
        method: "POST",
      },
    );
    expect(response.status).toBe(200);
    const events = await stream.untilEnd();
    const results = ofType(events, "tool_result");
    expect(results.map((result) => [result.status, result.result])).toEqual(
      expect.arrayContaining([
        ["cancelled", "[CANCELLED] Tool cancelled by user."],
        ["complete", "Slept 300ms."],
        ["complete", "sibling"],
      ]),
    );
    expect(events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "end_turn" });

    const unknownTool = await fetch(`${server.baseUrl}/api/turns/${turnId}/tools/call_nope/abort`, {
      method: "POST",
    });
    expect(unknownTool.status).toBe(404);
    const unknownTurn = await fetch(`${server.baseUrl}/api/turns/turn_nope/tools/call_nope/abort`, {
      method: "POST",
    });
    expect(unknownTurn.status).toBe(404);
  });

  it("kills the whole process group of an aborted exec: no process of it survives", async () => {
    const stream = await SseStream.start(server.baseUrl, {
      message: '/tool exec {"command":"sleep 101 & sleep 102 & wait"}',
    });
    await stream.next((event) => event.type === "tool_start");
    const group = await eventually(() => {
      const shell = liveDescendants(server.child.pid ?? -1).find((process) => process.command === "sh");
      if (!shell) throw new Error("exec's shell not running yet");
      const members = liveMembersOfGroup(shell.pgid);
      if (members.filter((process) => process.command === "sleep").length < 2)
        throw new Error("children not up yet");
      return shell.pgid;
    });
    expect(liveMembersOfGroup(group).length).toBeGreaterThanOrEqual(3);

    await fetch(`${server.baseUrl}/api/turns/${turnIdOf(stream)}/abort`, { method: "POST" });
    await stream.untilEnd();
    await eventually(() => expect(liveMembersOfGroup(group)).toEqual([]));
  });

  it("confines read_file to the allowed roots: ../ and symlink escapes are refused", async () => {
    const { events } = await run(
      [
        '/tool read_file {"path":"inside.txt"}',
        '/tool read_file {"path":"../outside.txt"}',
        '/tool read_file {"path":"escape.txt"}',
      ].join("\n"),
    );
    const results = ofType(events, "tool_result");
    expect(results).toHaveLength(3);
    const byInput = (index: number) =>
      results.find((result) => result.toolId === ofType(events, "tool_start")[index]?.toolId);
    expect(byInput(0)).toMatchObject({ status: "complete" });
    expect(byInput(0)?.result).toContain("inside the root");
    for (const index of [1, 2]) {
      expect(byInput(index)).toMatchObject({ status: "error", attempts: 1 });
      expect(byInput(index)?.result).not.toContain("secret");
    }
  });

  it("skips a call whose dependency failed while an independent sibling succeeds", async () => {
    const { events } = await run(
      [
        '/tool flaky {"failures":1,"kind":"permanent","key":"dependency"}',
        '/tool echo {"text":"dependent","_meta":{"dependsOn":[0]}}',
        '/tool echo {"text":"independent"}',
      ].join("\n"),
    );
    const results = ofType(events, "tool_result").map((result) => result.result);
    expect(results).toContain("independent");
    expect(results).toContain(
      '[SKIPPED] Tool "echo" was not run because call #0 ("flaky") of this batch failed.',
    );
    expect(results).not.toContain("dependent");
    // the skipped call was announced without its `_meta`, and with no limits: it never ran
    const skipped = ofType(events, "tool_start").find(
      (start) => (start.input as { text?: string }).text === "dependent",
    );
    expect(skipped).toMatchObject({ input: { text: "dependent" }, timeoutMs: 0, idleTimeoutMs: 0 });
    expect(skipped?.input).not.toHaveProperty("_meta");
  });

  it("tells the model about an earlier timeout through session_status", async () => {
    const first = await SseStream.start(server.baseUrl, { message: '/tool hang {"_meta":{"timeout":200}}' });
    await first.untilEnd();
    const sessionId = first.events[0]?.type === "turn_start" ? first.events[0].sessionId : "";
    const second = await SseStream.start(server.baseUrl, { message: "/tool session_status {}", sessionId });
    const events = await second.untilEnd();
    const status = JSON.parse(ofType(events, "tool_result")[0]?.result ?? "{}") as {
      timedOut: { toolName: string }[];
      toolCallCount: number;
      openCircuits: string[];
    };
    expect(status.timedOut).toEqual([expect.objectContaining({ toolName: "hang" })]);
    expect(status.toolCallCount).toBe(1);
    expect(status.openCircuits).toEqual([]);
  });

  it("aborting a parent turn aborts its child turn with reason parent", async () => {
    const stream = await SseStream.start(server.baseUrl, {
      message: '/tool delegate {"agentId":"researcher","message":"/tool hang {}"}',
    });
    await stream.next((event) => event.type === "tool_start");
    const parentId = turnIdOf(stream);
    const active = await eventually(async () => {
      const body = (await (await fetch(`${server.baseUrl}/api/turns/active`)).json()) as {
        turns: { turnId: string; parentTurnId: string | null; childTurnIds: string[]; agentId: string }[];
      };
      const child = body.turns.find((turn) => turn.parentTurnId === parentId);
      if (!child) throw new Error("child turn not started yet");
      return { child, parent: body.turns.find((turn) => turn.turnId === parentId) };
    });
    expect(active.child.agentId).toBe("researcher");
    expect(active.parent?.childTurnIds).toEqual([active.child.turnId]);

    await fetch(`${server.baseUrl}/api/turns/${parentId}/abort`, { method: "POST" });
    expect((await stream.untilEnd()).at(-1)).toMatchObject({ type: "turn_abort", reason: "user" });
    const childEvents = await (
      await SseStream.open(`${server.baseUrl}/api/turns/${active.child.turnId}/events`)
    ).untilEnd();
    expect(childEvents.at(-1)).toMatchObject({ type: "turn_abort", reason: "parent" });
  });

  it("stops a turn that repeats the same call: warns at 3, stops at 5", async () => {
    const { events, turnId } = await run(Array(5).fill('/tool echo {"text":"again"}').join("\n/then\n"));
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "loop" });
    const results = ofType(events, "tool_result");
    expect(results[2]?.result).toContain("[LOOP WARNING]");
    expect(results[2]?.result.startsWith("again")).toBe(true);
    expect(
      (await trace(turnId)).filter((entry) => entry.kind === "loop").map((entry) => entry.action),
    ).toEqual(["warn", "warn", "stop"]);
  });

  it("tracks a tool that ignored its cancellation as a zombie until it settles", async () => {
    const { turnId } = await run('/tool hang {"_meta":{"timeout":150}}');
    const zombie = await eventually(async () => {
      const active = (await (await fetch(`${server.baseUrl}/api/turns/active`)).json()) as {
        zombies: { turnId: string; toolName: string; elapsedMs: number }[];
      };
      const found = active.zombies.find((entry) => entry.turnId === turnId);
      if (!found) throw new Error("not a zombie yet");
      return found;
    });
    expect(zombie.toolName).toBe("hang");
    expect(await trace(turnId)).toContainEqual(
      expect.objectContaining({ kind: "zombie", state: "started", toolName: "hang" }),
    );
  });

  it("exposes all of it in /metrics", async () => {
    const response = await fetch(`${server.baseUrl}/metrics`);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain/);
    const samples = parsePrometheus(await response.text());
    const value = (name: string, labels: Record<string, string> = {}) =>
      samples
        .filter(
          (sample) =>
            sample.name === name &&
            Object.entries(labels).every(([key, want]) => sample.labels[key] === want),
        )
        .reduce((sum, sample) => sum + sample.value, 0);

    expect(value("reins_tool_retries_total", { tool: "flaky" })).toBeGreaterThanOrEqual(6);
    expect(value("reins_tool_retry_successes_total", { tool: "flaky" })).toBeGreaterThanOrEqual(1);
    expect(
      value("reins_tool_errors_total", { tool: "flaky", classification: "permanent" }),
    ).toBeGreaterThanOrEqual(2);
    expect(value("reins_circuit_opens_total", { tool: "flaky" })).toBe(1);
    expect(value("reins_circuit_state", { tool: "flaky" })).toBe(0);
    expect(value("reins_tool_timeouts_total", { tool: "hang", kind: "total" })).toBe(2);
    expect(value("reins_tool_calls_total", { tool: "echo", status: "complete" })).toBeGreaterThanOrEqual(3);
    expect(value("reins_loop_detections_total", { action: "stop" })).toBe(1);
    expect(value("reins_tool_skipped_total", { tool: "echo" })).toBe(1);
    expect(value("reins_active_turns")).toBe(0);
    expect(value("reins_zombie_tools")).toBeGreaterThanOrEqual(1);
    expect(value("reins_zombies_total", { tool: "hang" })).toBeGreaterThanOrEqual(1);
    expect(value("reins_turn_duration_seconds_count")).toBeGreaterThanOrEqual(10);
    expect(value("reins_turns_total", { outcome: "aborted:parent" })).toBe(1);
  });
});

describe("turn deadline and fallbacks", () => {
  let server: ServerHandle;
  let configDir: string;
  beforeAll(async () => {
    configDir = mkdtempSync(join(tmpdir(), "reins-config-"));
    const configFile = join(configDir, "reins.json");
    writeFileSync(configFile, JSON.stringify({ tools: { overrides: { flaky: { fallback: "echo" } } } }));
    server = await startServer({ env: { CONFIG_FILE: configFile, TURN_TIMEOUT_MS: "3000" } });
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
    rmSync(configDir, { recursive: true, force: true });
  });

  it("keeps two finished results of three at the turn deadline and answers with them", async () => {
    const stream = await SseStream.start(server.baseUrl, {
      message:
        '/tool echo {"text":"quick"}\n/tool sleep {"ms":100}\n/tool hang {}\n/then\n/tool echo {"text":"never"}',
    });
    const events = await stream.untilEnd();
    const results = ofType(events, "tool_result");
    expect(results.map((result) => result.status).sort()).toEqual(["complete", "complete", "timeout"]);
    expect(results.find((result) => result.toolName === "hang")?.result).toMatch(
      /^\[TIMEOUT\] Tool "hang" was stopped: the turn reached its time limit of 3s/,
    );
    const answer = ofType(events, "text_delta")
      .map((event) => event.text)
      .join("");
    expect(answer).toContain("echo: quick");
    expect(answer).toContain("sleep: Slept 100ms.");
    expect(events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "timeout" });
    expect(ofType(events, "tool_start").map((start) => start.toolName)).not.toContain("never");
  });

  it("answers with the declared fallback when a tool fails permanently", async () => {
    const stream = await SseStream.start(server.baseUrl, {
      message: '/tool flaky {"failures":1,"kind":"permanent","text":"from the fallback"}',
    });
    const events = await stream.untilEnd();
    expect(ofType(events, "tool_result")[0]).toMatchObject({
      status: "complete",
      result: '[FALLBACK] Tool "flaky" failed permanently; "echo" answered instead: from the fallback',
    });
    const entries = (
      (await (await fetch(`${server.baseUrl}/api/turns/${turnIdOf(stream)}/trace`)).json()) as {
        entries: TraceEntry[];
      }
    ).entries;
    expect(entries).toContainEqual(
      expect.objectContaining({ kind: "fallback", fallback: "echo", toolName: "flaky" }),
    );
  });
});

type Sample = { name: string; labels: Record<string, string>; value: number };

/** Parses the Prometheus text format (names, labels, values; comments skipped). */
function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1] as string] = pair[2] as string;
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}
