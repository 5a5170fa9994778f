/**
 * Wire-compatible fake provider servers for tests, on loopback: an Anthropic Messages endpoint
 * (`POST /v1/messages`, SSE events, no [DONE]) and an OpenAI Chat Completions endpoint
 * (`POST /v1/chat/completions`, `data:` chunks ending in `[DONE]`) with the OpenAI, Kimi and Mistral
 * profiles. Every request is checked against docs/providers.md (provider-rules.ts) and rejected with the
 * provider's real status and error body if it breaks a rule; otherwise the next queued reply is
 * streamed: text, tool calls (ids in the provider's own format — Kimi's reused every turn), Anthropic
 * thinking (signed blocks and redacted ones, each a block of its own), an HTTP error, a stream that
 * stalls until the client goes away, or one that ends cleanly before its end (`cutAt`). An Anthropic
 * request whose messages hold `tool_use` or `tool_result` blocks must define `tools`.
 *
 * Token usage is reported as each real API does: Anthropic in `message_start` (input) and
 * `message_delta` (output, cumulative); OpenAI only when asked with `stream_options.include_usage`, in a
 * last chunk with no choices (and `usage: null` on the others; the option without `stream` is a 400);
 * Mistral unasked on its last chunk; Kimi inside the last chunk's choice. A reply may fix the counts
 * (`usage`); otherwise input is the request's JSON length / 4 and output one token per streamed word.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ProfileName } from "../../src/history/render/index.js";
import {
  checkAnthropicBodyText,
  checkProviderMessages,
  type Json,
  type ProviderRejection,
} from "./provider-rules.js";

export type FakeToolCall = { name: string; input: Record<string, unknown> };

/** A thinking block of an Anthropic reply: signed text, or a redacted block's opaque data. */
export type FakeThinking = { text: string; signature: string } | { redacted: string };

/** Token counts a reply reports (as the provider would have counted them). */
export type FakeUsage = { input: number; output: number };

/**
 * Where a reply's stream ends cleanly before its end (no `message_stop`; no `finish_reason` and no
 * `[DONE]`): after the text's first word, or after the first half of the first call's arguments.
 */
export type FakeCut = "text" | "arguments";

export type FakeReply =
  | { kind: "text"; text: string; usage?: FakeUsage; cutAt?: FakeCut }
  | {
      kind: "tools";
      calls: FakeToolCall[];
      text?: string;
      /** Streamed before the text and calls, block by block, in this order. */
      thinking?: FakeThinking | readonly FakeThinking[];
      /** Kimi's `reasoning_content`, streamed in two deltas before the text and calls. */
      reasoning?: string;
      usage?: FakeUsage;
      cutAt?: FakeCut;
    }
  | { kind: "error"; status: number; message: string }
  | { kind: "stall" };

export type RecordedRequest = { body: Record<string, unknown>; rejection: ProviderRejection | null };

export class FakeProvider {
  readonly requests: RecordedRequest[] = [];
  /** Streams the client abandoned before they ended. */
  abandoned = 0;
  /**
   * While set, chooses each reply by the request, ahead of the queue: for requests whose order a test
   * cannot know (after a turn's deadline, the final inference may come first on a slow machine).
   */
  respond: ((body: Record<string, unknown>) => FakeReply) | undefined;
  private readonly replies: FakeReply[] = [];
  /**
   * What this fake's thinking was, as Anthropic checks it: each signature with the text and model it
   * signs, each redacted block's data with its model, and each response's thinking blocks (as
   * streamed) by the ids of its calls. A signature from anywhere else, or on other text or for another
   * model, is rejected; so is the latest assistant message when its thinking is not what was sent.
   */
  private readonly issued = {
    signatures: new Map<string, { text: string; model: unknown }>(),
    redacted: new Map<string, unknown>(),
    thinkingByCall: new Map<string, Json[]>(),
  };
  private server!: Server;
  private port = 0;
  private responseCounter = 0;

  /**
   * `thinking`: Kimi's thinking is the model's, not the request's, so a fake Kimi is told: with it on,
   * every assistant message with tool calls must carry its `reasoning_content`.
   */
  private constructor(
    readonly profile: ProfileName,
    private readonly thinking: boolean,
  ) {}

  static async start(profile: ProfileName, options: { thinking?: boolean } = {}): Promise<FakeProvider> {
    const fake = new FakeProvider(profile, profile === "kimi" && options.thinking === true);
    fake.server = createServer((request, response) => void fake.handle(request, response));
    await new Promise<void>((resolve) => fake.server.listen(0, "127.0.0.1", resolve));
    fake.port = (fake.server.address() as AddressInfo).port;
    return fake;
  }

  /** The base URL the SDK is pointed at (the Anthropic SDK appends /v1/messages; OpenAI's /chat/completions). */
  get baseUrl(): string {
    return this.profile === "anthropic"
      ? `http://127.0.0.1:${this.port}`
      : `http://127.0.0.1:${this.port}/v1`;
  }

  enqueue(...replies: FakeReply[]): this {
    this.replies.push(...replies);
    return this;
  }

