/**
 * The AI SDK's useChat against reins (docs/http-api.md#chat-routes-ai-sdk-usechat): the real `ai` package is
 * the client — its `DefaultChatTransport` posts to the real server on a real socket, validates every chunk
 * with its own `uiMessageChunkSchema` (an invalid chunk fails the stream), and `readUIMessageStream`
 * assembles the assistant message the way useChat does. Text, tools (several inferences), a failing tool,
 * approval, stop, resume (and 204 when idle), a chat that goes on, another principal's 404, and bad bodies.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AbstractChat,
  DefaultChatTransport,
  readUIMessageStream,
  safeValidateUIMessages,
  type ChatState,
  type ChatStatus,
  type UIMessage,
  type UIMessageChunk,
} from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../helpers/eventually.js";
import { startServer, type ServerHandle } from "../helpers/server.js";

const ALICE = "alice-token-0001";
const BOB = "bob-token-000002";
const WAIT_MS = 15_000;

const headersOf = (token: string) => ({
  "content-type": "application/json",
  authorization: `Bearer ${token}`,
});

/** A chunk stream as it arrives: every chunk kept, `until(predicate)` waits for one. */
class ChunkLog {
  readonly chunks: UIMessageChunk[] = [];
  readonly message: Promise<UIMessage | undefined>;
  private readonly waiters = new Set<() => void>();
  private ended = false;

