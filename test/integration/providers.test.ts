/**
 * The real providers end to end: the real server talks through the official SDKs to wire-compatible
 * fake provider servers that reject any request breaking docs/providers.md with the provider's real error.
 * Scenarios: a five-call batch aborted after two results then continued on another provider; a crash
 * mid-batch, restart, continue; the four profiles in turn on one session; a 429 then success; a 400
 * surfaced to the client; the final answer at a turn's deadline on Anthropic, tools in the history;
 * streams that end cleanly before their end, an error and never a tool run; an abort that aborts the
 * provider's HTTP request; Anthropic's thinking — several signed blocks and a redacted one in one
 * response — passed back as it came.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import type { HistoryBlock } from "../../src/history/model.js";
import { FakeProvider, type FakeReply } from "../support/fake-providers.js";
import { eventually } from "../helpers/eventually.js";
import { PROJECT_ROOT, startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, sessionIdOf, turnIdOf } from "../helpers/sse.js";

type Fakes = Record<"anthropic" | "openai" | "kimi" | "mistral", FakeProvider>;

const ofType = <T extends TurnEvent["type"]>(events: TurnEvent[], type: T) =>
  events.filter((event): event is Extract<TurnEvent, { type: T }> => event.type === type);

function providerEnv(fakes: Fakes): Record<string, string> {
  return {
    ANTHROPIC_API_KEY: "sk-ant-test",
    ANTHROPIC_BASE_URL: fakes.anthropic.baseUrl,
    OPENAI_API_KEY: "sk-openai-test",
    OPENAI_BASE_URL: fakes.openai.baseUrl,
    KIMI_API_KEY: "sk-kimi-test",
    KIMI_BASE_URL: fakes.kimi.baseUrl,
    MISTRAL_API_KEY: "sk-mistral-test",
    MISTRAL_BASE_URL: fakes.mistral.baseUrl,
    DEFAULT_PROVIDER: "anthropic",
    // the fake models call echo, sleep and hang: a real provider's agent must name them (DESIGN §8.1)
    AGENTS_FILE: `${PROJECT_ROOT}/test/fixtures/demo-agents.json`,
  };
}

describe("providers through the official SDKs", () => {
  let fakes: Fakes;
  const servers: ServerHandle[] = [];
  const start = async (dataDir?: string) => {
    const server = await startServer({ env: providerEnv(fakes), dataDir });
    servers.push(server);
    return server;
  };

  beforeAll(async () => {
    fakes = {
      anthropic: await FakeProvider.start("anthropic"),
      openai: await FakeProvider.start("openai"),
      kimi: await FakeProvider.start("kimi"),
      mistral: await FakeProvider.start("mistral"),
    };
  });
  afterEach(async () => {
    for (const server of servers.splice(0)) {
      await server.stop("SIGKILL");
      server.cleanup();
    }
    for (const fake of Object.values(fakes)) {
      expect(
        fake.requests.filter((request) => request.rejection !== null).map((request) => request.rejection),
      ).toEqual([]);
      fake.requests.length = 0;
      fake.respond = undefined;
    }
  });
  afterAll(async () => {
    for (const fake of Object.values(fakes)) await fake.close();
  });

  const turn = async (server: ServerHandle, body: Record<string, unknown>) => {
    const stream = await SseStream.start(server.baseUrl, body);
    return { stream, events: await stream.untilEnd() };
  };
  const history = async (server: ServerHandle, sessionId: string) =>
    (
      (await (await fetch(`${server.baseUrl}/api/sessions/${sessionId}/history`)).json()) as {
        blocks: HistoryBlock[];
      }
    ).blocks;

  it("aborts a five-call batch after two results, then continues the session on another provider", async () => {
    const server = await start();
    fakes.anthropic.enqueue({
      kind: "tools",
      text: "Working on it.",
      calls: [
        { name: "echo", input: { text: "one" } },
        { name: "echo", input: { text: "two" } },
        { name: "sleep", input: { ms: 60_000 } },
        { name: "hang", input: {} },
        { name: "sleep", input: { ms: 60_001 } },
      ],
    });
    const stream = await SseStream.start(server.baseUrl, {
      message: "do five things",
      provider: "anthropic",
    });
    await stream.next(() => ofType(stream.events, "tool_result").length === 2);
    await fetch(`${server.baseUrl}/api/turns/${turnIdOf(stream)}/abort`, { method: "POST" });
    const events = await stream.untilEnd();
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "user" });
    expect(
      ofType(events, "text_delta")
        .map((event) => event.text)
        .join(""),
    ).toBe("Working on it.");

    fakes.openai.enqueue({ kind: "text", text: "Picking up where we left off." });
    const next = await turn(server, { message: "go on", sessionId: sessionIdOf(stream), provider: "openai" });
    expect(next.events.at(-1)).toMatchObject({ type: "turn_complete" });
    const sent = fakes.openai.accepted[0]?.body.messages as {
      role: string;
      content: string;
      tool_call_id?: string;
    }[];
    const toolMessages = sent.filter((message) => message.role === "tool");
    expect(toolMessages.map((message) => message.content)).toEqual([
      "one",
      "two",
      "[CANCELLED] Turn aborted by user.",
      "[CANCELLED] Turn aborted by user.",
      "[CANCELLED] Turn aborted by user.",
    ]);
    // OpenAI accepts Anthropic's own ids (at most 40 characters): they are kept as they are.
    expect(toolMessages.every((message) => message.tool_call_id?.startsWith("toolu_fake"))).toBe(true);
    expect(sent.at(-1)).toEqual({ role: "user", content: "go on" });
  });

  it("recovers a crash mid-batch and continues the session: the provider accepts the repaired transcript", async () => {
    const first = await start();
    fakes.anthropic.enqueue({
      kind: "tools",
      calls: [
        { name: "echo", input: { text: "kept" } },
        { name: "hang", input: {} },
      ],
    });
    const stream = await SseStream.start(first.baseUrl, { message: "start", provider: "anthropic" });
    await stream.next((event) => event.type === "tool_result");
    const sessionId = sessionIdOf(stream);
    await first.stop("SIGKILL");

    const second = await start(first.dataDir);
    fakes.mistral.enqueue({ kind: "text", text: "Recovered." });
    const next = await turn(second, { message: "are you there?", sessionId, provider: "mistral" });
    expect(next.events.at(-1)).toMatchObject({ type: "turn_complete" });
    const sent = fakes.mistral.accepted[0]?.body.messages as { role: string; content: string | null }[];
    expect(sent.filter((message) => message.role === "tool").map((message) => message.content)).toEqual([
      "kept",
      expect.stringMatching(/^\[INTERRUPTED\] Tool "hang"/),
    ]);
  });

  it("runs the four profiles in turn on one session; Kimi's reused ids never merge calls", async () => {
    const server = await start();
    let sessionId: string | undefined;
    const order = ["anthropic", "openai", "kimi", "mistral", "kimi"] as const;
    for (const [index, provider] of order.entries()) {
      fakes[provider].enqueue(
        { kind: "tools", calls: [{ name: "echo", input: { text: `${provider}-${index}` } }] },
        { kind: "text", text: `done ${index}` },
      );
      const result = await turn(server, {
        message: `turn ${index}`,
        provider,
        ...(sessionId ? { sessionId } : {}),
      });
      expect(result.events.at(-1), provider).toMatchObject({ type: "turn_complete", stopReason: "end_turn" });
      expect(result.events[0]).toMatchObject({ type: "turn_start", provider });
      sessionId ??= sessionIdOf(result.stream);
    }
    const blocks = await history(server, sessionId ?? "");
    const calls = blocks.filter((block) => block.kind === "tool_call");
    expect(calls).toHaveLength(5);
    expect(new Set(calls.map((block) => block.callId)).size).toBe(5);
    // both Kimi turns reused functions.echo:0, yet they are two calls with two results
    const kimiIds = calls.flatMap((block) =>
      block.kind === "tool_call" && block.providerCallId?.startsWith("functions.")
        ? [block.providerCallId]
        : [],
    );
    expect(kimiIds).toEqual(["functions.echo:0", "functions.echo:0"]);
    expect(blocks.filter((block) => block.kind === "tool_response")).toHaveLength(5);

    // the last Kimi request numbered the whole transcript's calls
    const lastKimi = fakes.kimi.accepted.at(-1)?.body.messages as {
      role: string;
      tool_calls?: { id: string }[];
    }[];
    const ids = lastKimi.flatMap((message) => message.tool_calls?.map((call) => call.id) ?? []);
    expect(ids).toEqual([
      "functions.echo:0",
      "functions.echo:1",
      "functions.echo:2",
      "functions.echo:3",
      "functions.echo:4",
    ]);
    for (const provider of ["anthropic", "openai", "mistral"] as const) {
      const transcript = (await (
        await fetch(`${server.baseUrl}/api/sessions/${sessionId}/transcript?provider=${provider}`)
      ).json()) as {
        diagnostics: { emittedCalls: unknown[] };
      };
      expect(transcript.diagnostics.emittedCalls).toHaveLength(5);
    }
  });

  it("continues on Anthropic a session holding half of a character (a lone surrogate) from its user, a model and a tool", async () => {
    const server = await start();
    const half = "half \ud83d";
    fakes.openai.enqueue(
      { kind: "tools", calls: [{ name: "echo", input: { text: half } }] },
      { kind: "text", text: `said ${half}` },
    );
    const first = await turn(server, { message: `look: ${half}`, provider: "openai" });
    expect(first.events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "end_turn" });
    const sessionId = sessionIdOf(first.stream);
    // history keeps what it was given
    const stored = await history(server, sessionId);
    expect(stored.filter((block) => JSON.stringify(block).includes("\\ud83d"))).toHaveLength(4);

    fakes.anthropic.enqueue({ kind: "text", text: "fine" });
    const second = await turn(server, { message: "and now?", provider: "anthropic", sessionId });
    expect(second.events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "end_turn" });
    // what Anthropic was sent has U+FFFD in each place: the message, the call's input, its result, the answer
    const sent = JSON.stringify(fakes.anthropic.accepted.at(-1)?.body.messages);
    expect(sent.split("half \uFFFD")).toHaveLength(5);
  });

  it("retries a 429 from the model, then succeeds", async () => {
    const server = await start();
    fakes.openai.enqueue(
      { kind: "error", status: 429, message: "Rate limit reached for requests" },
      { kind: "text", text: "Second time lucky." },
    );
    const { stream, events } = await turn(server, { message: "hello", provider: "openai" });
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
    // a retry is not an error: the turn succeeds, and clients see a model_retry event, never `error`
    expect(ofType(events, "error")).toEqual([]);
    const retries = ofType(events, "model_retry");
    expect(retries).toEqual([
      expect.objectContaining({ provider: "openai", attempt: 2, delayMs: expect.any(Number) as number }),
    ]);
    expect(retries[0]?.error).toContain("Rate limit reached for requests");
    expect(
      ofType(events, "text_delta")
        .map((event) => event.text)
        .join(""),
    ).toBe("Second time lucky.");
    const trace = (await (await fetch(`${server.baseUrl}/api/turns/${turnIdOf(stream)}/trace`)).json()) as {
      entries: { kind: string }[];
    };
    expect(trace.entries).toContainEqual(
      expect.objectContaining({ kind: "model_retry", provider: "openai", attempt: 2 }),
    );
    expect(fakes.openai.requests).toHaveLength(2);
  });

  it("surfaces a 400 to the client quoting the provider's message, and logs the request's diagnostics", async () => {
    const server = await start();
    fakes.anthropic.enqueue({ kind: "error", status: 400, message: "max_tokens: must be less than 8192" });
    const { events } = await turn(server, { message: "hello", provider: "anthropic" });
    expect(ofType(events, "error")).toEqual([
      expect.objectContaining({
        code: "model_error",
        message: "anthropic returned 400: max_tokens: must be less than 8192",
      }),
    ]);
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "error" });
    expect(fakes.anthropic.requests).toHaveLength(1);
    // the log reaches us through the server's stdout, which may come after the stream's end
    const logged = await eventually(() => {
      const record = server
        .logs()
        .map((line) => {
          try {
            return JSON.parse(line) as Record<string, unknown>;
          } catch {
            return {};
          }
        })
        .find((entry) => entry.msg === "model request failed");
      if (!record) throw new Error("no 'model request failed' line in the server's log yet");
      return record;
    });
    expect(logged).toMatchObject({
      provider: "anthropic",
      status: 400,
      error: "max_tokens: must be less than 8192",
    });
    expect(logged?.diagnostics).toMatchObject({ profile: "anthropic" });
  });

  // Mistral's error body has no `error` envelope (`{object: "error", message}`), OpenAI's and Kimi's do
  it.each(["openai", "kimi", "mistral"] as const)(
    "quotes %s's own message when it answers 400",
    async (provider) => {
      const server = await start();
      fakes[provider].enqueue({ kind: "error", status: 400, message: "Unexpected role 'user' after 'tool'" });
      const { events } = await turn(server, { message: "hello", provider });
      expect(ofType(events, "error")).toEqual([
        expect.objectContaining({
          code: "model_error",
          message: `${provider} returned 400: Unexpected role 'user' after 'tool'`,
        }),
      ]);
    },
  );

  it("answers at the turn's deadline on Anthropic in a session with a tool call: the same tools offered, tool choice none", async () => {
    // the session's tool call is made on a server without a short deadline, so none can cut it short
    const first = await start();
    fakes.anthropic.enqueue(
      { kind: "tools", calls: [{ name: "echo", input: { text: "kept" } }] },
      { kind: "text", text: "Echoed." },
    );
    const before = await turn(first, { message: "echo it", provider: "anthropic" });
    expect(before.events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "end_turn" });
    await first.stop();

    // the same session on a server whose turns end after 200 ms: the model stalls past that, and
    // answers the final inference (which comes first when the deadline passes before the first one)
    const second = await startServer({
      env: { ...providerEnv(fakes), TURN_TIMEOUT_MS: "200" },
      dataDir: first.dataDir,
    });
    servers.push(second);
    fakes.anthropic.respond = (body) =>
      (body.tool_choice as { type?: string } | undefined)?.type === "none"
        ? { kind: "text", text: "Out of time: echo said kept." }
        : { kind: "stall" };
    const { events } = await turn(second, {
      message: "and now?",
      sessionId: sessionIdOf(before.stream),
      provider: "anthropic",
    });
    expect(events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "timeout" });
    expect(
      ofType(events, "text_delta")
        .map((event) => event.text)
        .join(""),
    ).toBe("Out of time: echo said kept.");
    const final = fakes.anthropic.accepted.at(-1)?.body as {
      tools?: { name: string }[];
      tool_choice?: unknown;
    };
    expect(final.tool_choice).toEqual({ type: "none" });
    expect(final.tools?.map((tool) => tool.name)).toContain("echo");
  });

  // The SDKs end their iteration without an error when the body ends early: the engines must notice
  it.each<[string, "anthropic" | "openai", FakeReply, string]>([
    [
      "Anthropic's, mid text",
      "anthropic",
      { kind: "text", text: "Half of an answer", cutAt: "text" },
      "message_stop",
    ],
    [
      "Anthropic's, mid a call's arguments",
      "anthropic",
      {
        kind: "tools",
        text: "Let me echo.",
        calls: [{ name: "echo", input: { text: "never run" } }],
        cutAt: "arguments",
      },
      "message_stop",
    ],
    [
      "OpenAI's, mid text",
      "openai",
      { kind: "text", text: "Half of an answer", cutAt: "text" },
      "choice with a finish_reason",
    ],
    [
      "OpenAI's, mid a call's arguments",
      "openai",
      {
        kind: "tools",
        text: "Let me echo.",
        calls: [{ name: "echo", input: { text: "never run" } }],
        cutAt: "arguments",
      },
      "choice with a finish_reason",
    ],
  ])(
    "ends the turn with model_error when a stream ends cleanly before its end (%s): no tool runs, no answer is stored",
    async (_case, provider, reply, endMarker) => {
      const server = await start();
      fakes[provider].enqueue(reply);
      const { stream, events } = await turn(server, { message: "go", provider });
      expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "error" });
      expect(ofType(events, "error")).toEqual([
        expect.objectContaining({
          code: "model_error",
          message: `${provider} request failed: the stream ended before its end (no ${endMarker})`,
        }),
      ]);
      expect(ofType(events, "tool_start")).toEqual([]);
      expect(ofType(events, "tool_result")).toEqual([]);
      // output had reached the client, so the request was not retried
      expect(ofType(events, "text_delta").length).toBeGreaterThan(0);
      expect(fakes[provider].requests).toHaveLength(1);
      const blocks = await history(server, sessionIdOf(stream));
      expect(
        blocks.map((block) => (block.kind === "text" ? `${block.role}: ${block.text}` : block.kind)),
      ).toEqual(["user: go"]);
    },
  );

  it("renders a session's transcript with the model its next turn uses: its agent's, or the one asked for", async () => {
    const directory = mkdtempSync(join(tmpdir(), "reins-transcript-model-"));
    const agentsFile = join(directory, "agents.json");
    writeFileSync(
      agentsFile,
      JSON.stringify({
        agents: { opus: { provider: "anthropic", model: "claude-opus-x", tools: ["echo"] } },
      }),
    );
    const server = await startServer({
      env: { ...providerEnv(fakes), AGENTS_FILE: agentsFile, ANTHROPIC_THINKING_BUDGET_TOKENS: "1024" },
    });
    servers.push(server);
    rmSync(directory, { recursive: true, force: true });
    fakes.anthropic.enqueue(
      {
        kind: "tools",
        thinking: { text: "Echo it.", signature: "sig-opus" },
        calls: [{ name: "echo", input: { text: "hi" } }],
      },
      { kind: "text", text: "Done." },
    );
    const { stream } = await turn(server, { message: "go", agentId: "opus" });
    expect(fakes.anthropic.accepted[0]?.body.model).toBe("claude-opus-x");
    type Transcript = {
      messages: { role: string; content: { type: string }[] }[];
      diagnostics: { droppedThinking: { reason: string }[] };
    };
    const transcript = async (query: string) => {
      const url = `${server.baseUrl}/api/sessions/${sessionIdOf(stream)}/transcript?provider=anthropic${query}`;
      const response = await fetch(url);
      expect(response.status).toBe(200);
      return (await response.json()) as Transcript;
    };
    const firstParts = (transcript: Transcript) =>
      transcript.messages.find((message) => message.role === "assistant")?.content[0]?.type;

    // the agent's model made the thinking, and the session's next turn uses that model: it is kept
    expect(firstParts(await transcript(""))).toBe("thinking");
    expect(firstParts(await transcript("&model=claude-opus-x"))).toBe("thinking");
    // a turn naming another model would not be sent it
    const other = await transcript("&model=claude-other");
    expect(firstParts(other)).toBe("tool_use");
    expect(other.diagnostics.droppedThinking).toEqual([expect.objectContaining({ reason: "other_model" })]);
  });

  it("aborting a turn aborts the provider's HTTP request", async () => {
    const server = await start();
    fakes.kimi.enqueue({ kind: "stall" });
    const stream = await SseStream.start(server.baseUrl, { message: "think forever", provider: "kimi" });
    await stream.next((event) => event.type === "turn_start");
    await eventually(() => {
      if (fakes.kimi.requests.length === 0) throw new Error("the provider has no request yet");
    });
    await fetch(`${server.baseUrl}/api/turns/${turnIdOf(stream)}/abort`, { method: "POST" });
    expect((await stream.untilEnd()).at(-1)).toMatchObject({ type: "turn_abort", reason: "user" });
    await eventually(() => expect(fakes.kimi.abandoned).toBe(1));
  });

  it("sends Kimi with thinking on the reasoning_content of every assistant message with tool calls, its own and another provider's", async () => {
    const thinkingKimi = await FakeProvider.start("kimi", { thinking: true });
    const directory = mkdtempSync(join(tmpdir(), "reins-kimi-thinking-"));
    const configFile = join(directory, "config.json");
    writeFileSync(configFile, JSON.stringify({ providers: { kimi: { thinking: true } } }));
    try {
      const server = await startServer({
        env: { ...providerEnv(fakes), KIMI_BASE_URL: thinkingKimi.baseUrl, CONFIG_FILE: configFile },
      });
      servers.push(server);
      fakes.openai.enqueue(
        { kind: "tools", calls: [{ name: "echo", input: { text: "first" } }] },
        { kind: "text", text: "Echoed on openai." },
      );
      const first = await turn(server, { message: "echo on openai", provider: "openai" });
      expect(first.events.at(-1)).toMatchObject({ type: "turn_complete" });
      const sessionId = sessionIdOf(first.stream);

      thinkingKimi.enqueue(
        {
          kind: "tools",
          reasoning: "I should echo it again.",
          calls: [{ name: "echo", input: { text: "again" } }],
        },
        { kind: "text", text: "Echoed on kimi." },
      );
      const second = await turn(server, { message: "now on kimi", sessionId, provider: "kimi" });
      expect(second.events.at(-1)).toMatchObject({ type: "turn_complete" });
      expect(
        ofType(second.events, "thinking_delta")
          .map((event) => event.text)
          .join(""),
      ).toBe("I should echo it again.");
      expect(thinkingKimi.requests.map((request) => request.rejection)).toEqual([null, null]);
      type Sent = { role: string; tool_calls?: unknown[]; reasoning_content?: string };
      const withCalls = (thinkingKimi.accepted[1]?.body.messages as Sent[]).filter(
        (message) => message.role === "assistant" && message.tool_calls !== undefined,
      );
      // openai's call had no thinking: Kimi still gets the field, empty
      expect(withCalls.map((message) => message.reasoning_content)).toEqual(["", "I should echo it again."]);
      const thinking = (await history(server, sessionId)).filter((block) => block.kind === "thinking");
      expect(thinking).toEqual([
        expect.objectContaining({ text: "I should echo it again.", provider: "kimi" }),
      ]);
    } finally {
      await thinkingKimi.close();
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("keeps Anthropic's signed thinking for Anthropic and drops it for OpenAI", async () => {
    const server = await startServer({
      env: { ...providerEnv(fakes), ANTHROPIC_THINKING_BUDGET_TOKENS: "1024" },
    });
    servers.push(server);
    fakes.anthropic.enqueue(
      {
        kind: "tools",
        thinking: { text: "I should echo.", signature: "sig-from-anthropic" },
        calls: [{ name: "echo", input: { text: "thought" } }],
      },
      { kind: "text", text: "Done thinking." },
    );
    const first = await turn(server, { message: "think, then act", provider: "anthropic" });
    expect(first.events.at(-1)).toMatchObject({ type: "turn_complete" });
    expect(ofType(first.events, "thinking_delta").map((event) => event.text)).toEqual(["I should echo."]);

    // the follow-up request of the same turn starts the answered assistant message with the signed block
    const followUp = fakes.anthropic.accepted[1]?.body as {
      thinking?: unknown;
      messages: { role: string; content: { type: string; signature?: string }[] }[];
    };
    expect(followUp.thinking).toEqual({ type: "enabled", budget_tokens: 1024 });
    const assistant = followUp.messages.find((message) => message.role === "assistant");
    expect(assistant?.content[0]).toEqual({
      type: "thinking",
      thinking: "I should echo.",
      signature: "sig-from-anthropic",
    });

    fakes.openai.enqueue({ kind: "text", text: "No thinking here." });
    await turn(server, { message: "and now?", sessionId: sessionIdOf(first.stream), provider: "openai" });
    expect(JSON.stringify(fakes.openai.accepted[0]?.body.messages)).not.toContain("I should echo.");
  });

  it("passes every thinking block of a response back to Anthropic unchanged and in order, a redacted one too, and keeps none for the others", async () => {
    const server = await startServer({
      env: { ...providerEnv(fakes), ANTHROPIC_THINKING_BUDGET_TOKENS: "1024" },
    });
    servers.push(server);
    fakes.anthropic.enqueue(
      {
        kind: "tools",
        thinking: [
          { text: "one", signature: "S-one" },
          { text: "two", signature: "S-two" },
          { redacted: "ENCRYPTED-DATA" },
        ],
        calls: [{ name: "echo", input: { text: "x" } }],
      },
      { kind: "text", text: "Done." },
    );
    const first = await turn(server, { message: "think twice, then act", provider: "anthropic" });
    expect(first.events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "end_turn" });
    // the redacted block has no text to show
    expect(
      ofType(first.events, "thinking_delta")
        .map((event) => event.text)
        .join(""),
    ).toBe("onetwo");

    // the follow-up request carries the three blocks as they came, and Anthropic accepts it
    expect(fakes.anthropic.requests.map((request) => request.rejection)).toEqual([null, null]);
    const followUp = fakes.anthropic.accepted[1]?.body as {
      messages: { role: string; content: { type: string }[] }[];
    };
    const assistant = followUp.messages.find((message) => message.role === "assistant");
    expect(assistant?.content).toEqual([
      { type: "thinking", thinking: "one", signature: "S-one" },
      { type: "thinking", thinking: "two", signature: "S-two" },
      { type: "redacted_thinking", data: "ENCRYPTED-DATA" },
      expect.objectContaining({ type: "tool_use", name: "echo", input: { text: "x" } }),
    ]);

    const sessionId = sessionIdOf(first.stream);
    const start = ofType(first.events, "turn_start")[0];
    const origin = { provider: "anthropic", model: start?.model };
    const thinking = (await history(server, sessionId)).filter((block) => block.kind === "thinking");
    expect(thinking).toEqual([
      expect.objectContaining({ text: "one", signature: "S-one", ...origin }),
      expect.objectContaining({ text: "two", signature: "S-two", ...origin }),
      expect.objectContaining({ text: "", redacted: "ENCRYPTED-DATA", ...origin }),
    ]);

    for (const provider of ["openai", "kimi", "mistral"] as const) {
      fakes[provider].enqueue({ kind: "text", text: `On ${provider}.` });
      const next = await turn(server, { message: `and on ${provider}?`, sessionId, provider });
      expect(next.events.at(-1), provider).toMatchObject({ type: "turn_complete" });
      const sent = JSON.stringify(fakes[provider].accepted.at(-1)?.body.messages);
      expect(sent, provider).not.toContain("ENCRYPTED-DATA");
      expect(sent, provider).not.toContain("redacted");
    }
  });
});
