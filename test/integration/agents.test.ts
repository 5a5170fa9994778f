/**
 * Agents end to end (docs/semantics.md#agents): the real server, configured through `AGENTS_FILE`, talks
 * through the official SDKs to the strict wire-compatible fake providers. The provider gets the agent's
 * instructions as its system prompt and only the agent's tools (no demonstration tool unless named); a call
 * outside the agent's list never runs; unknown and mismatched agents are refused; per-agent limits apply;
 * `GET /api/agents` and the transcript show what they should. Without agents, the server behaves as before.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import { FakeProvider } from "../support/fake-providers.js";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, sessionIdOf } from "../helpers/sse.js";

const ofType = <T extends TurnEvent["type"]>(events: TurnEvent[], type: T) =>
  events.filter((event): event is Extract<TurnEvent, { type: T }> => event.type === type);

const SUPPORT_INSTRUCTIONS = "You are the support agent. Answer from the docs only.";
const ECHOER_INSTRUCTIONS = "You repeat things.";

const AGENTS = {
  agents: {
    support: {
      description: "Answers questions",
      instructions: SUPPORT_INSTRUCTIONS,
      provider: "anthropic",
      model: "claude-agent-model",
      tools: ["*"],
      approval: { delegate: "never" },
    },
    echoer: {
      description: "Repeats",
      instructions: ECHOER_INSTRUCTIONS,
      provider: "openai",
      tools: ["echo"],
    },
    stepper: { provider: "scripted", tools: ["*"], limits: { maxSteps: 1 } },
    sleeper: { provider: "scripted", tools: ["sleep"], limits: { turnTimeoutMs: 2_000 } },
    guarded: { provider: "scripted", tools: ["echo"], approval: { "*": "always" } },
  },
  defaultAgent: "support",
};

type Fakes = { anthropic: FakeProvider; openai: FakeProvider };
type SentTool = { name: string };

async function postTurn(server: ServerHandle, body: Record<string, unknown>) {
  return fetch(`${server.baseUrl}/api/sessions/stream`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

async function turn(server: ServerHandle, body: Record<string, unknown>) {
  const stream = await SseStream.start(server.baseUrl, body);
  return { stream, events: await stream.untilEnd(30_000) };
}

describe("agents", () => {
  let fakes: Fakes;
  let directory: string;
  let server: ServerHandle;

  beforeAll(async () => {
    fakes = { anthropic: await FakeProvider.start("anthropic"), openai: await FakeProvider.start("openai") };
    directory = mkdtempSync(join(tmpdir(), "reins-agents-"));
    const agentsFile = join(directory, "agents.json");
    writeFileSync(agentsFile, JSON.stringify(AGENTS));
    server = await startServer({
      env: {
        AGENTS_FILE: agentsFile,
        ANTHROPIC_API_KEY: "sk-ant-test",
        ANTHROPIC_BASE_URL: fakes.anthropic.baseUrl,
        OPENAI_API_KEY: "sk-openai-test",
        OPENAI_BASE_URL: fakes.openai.baseUrl,
      },
    });
  }, 60_000);
  afterAll(async () => {
    await server?.stop("SIGKILL");
    server?.cleanup();
    for (const fake of Object.values(fakes ?? {})) {
      expect(fake.requests.filter((request) => request.rejection !== null)).toEqual([]);
      await fake.close();
    }
    rmSync(directory, { recursive: true, force: true });
  });

  it("sends Anthropic the instructions as `system`, the agent's model, and no demonstration tool for `*`", async () => {
    fakes.anthropic.enqueue({ kind: "text", text: "From the docs." });
    const { events } = await turn(server, { message: "how do I start?" });
    expect(events[0]).toMatchObject({ type: "turn_start", agentId: "support", provider: "anthropic" });
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
    const body = fakes.anthropic.accepted.at(-1)?.body ?? {};
    expect(body.system).toBe(SUPPORT_INSTRUCTIONS);
    expect(body.model).toBe("claude-agent-model");
    const offered = (body.tools as SentTool[]).map((tool) => tool.name);
    expect(offered).toEqual(expect.arrayContaining(["session_status", "delegate"]));
    for (const demo of ["echo", "sleep", "hang", "flaky"]) expect(offered).not.toContain(demo);
    // never a history block: the messages are the user's only
    expect((body.messages as { role: string }[]).map((message) => message.role)).toEqual(["user"]);
    expect(JSON.stringify(body.messages)).not.toContain(SUPPORT_INSTRUCTIONS);
  });

  it("sends OpenAI a leading system message and only the tools the agent names", async () => {
    fakes.openai.enqueue({ kind: "text", text: "Repeated." });
    const { events } = await turn(server, { message: "say it", agentId: "echoer" });
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
    const body = fakes.openai.accepted.at(-1)?.body ?? {};
    expect(body.messages).toEqual([
      { role: "system", content: ECHOER_INSTRUCTIONS },
      { role: "user", content: "say it" },
    ]);
    expect((body.tools as { function: SentTool }[]).map((tool) => tool.function.name)).toEqual(["echo"]);
  });

  it("answers a call of a tool outside the agent's list as an unknown tool, and never runs it", async () => {
    fakes.anthropic.enqueue(
      { kind: "tools", calls: [{ name: "sleep", input: { ms: 600_000 } }] },
      { kind: "text", text: "I cannot sleep." },
    );
    const { events } = await turn(server, { message: "sleep for ten minutes", agentId: "support" });
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
    const [result] = ofType(events, "tool_result");
    expect(result).toMatchObject({ toolName: "sleep", status: "error" });
    expect(result?.result).toBe('[ERROR] Tool "sleep" failed: unknown tool "sleep".');
    const trace = (await (await fetch(`${server.baseUrl}/api/turns/${events[0]?.turnId}/trace`)).json()) as {
      entries: { kind: string; basis?: string }[];
    };
    expect(trace.entries.some((entry) => entry.basis === "unknown tool")).toBe(true);
  });

  it("never asks a person to approve a call the agent may not make", async () => {
    const refused = await turn(server, { message: '/tool sleep {"ms":1}', agentId: "guarded" });
    expect(ofType(refused.events, "tool_approval_request")).toEqual([]);
    expect(ofType(refused.events, "tool_result")[0]?.result).toBe(
      '[ERROR] Tool "sleep" failed: unknown tool "sleep".',
    );
    // while a call it may make does wait for approval under the same policy
    const waiting = await SseStream.start(server.baseUrl, {
      message: '/tool echo {"text":"hi"}',
      agentId: "guarded",
    });
    const request = await waiting.next((event) => event.type === "tool_approval_request");
    expect(request).toMatchObject({ toolName: "echo" });
    await fetch(`${server.baseUrl}/api/turns/${request.turnId}/abort`, { method: "POST" });
    expect((await waiting.untilEnd()).at(-1)).toMatchObject({ type: "turn_abort" });
  });

  it("refuses an unknown agent with 400 agent_not_found, on a turn and on a new session", async () => {
    const createSession = (agentId: string) =>
      fetch(`${server.baseUrl}/api/sessions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ agentId }),
      });
    for (const response of [
      await postTurn(server, { message: "hi", agentId: "nobody" }),
      await createSession("nobody"),
    ]) {
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({
        code: "agent_not_found",
        error: expect.stringContaining('Unknown agent "nobody"'),
      });
    }
    expect((await createSession("echoer")).status).toBe(201);
  });

  it("binds a session to its agent: another agent is 409 agent_mismatch, none uses the session's", async () => {
    fakes.openai.enqueue({ kind: "text", text: "one" }, { kind: "text", text: "two" });
    const first = await turn(server, { message: "first", agentId: "echoer" });
    const sessionId = sessionIdOf(first.stream);
    const mismatch = await postTurn(server, { message: "again", sessionId, agentId: "support" });
    expect(mismatch.status).toBe(409);
    expect(await mismatch.json()).toMatchObject({ code: "agent_mismatch", agentId: "echoer" });

    const second = await turn(server, { message: "again", sessionId });
    expect(second.events[0]).toMatchObject({ type: "turn_start", agentId: "echoer", provider: "openai" });
    expect(second.events.at(-1)).toMatchObject({ type: "turn_complete" });
  });

  it("applies an agent's maxSteps", async () => {
    const { events } = await turn(server, {
      agentId: "stepper",
      message: '/tool echo {"text":"a"}\n/then\n/tool echo {"text":"b"}\n/then\ndone',
    });
    expect(events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "max_steps" });
    expect(ofType(events, "tool_result")).toHaveLength(1);
  });

  it("applies an agent's turnTimeoutMs", async () => {
    const { events } = await turn(server, { agentId: "sleeper", message: '/tool sleep {"ms":600000}' });
    expect(events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "timeout" });
    expect(ofType(events, "tool_result")[0]?.result).toContain("time limit of 2s");
  });

  it("lists the agents with resolved tools, never their instructions or keys", async () => {
    const response = await fetch(`${server.baseUrl}/api/agents`);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain(SUPPORT_INSTRUCTIONS);
    expect(text).not.toContain(ECHOER_INSTRUCTIONS);
    expect(text).not.toContain("sk-");
    const { agents } = JSON.parse(text) as { agents: Record<string, unknown>[] };
    expect(agents.map((agent) => agent.id)).toEqual(["support", "echoer", "stepper", "sleeper", "guarded"]);
    expect(agents[0]).toEqual({
      id: "support",
      description: "Answers questions",
      provider: "anthropic",
      model: "claude-agent-model",
      tools: ["session_status", "delegate"],
      approval: { delegate: "never" },
    });
    expect(agents[1]).toMatchObject({ provider: "openai", model: "gpt-4.1", tools: ["echo"] });
    expect(agents[2]?.tools).toEqual(["echo", "sleep", "hang", "flaky", "session_status", "delegate"]);
  });

  it("shows the session's instructions in its transcript, as each provider would get them", async () => {
    fakes.anthropic.enqueue({ kind: "text", text: "ok" });
    const { stream } = await turn(server, { message: "transcribe me" });
    const sessionId = sessionIdOf(stream);
    const transcript = async (provider: string) =>
      (await (
        await fetch(`${server.baseUrl}/api/sessions/${sessionId}/transcript?provider=${provider}`)
      ).json()) as {
        system?: string;
        messages: { role: string; content: unknown }[];
        diagnostics: { budget: { instructionTokens: number } };
      };
    const anthropic = await transcript("anthropic");
    expect(anthropic.system).toBe(SUPPORT_INSTRUCTIONS);
    expect(anthropic.messages[0]?.role).toBe("user");
    // what they take of the context budget, before the transcript gets the rest
    expect(anthropic.diagnostics.budget.instructionTokens).toBe(Math.ceil(SUPPORT_INSTRUCTIONS.length / 4));
    const openai = await transcript("openai");
    expect(openai.system).toBeUndefined();
    expect(openai.messages[0]).toEqual({ role: "system", content: SUPPORT_INSTRUCTIONS });
    // history holds no trace of them
    const history = await (await fetch(`${server.baseUrl}/api/sessions/${sessionId}/history`)).text();
    expect(history).not.toContain(SUPPORT_INSTRUCTIONS);
  });
});

describe("no agents configured", () => {
  let anthropic: FakeProvider;
  let server: ServerHandle;

  beforeAll(async () => {
    anthropic = await FakeProvider.start("anthropic");
    server = await startServer({
      env: { ANTHROPIC_API_KEY: "sk-ant-test", ANTHROPIC_BASE_URL: anthropic.baseUrl },
    });
  }, 60_000);
  afterAll(async () => {
    await server?.stop("SIGKILL");
    server?.cleanup();
    await anthropic?.close();
  });

  it("has the built-in agent `default`: no system prompt, every tool but the demonstration ones", async () => {
    anthropic.enqueue({ kind: "text", text: "Hello." });
    const { events } = await turn(server, { message: "hi" });
    expect(events[0]).toMatchObject({ type: "turn_start", agentId: "default", provider: "anthropic" });
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
    const body = anthropic.accepted.at(-1)?.body ?? {};
    expect(body.system).toBeUndefined();
    expect((body.tools as SentTool[]).map((tool) => tool.name)).toEqual(["session_status", "delegate"]);

    const { agents } = (await (await fetch(`${server.baseUrl}/api/agents`)).json()) as {
      agents: unknown[];
    };
    expect(agents).toEqual([
      {
        id: "default",
        description: expect.any(String),
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        tools: ["session_status", "delegate"],
        approval: {},
      },
    ]);
  });

  it("runs scripted turns with every tool as before", async () => {
    const { events } = await turn(server, {
      message: '/tool echo {"text":"still here"}',
      provider: "scripted",
    });
    expect(events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "end_turn" });
    expect(ofType(events, "tool_result")[0]).toMatchObject({ status: "complete", result: "still here" });
  });
});