  /** Requests that passed validation and were answered. */
  get accepted(): RecordedRequest[] {
    return this.requests.filter((request) => request.rejection === null);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const expected = this.profile === "anthropic" ? "/v1/messages" : "/v1/chat/completions";
    if (request.method !== "POST" || request.url?.split("?")[0] !== expected) {
      response
        .writeHead(404, { "content-type": "application/json" })
        .end(JSON.stringify({ error: { message: "not found" } }));
      return;
    }
    let text = "";
    for await (const chunk of request) text += chunk;
    const body = JSON.parse(text) as Record<string, unknown>;
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const bodyRejection = this.profile === "anthropic" ? checkAnthropicBodyText(body) : null;
    const rejection =
      bodyRejection ??
      checkProviderMessages(this.profile, messages, {
        thinking: this.profile === "anthropic" ? body.thinking !== undefined : this.thinking,
        acceptSignature: (signature, thinking) => {
          const issued = this.issued.signatures.get(signature);
          return issued?.text === thinking && issued.model === body.model;
        },
        acceptRedacted: (data) =>
          this.issued.redacted.has(data) && this.issued.redacted.get(data) === body.model,
        issuedThinking: (toolUseId) => this.issued.thinkingByCall.get(toolUseId),
        definesTools: Array.isArray(body.tools) && body.tools.length > 0,
      });
    const streamOptionsRejection =
      this.profile === "openai" && body.stream_options !== undefined && body.stream !== true
        ? {
            status: 400,
            body: {
              error: {
                message: "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                type: "invalid_request_error",
                param: "stream_options",
                code: null,
              },
            },
          }
        : null;
    this.requests.push({ body, rejection: rejection ?? streamOptionsRejection });
    if (streamOptionsRejection) {
      response
        .writeHead(streamOptionsRejection.status, { "content-type": "application/json" })
        .end(JSON.stringify(streamOptionsRejection.body));
      return;
    }
    if (rejection) {
      response
        .writeHead(rejection.status, { "content-type": "application/json" })
        .end(JSON.stringify(rejection.body));
      return;
    }
    const reply = this.respond?.(body) ?? this.replies.shift() ?? { kind: "text", text: "ok" };
    if (reply.kind === "error") {
      response
        .writeHead(reply.status, { "content-type": "application/json" })
        .end(JSON.stringify(this.errorBody(reply)));
      return;
    }
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    response.on("close", () => {
      if (!response.writableEnded) this.abandoned++;
    });
    this.responseCounter++;
    const usage =
      reply.kind === "stall" ? { input: 0, output: 0 } : (reply.usage ?? estimateUsage(text, reply));
    if (this.profile === "anthropic") this.streamAnthropic(response, reply, usage, body.model);
    else this.streamOpenAI(response, reply, usage, body);
  }

  private errorBody(reply: { status: number; message: string }): unknown {
    const type =
      reply.status === 429 ? "rate_limit_error" : reply.status >= 500 ? "api_error" : "invalid_request_error";
    if (this.profile === "anthropic") return { type: "error", error: { type, message: reply.message } };
    if (this.profile === "mistral")
      return { object: "error", message: reply.message, type, param: null, code: String(reply.status) };
    return { error: { message: reply.message, type, param: null, code: null } };
  }