  constructor(stream: ReadableStream<UIMessageChunk>) {
    const [forLog, forMessage] = stream.tee();
    void (async () => {
      const reader = forLog.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          this.chunks.push(value);
          this.wake();
        }
      } finally {
        this.ended = true;
        this.wake();
      }
    })();
    this.message = (async () => {
      let message: UIMessage | undefined;
      // terminateOnError: a chunk the reader cannot place fails the test instead of being skipped
      for await (const snapshot of readUIMessageStream({ stream: forMessage, terminateOnError: true })) {
        message = snapshot;
      }
      return message;
    })();
  }

  /** Waits for a chunk that satisfies `predicate`. */
  async until(predicate: (chunk: UIMessageChunk) => boolean): Promise<UIMessageChunk> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const found = this.chunks.find(predicate);
      if (found) return found;
      if (this.ended) throw new Error(`stream ended without it: ${JSON.stringify(this.chunks)}`);
      if (Date.now() > deadline) throw new Error(`timed out; got ${JSON.stringify(this.chunks)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 200);
        this.waiters.add(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The assembled message once the stream ended. */
  async end(): Promise<UIMessage> {
    const message = await this.message;
    if (!message) throw new Error("no message");
    return message;
  }

  types(): string[] {
    return this.chunks.map((chunk) => chunk.type);
  }

  private wake(): void {
    for (const waiter of this.waiters) waiter();
    this.waiters.clear();
  }
}

const userMessage = (text: string): UIMessage => ({
  id: `msg-${Math.random().toString(36).slice(2)}`,
  role: "user",
  parts: [{ type: "text", text }],
});

/** The parts a person sees, without provider details. */
const visibleParts = (message: UIMessage) =>
  message.parts.map((part) => {
    if (part.type === "step-start") return { type: part.type };
    if (part.type === "text") return { type: part.type, text: part.text };
    if (part.type === "dynamic-tool") {
      return {
        type: part.type,
        toolName: part.toolName,
        state: part.state,
        input: part.input,
        ...(part.state === "output-available" ? { output: part.output } : {}),
        ...(part.state === "output-error" ? { errorText: part.errorText } : {}),
      };
    }
    return { type: part.type };
  });

/** What `@ai-sdk/react`'s `Chat` keeps in React state, kept in plain fields: useChat without React. */
class MemoryChatState implements ChatState<UIMessage> {
  status: ChatStatus = "ready";
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (message: UIMessage) => void (this.messages = this.messages.concat(message));
  popMessage = () => void (this.messages = this.messages.slice(0, -1));
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = [
      ...this.messages.slice(0, index),
      structuredClone(message),
      ...this.messages.slice(index + 1),
    ];
  };
  snapshot = <T>(value: T): T => structuredClone(value);
}

class MemoryChat extends AbstractChat<UIMessage> {
  constructor(init: { id: string; transport: DefaultChatTransport<UIMessage> }) {
    super({ ...init, state: new MemoryChatState() });
  }
}

describe("POST /api/chat (AI SDK UI message stream)", () => {
  let server: ServerHandle;
  let configDir: string;
  let chatCount = 0;
  const newChatId = () => `chat-${process.pid}-${++chatCount}`;

  beforeAll(async () => {
    configDir = mkdtempSync(join(tmpdir(), "reins-ai-sdk-"));
    const configFile = join(configDir, "config.json");
    writeFileSync(
      configFile,
      JSON.stringify({
        agents: {
          plain: { tools: ["*"] },
          careful: { tools: ["*"], approval: { echo: "always", "*": "never" } },
        },
        defaultAgent: "plain",
      }),
    );
    server = await startServer({
      env: { CONFIG_FILE: configFile, AUTH_TOKENS: `alice:${ALICE},bob:${BOB}` },
    });
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
    rmSync(configDir, { recursive: true, force: true });
  });

  const transportOf = (token = ALICE, body?: Record<string, unknown>) =>
    new DefaultChatTransport({
      api: `${server.baseUrl}/api/chat`,
      headers: { authorization: `Bearer ${token}` },
      body,
    });

  async function send(chatId: string, text: string, options: { token?: string; agentId?: string } = {}) {
    const transport = transportOf(options.token, options.agentId ? { agentId: options.agentId } : undefined);
    const stream = await transport.sendMessages({
      chatId,
      messages: [userMessage(text)],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
    });
    return new ChunkLog(stream);
  }

  const post = (path: string, body: unknown, token = ALICE) =>
    fetch(`${server.baseUrl}${path}`, {
      method: "POST",
      headers: headersOf(token),
      body: JSON.stringify(body),
    });

  it("a text turn: protocol header, start with the turn, one step of text, finish, [DONE]", async () => {
    const chatId = newChatId();
    const response = await post("/api/chat", {
      id: chatId,
      messages: [userMessage("hello there")],
      trigger: "submit-message",
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("content-security-policy")).toBe("frame-ancestors 'none'");
    const raw = await response.text();
    expect(raw.trimEnd().endsWith("data: [DONE]")).toBe(true);

    const openapi = (await (await fetch(`${server.baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    expect(Object.keys(openapi.paths["/api/chat"] ?? {})).toEqual(["post"]);
    expect(Object.keys(openapi.paths["/api/chat/{id}/stream"] ?? {})).toEqual(["get"]);
    expect(Object.keys(openapi.paths["/api/chat/{id}/stop"] ?? {})).toEqual(["post"]);

    const log = await send(newChatId(), "hello there");
    const message = await log.end();
    expect(log.types()).toEqual([
      "start",
      "start-step",
      "text-start",
      ...log.chunks.filter((chunk) => chunk.type === "text-delta").map(() => "text-delta"),
      "text-end",
      "finish-step",
      "finish",
    ]);
    expect(log.chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
    expect(visibleParts(message)).toEqual([
      { type: "step-start" },
      { type: "text", text: "You said: hello there" },
    ]);
    const metadata = message.metadata as { turnId: string; sessionId: string };
    expect(message.id).toBe(metadata.turnId);
    expect(metadata.sessionId).toMatch(/^chat-/);
  });

  it("a tool turn over several inferences: each call with its input and output, one step per inference", async () => {
    const log = await send(
      newChatId(),
      ['/tool echo {"text":"first"}', "/then", '/tool echo {"text":"second"}'].join("\n"),
    );
    const message = await log.end();
    expect(visibleParts(message)).toEqual([
      { type: "step-start" },
      {
        type: "dynamic-tool",
        toolName: "echo",
        state: "output-available",
        input: { text: "first" },
        output: "first",
      },
      { type: "step-start" },
      {
        type: "dynamic-tool",
        toolName: "echo",
        state: "output-available",
        input: { text: "second" },
        output: "second",
      },
      { type: "step-start" },
      { type: "text", text: "echo: first\necho: second" },
    ]);
    expect(log.types().filter((type) => type === "finish-step")).toHaveLength(3);
  });

  it("two calls of one response stay in one step", async () => {
    const log = await send(newChatId(), ['/tool echo {"text":"a"}', '/tool echo {"text":"b"}'].join("\n"));
    const message = await log.end();
    expect(visibleParts(message).map((part) => part.type)).toEqual([
      "step-start",
      "dynamic-tool",
      "dynamic-tool",
      "step-start",
      "text",
    ]);
  });

  it("a failing tool is an output error with the tool's message", async () => {
    const log = await send(newChatId(), '/tool flaky {"failures":5,"kind":"permanent"}');
    const message = await log.end();
    const tool = visibleParts(message).find((part) => part.type === "dynamic-tool");
    expect(tool).toMatchObject({
      toolName: "flaky",
      state: "output-error",
      input: { failures: 5, kind: "permanent" },
    });
    expect(tool?.errorText).toMatch(/flaky/);
  });

  it("POST /api/chat/:id/stop aborts the running turn: abort part with the reason, the call cancelled", async () => {
    const chatId = newChatId();
    const log = await send(chatId, '/tool sleep {"ms":600000,"heartbeatMs":20}');
    // tool_progress is a transient data part: seen by onData, never part of the message
    const progress = await log.until((chunk) => chunk.type === "data-tool-progress");
    expect(progress).toMatchObject({ transient: true, data: { toolName: "sleep" } });
    const stop = await post(`/api/chat/${chatId}/stop`, {});
    expect(stop.status).toBe(200);
    expect(await stop.json()).toMatchObject({ ok: true, sessionId: chatId });
    const message = await log.end();
    expect(log.chunks.at(-1)).toEqual({ type: "abort", reason: "user" });
    expect(visibleParts(message)[1]).toMatchObject({ toolName: "sleep", state: "output-error" });
    expect(message.parts.map((part) => part.type)).not.toContain("data-tool-progress");
    // nothing runs any more
    const again = await post(`/api/chat/${chatId}/stop`, {});
    expect(again.status).toBe(404);
  });

  it("GET /api/chat/:id/stream resumes the running turn from its start, and is 204 once it ended", async () => {
    const chatId = newChatId();
    const log = await send(chatId, 'Working on it\n/tool sleep {"ms":600000}');
    await log.until((chunk) => chunk.type === "tool-input-available");

    const resumed = await transportOf().reconnectToStream({ chatId });
    if (!resumed) throw new Error("expected a stream for a running turn");
    const resumedLog = new ChunkLog(resumed);
    await resumedLog.until((chunk) => chunk.type === "tool-input-available");
    expect(resumedLog.chunks[0]).toMatchObject({
      type: "start",
      messageId: log.chunks[0]?.["messageId" as never],
    });

    expect((await post(`/api/chat/${chatId}/stop`, {})).status).toBe(200);
    const [original, replayed] = await Promise.all([log.end(), resumedLog.end()]);
    expect(replayed).toEqual(original);
    expect(visibleParts(replayed).slice(0, 2)).toEqual([
      { type: "step-start" },
      { type: "text", text: "Working on it" },
    ]);

    expect(await transportOf().reconnectToStream({ chatId })).toBeNull();
    const idle = await fetch(`${server.baseUrl}/api/chat/${chatId}/stream`, { headers: headersOf(ALICE) });
    expect(idle.status).toBe(204);
    // useChat's `resume: true` asks on mount, before the first message makes the chat: nothing, no error
    expect(await transportOf().reconnectToStream({ chatId: newChatId() })).toBeNull();
  });

  it("a second message on the same chat id continues the session", async () => {
    const chatId = newChatId();
    await (await send(chatId, "first message")).end();
    const second = await (await send(chatId, "second message")).end();
    expect(visibleParts(second)[1]).toEqual({ type: "text", text: "You said: second message" });
    const session = await fetch(`${server.baseUrl}/api/sessions/${chatId}`, { headers: headersOf(ALICE) });
    expect(session.status).toBe(200);
    expect(await session.json()).toMatchObject({ sessionId: chatId, turnCount: 2, running: false });
    const history = (await (
      await fetch(`${server.baseUrl}/api/sessions/${chatId}/history`, { headers: headersOf(ALICE) })
    ).json()) as { blocks: { role: string; text?: string }[] };
    expect(history.blocks.filter((block) => block.role === "user").map((block) => block.text)).toEqual([
      "first message",
      "second message",
    ]);
  });

  it("a long chat goes on when the transport sends only the newest message, as the README says", async () => {
    const chatId = newChatId();
    // under the 200,000-character limit, but 3 bytes a character: the answer echoes it, and the two
    // together are past BODY_LIMIT_BYTES (1 MiB) once useChat posts the whole history
    const long = "長".repeat(180_000);
    const first = await (await send(chatId, long)).end();
    const history = [userMessage(long), first, userMessage("short follow-up")];
    const sendHistory = (transport: DefaultChatTransport<UIMessage>) =>
      transport.sendMessages({
        chatId,
        messages: history,
        trigger: "submit-message",
        messageId: undefined,
        abortSignal: undefined,
      });

    // the default transport posts every message: refused for its size, the chat stuck
    await expect(sendHistory(transportOf())).rejects.toThrow(/body_too_large/);
    const newestOnly = new DefaultChatTransport<UIMessage>({
      api: `${server.baseUrl}/api/chat`,
      headers: { authorization: `Bearer ${ALICE}` },
      prepareSendMessagesRequest: ({ id, messages, body, trigger, messageId }) => ({
        body: { ...body, id, messages: messages.slice(-1), trigger, messageId },
      }),
    });
    const second = await new ChunkLog(await sendHistory(newestOnly)).end();
    expect(visibleParts(second)[1]).toEqual({ type: "text", text: "You said: short follow-up" });
  }, 60_000);

  it("another principal's chat answers like an unknown one on every route (404; resume 204)", async () => {
    const chatId = newChatId();
    const log = await send(chatId, '/tool sleep {"ms":600000}');
    await log.until((chunk) => chunk.type === "tool-input-available");

    const taken = await post(
      "/api/chat",
      { id: chatId, messages: [userMessage("mine now")], trigger: "submit-message" },
      BOB,
    );
    expect(taken.status).toBe(404);
    expect(await taken.json()).toMatchObject({ code: "session_not_found" });
    // resume: no turn of bob's runs there, as in a chat not made yet (useChat asks on mount)
    const resume = await fetch(`${server.baseUrl}/api/chat/${chatId}/stream`, { headers: headersOf(BOB) });
    expect(resume.status).toBe(204);
    expect((await post(`/api/chat/${chatId}/stop`, {}, BOB)).status).toBe(404);
    const unknown = await fetch(`${server.baseUrl}/api/chat/no-such-chat/stream`, {
      headers: headersOf(BOB),
    });
    expect(unknown.status).toBe(204);

    // alice's turn was left alone; her second message while it runs is 409
    const busy = await post("/api/chat", {
      id: chatId,
      messages: [userMessage("again")],
      trigger: "submit-message",
    });
    expect(busy.status).toBe(409);
    expect((await post(`/api/chat/${chatId}/stop`, {})).status).toBe(200);
    expect((await log.end()).parts.length).toBeGreaterThan(0);
  });

  it("an approval request is the protocol's tool-approval-request; approving runs the call", async () => {
    const log = await send(newChatId(), '/tool echo {"text":"careful"}', { agentId: "careful" });
    const request = await log.until((chunk) => chunk.type === "tool-approval-request");
    const start = log.chunks[0] as { messageMetadata: { turnId: string } };
    const toolCallId = (request as { toolCallId: string }).toolCallId;
    const decided = await post(`/api/turns/${start.messageMetadata.turnId}/tools/${toolCallId}/approval`, {
      decision: "approve",
    });
    expect(decided.status).toBe(200);
    const message = await log.end();
    expect(visibleParts(message)[1]).toEqual({
      type: "dynamic-tool",
      toolName: "echo",
      state: "output-available",
      input: { text: "careful" },
      output: "careful",
    });
    expect(message.parts[1]).toMatchObject({ approval: { id: toolCallId } });
  });

  it.each([
    ["approve", true, "output-available"],
    ["reject", false, "output-denied"],
  ] as const)(
    "useChat records a decision (%s) with addToolApprovalResponse next to the HTTP one: the message stays valid",
    async (decision, approved, finalState) => {
      const chat = new MemoryChat({ id: newChatId(), transport: transportOf(ALICE, { agentId: "careful" }) });
      const sent = chat.sendMessage({ text: '/tool echo {"text":"careful"}' });
      const toolPart = () => chat.lastMessage?.parts.find((part) => part.type === "dynamic-tool");
      await eventually(() => expect(toolPart()).toMatchObject({ state: "approval-requested" }), 15_000);
      const part = toolPart() as { toolCallId: string; approval: { id: string } };
      const turnId = (chat.lastMessage?.metadata as { turnId: string }).turnId;
      // as docs/http-api.md says: first on the client (no request while the stream is open), then over HTTP
      await chat.addToolApprovalResponse({ id: part.approval.id, approved });
      const decided = await post(`/api/turns/${turnId}/tools/${part.toolCallId}/approval`, {
        decision,
        ...(decision === "reject" ? { reason: "not today" } : {}),
      });
      expect(decided.status).toBe(200);
      await sent;
      expect(chat.status).toBe("ready");
      expect(toolPart()).toMatchObject({ state: finalState, approval: { id: part.approval.id, approved } });
      // what an app's store of chats checks when it loads one again
      const validated = await safeValidateUIMessages({ messages: chat.messages });
      expect(validated.success, JSON.stringify(validated.success ? {} : validated.error)).toBe(true);
    },
  );

  it("a delegated turn's approval request is a transient data part with its child turn; approving runs the call", async () => {
    const delegation = { agentId: "careful", message: '/tool echo {"text":"from the child"}' };
    const log = await send(newChatId(), `/tool delegate ${JSON.stringify(delegation)}`, {
      agentId: "careful",
    });
    const request = (await log.until((chunk) => chunk.type === "data-tool-approval-request")) as {
      data: { turnId: string; toolCallId: string; toolName: string; childTurnId: string; input: unknown };
    };
    expect(request.data).toMatchObject({ toolName: "echo", input: { text: "from the child" } });
    expect(request.data.childTurnId).not.toBe(request.data.turnId);
    // the child's call is no call of this message: no approval part for it
    expect(log.types()).not.toContain("tool-approval-request");
    const decided = await post(
      `/api/turns/${request.data.turnId}/tools/${request.data.toolCallId}/approval`,
      {
        decision: "approve",
      },
    );
    expect(decided.status).toBe(200);
    const message = await log.end();
    const tools = visibleParts(message).filter((part) => part.type === "dynamic-tool");
    expect(tools).toEqual([expect.objectContaining({ toolName: "delegate", state: "output-available" })]);
    expect(JSON.stringify(tools[0])).toContain("from the child");
  });

  it.each([
    [{ messages: [userMessage("hi")], trigger: "submit-message" }, "body.id"],
    [{ id: "../etc", messages: [userMessage("hi")], trigger: "submit-message" }, "body.id"],
    [{ id: "x".repeat(65), messages: [userMessage("hi")], trigger: "submit-message" }, "body.id"],
    [{ id: "ok-id", messages: [], trigger: "submit-message" }, "body.messages"],
    [{ id: "ok-id", messages: [userMessage("hi")] }, "body.trigger"],
    [{ id: "ok-id", messages: [userMessage("hi")], trigger: "regenerate-message" }, "body.trigger"],
    // useChat's edit of an earlier message: the server's history would no longer be the client's
    [
      { id: "ok-id", messages: [userMessage("hi")], trigger: "submit-message", messageId: "msg-1" },
      "body.messageId",
    ],
    // what the AI SDK's approval round trip posts: it would run the previous user message again
    [
      {
        id: "ok-id",
        messages: [userMessage("hi"), { id: "a", role: "assistant", parts: [{ type: "text", text: "ok" }] }],
        trigger: "submit-message",
      },
      "body.messages",
    ],
    [
      {
        id: "ok-id",
        messages: [{ id: "m", role: "user", parts: [{ type: "file" }] }],
        trigger: "submit-message",
      },
      "body.messages",
    ],
  ])("a bad body is a 400 naming the field (%j)", async (body, field) => {
    const response = await post("/api/chat", body);
    expect(response.status).toBe(400);
    const problem = (await response.json()) as { error: string; issues: { path: string }[] };
    expect(problem.issues.map((issue) => issue.path)).toContain(field);
    expect(problem.error).toContain(field);
  });
});