  private streamAnthropic(
    response: ServerResponse,
    reply: Exclude<FakeReply, { kind: "error" }>,
    usage: FakeUsage,
    model: unknown,
  ): void {
    const send = (event: string, data: unknown) =>
      response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    send("message_start", {
      type: "message_start",
      message: {
        id: `msg_${this.responseCounter}`,
        type: "message",
        role: "assistant",
        model: "fake",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage.input, output_tokens: Math.min(1, usage.output) },
      },
    });
    send("ping", { type: "ping" });
    if (reply.kind === "stall") return;
    let index = 0;
    const thinking = reply.kind === "tools" && reply.thinking ? [reply.thinking].flat() : [];
    const sentThinking: Json[] = [];
    for (const block of thinking) {
      if ("redacted" in block) {
        // arrives whole in its start event, with no deltas
        this.issued.redacted.set(block.redacted, model);
        sentThinking.push({ type: "redacted_thinking", data: block.redacted });
        send("content_block_start", {
          type: "content_block_start",
          index,
          content_block: { type: "redacted_thinking", data: block.redacted },
        });
      } else {
        this.issued.signatures.set(block.signature, { text: block.text, model });
        sentThinking.push({ type: "thinking", thinking: block.text, signature: block.signature });
        send("content_block_start", {
          type: "content_block_start",
          index,
          content_block: { type: "thinking", thinking: "", signature: "" },
        });
        send("content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "thinking_delta", thinking: block.text },
        });
        // the signature comes last, at the end of its block
        send("content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "signature_delta", signature: block.signature },
        });
      }
      send("content_block_stop", { type: "content_block_stop", index });
      index++;
    }
    const text = reply.kind === "text" ? reply.text : reply.text;
    if (text) {
      send("content_block_start", {
        type: "content_block_start",
        index,
        content_block: { type: "text", text: "" },
      });
      for (const word of text.match(/\S+\s*/g) ?? []) {
        send("content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "text_delta", text: word },
        });
        if (reply.cutAt === "text") {
          response.end();
          return;
        }
      }
      send("content_block_stop", { type: "content_block_stop", index });
      index++;
    }
    const calls = reply.kind === "tools" ? reply.calls : [];
    for (const [position, call] of calls.entries()) {
      const id = `toolu_fake${this.responseCounter}x${position}`;
      this.issued.thinkingByCall.set(id, sentThinking);
      send("content_block_start", {
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id, name: call.name, input: {} },
      });
      const json = JSON.stringify(call.input);
      const middle = Math.floor(json.length / 2);
      for (const part of [json.slice(0, middle), json.slice(middle)]) {
        send("content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "input_json_delta", partial_json: part },
        });
        if (reply.cutAt === "arguments") {
          response.end();
          return;
        }
      }
      send("content_block_stop", { type: "content_block_stop", index });
      index++;
    }
    send("message_delta", {
      type: "message_delta",
      delta: { stop_reason: calls.length > 0 ? "tool_use" : "end_turn", stop_sequence: null },
      usage: { output_tokens: usage.output },
    });
    send("message_stop", { type: "message_stop" });
    response.end();
  }

  private streamOpenAI(
    response: ServerResponse,
    reply: Exclude<FakeReply, { kind: "error" }>,
    usage: FakeUsage,
    body: Record<string, unknown>,
  ): void {
    const id = `chatcmpl-${this.responseCounter}`;
    const counts = {
      prompt_tokens: usage.input,
      completion_tokens: usage.output,
      total_tokens: usage.input + usage.output,
    };
    const askedForUsage =
      this.profile === "openai" &&
      (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
    const write = (payload: Record<string, unknown>) =>
      response.write(
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: "fake", ...payload, ...(askedForUsage && payload.usage === undefined ? { usage: null } : {}) })}\n\n`,
      );
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => {
      const last = finish !== null;
      write({
        choices: [
          {
            index: 0,
            delta,
            finish_reason: finish,
            ...(last && this.profile === "kimi" ? { usage: counts } : {}),
          },
        ],
        ...(last && this.profile === "mistral" ? { usage: counts } : {}),
      });
    };
    chunk({ role: "assistant", content: "" });
    if (reply.kind === "stall") return;
    const reasoning = reply.kind === "tools" && this.profile === "kimi" ? (reply.reasoning ?? "") : "";
    const half = Math.ceil(reasoning.length / 2);
    for (const part of [reasoning.slice(0, half), reasoning.slice(half)]) {
      if (part !== "") chunk({ reasoning_content: part });
    }
    const text = reply.kind === "text" ? reply.text : reply.text;
    for (const word of text?.match(/\S+\s*/g) ?? []) {
      chunk({ content: word });
      if (reply.cutAt === "text") {
        response.end();
        return;
      }
    }
    const calls = reply.kind === "tools" ? reply.calls : [];
    for (const [position, call] of calls.entries()) {
      const callId = this.callId(call.name, position);
      const json = JSON.stringify(call.input);
      const middle = Math.floor(json.length / 2);
      if (this.profile === "mistral") {
        // Mistral sends each call whole in one delta (cut: only the first half of its arguments)
        const cut = reply.cutAt === "arguments";
        const sent = cut ? json.slice(0, middle) : json;
        chunk({
          tool_calls: [
            { index: position, id: callId, type: "function", function: { name: call.name, arguments: sent } },
          ],
        });
        if (cut) {
          response.end();
          return;
        }
        continue;
      }
      chunk({
        tool_calls: [
          { index: position, id: callId, type: "function", function: { name: call.name, arguments: "" } },
        ],
      });
      for (const part of [json.slice(0, middle), json.slice(middle)]) {
        chunk({ tool_calls: [{ index: position, function: { arguments: part } }] });
        if (reply.cutAt === "arguments") {
          response.end();
          return;
        }
      }
    }
    chunk({}, calls.length > 0 ? "tool_calls" : "stop");
    if (askedForUsage) write({ choices: [], usage: counts });
    response.write("data: [DONE]\n\n");
    response.end();
  }

  /** Ids as each provider makes them; Kimi's restart at 0 in every response (ids are reused across turns). */
  private callId(name: string, position: number): string {
    if (this.profile === "kimi") return `functions.${name}:${position}`;
    if (this.profile === "mistral")
      return `M${String(this.responseCounter).padStart(4, "0")}x${String(position).padStart(3, "0")}`.slice(
        0,
        9,
      );
    return `call_fake${this.responseCounter}x${position}`;
  }
}

/** Counts for a reply that fixes none: the request's JSON length / 4 in, one token per word out. */
function estimateUsage(
  requestText: string,
  reply: Exclude<FakeReply, { kind: "error" | "stall" }>,
): FakeUsage {
  const words = (reply.text ?? "").match(/\S+/g)?.length ?? 0;
  const calls = reply.kind === "tools" ? reply.calls.length : 0;
  return { input: Math.ceil(requestText.length / 4), output: Math.max(1, words + calls * 10) };
}
