/**
 * The OpenAI Chat Completions engine (official SDK, streaming), with a profile per provider that speaks
 * it: `openai`, `kimi` (Moonshot) and `mistral` — each its own base URL, tool-call id format and
 * message-shape rules, all applied by the renderer. Tool-call fragments are joined by index and
 * emitted whole when the stream ends. Histories are rendered through a per-session cache (only what a
 * session added since its previous inference is rendered). The SDK's own retries are off (the loop
 * retries and traces); aborting the turn's signal aborts the request. Token usage: OpenAI sends it in
 * a last chunk (no choices) when asked with `stream_options.include_usage`; Mistral sends it unasked
 * on its last chunk and Kimi inside the last choice, so only the `openai` profile asks (the others do
 * not document the option). It is reported once, just before the stop. A stream that ends without a
 * choice's `finish_reason` fails like a dropped connection; its calls are never emitted.
 */
import OpenAI, { APIError, APIUserAbortError } from "openai";
import type { ChatCompletionCreateParamsStreaming } from "openai/resources/chat/completions";
import type { CompletionUsage } from "openai/resources/completions";
import type { Logger } from "pino";
import { TranscriptCache } from "../history/render/index.js";
import type { ModelEngine, ModelEvent, ModelRequest, ModelStopReason } from "./engine.js";
import { IncompleteStreamError, logProviderFailure, toProviderError } from "./provider-error.js";
import { parseToolArguments } from "./tool-arguments.js";

export type OpenAIProfileName = "openai" | "kimi" | "mistral";

export type OpenAICompatibleEngineOptions = {
  profile: OpenAIProfileName;
  apiKey: string;
  baseUrl?: string;
  model: string;
  maxTokens?: number;
  /** Kimi: send and keep `reasoning_content` (thinking). */
  thinking?: boolean;
  contextBudgetTokens?: number;
  /** Rendered transcripts kept per session (shared between engines, or one of its own). */
  transcripts?: TranscriptCache;
  logger: Logger;
};

type PendingCall = { id: string; name: string; arguments: string };

/** An error body as the SDK reads one: OpenAI's `{error: …}` as it is, any other inside one. */
function enveloped(body: unknown): unknown {
  if (body === undefined || body === null) return body;
  if (typeof body !== "object") return { error: { message: String(body) } };
  return "error" in body ? body : { error: body };
}

/**
 * The SDK's client, but an error body without OpenAI's `error` envelope — Mistral's `{object: "error",
 * message, …}` — is kept whole: the SDK keeps only `body.error`, so such a body was lost and the turn's
 * `error` said "400 status code (no body)" (openai/openai-node#1734).
 */
class ChatCompletionsClient extends OpenAI {
  protected override makeStatusError(
    status: number,
    error: object | undefined,
    message: string | undefined,
    headers: Headers,
  ) {
    return super.makeStatusError(status, enveloped(error) as object, message, headers);
  }
}

export class OpenAICompatibleEngine implements ModelEngine {
  readonly provider: OpenAIProfileName;
  readonly defaultModel: string;
  private readonly client: ChatCompletionsClient;
  private readonly transcripts: TranscriptCache;

  constructor(private readonly options: OpenAICompatibleEngineOptions) {
    this.provider = options.profile;
    this.transcripts = options.transcripts ?? new TranscriptCache();
    this.defaultModel = options.model;
    this.client = new ChatCompletionsClient({
      apiKey: options.apiKey,
      baseURL: options.baseUrl,
      maxRetries: 0,
    });
  }

  async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent> {
    const rendered = this.transcripts.renderProviderRequest(
      request.sessionId,
      request.history,
      this.provider,
      {
        thinking: this.options.thinking === true,
        model: request.model,
        budgetTokens: this.options.contextBudgetTokens,
        // the agent's instructions lead as a `system` message, never part of the rendered history
        system: request.system,
      },
    );
    if (rendered.format !== "openai-chat")
      throw new Error(`${this.provider} profile rendered a non-OpenAI request`);
    const body: ChatCompletionCreateParamsStreaming = {
      model: request.model,
      messages: rendered.messages,
      stream: true,
      ...(this.provider === "openai" ? { stream_options: { include_usage: true } } : {}),
      ...(this.options.maxTokens ? { max_tokens: this.options.maxTokens } : {}),
      ...(request.tools.length > 0
        ? {
            tools: request.tools.map((tool) => ({
              type: "function" as const,
              function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
            })),
            tool_choice: request.toolChoice === "none" ? ("none" as const) : ("auto" as const),
          }
        : {}),
    };

    const calls = new Map<number, PendingCall>();
    let stopReason: ModelStopReason = "end_turn";
    let usage: { inputTokens: number; outputTokens: number } | undefined;
    let finished = false;
    try {
      const chunks = await this.client.chat.completions.create(body, { signal });
      for await (const chunk of chunks) {
        const reported = chunk.usage ?? (chunk.choices[0] as { usage?: CompletionUsage } | undefined)?.usage;
        if (reported)
          usage = { inputTokens: reported.prompt_tokens, outputTokens: reported.completion_tokens };
        const choice = chunk.choices[0];
        if (!choice) continue;
        const delta = choice.delta as typeof choice.delta & { reasoning_content?: string | null };
        if (delta.reasoning_content) yield { type: "thinking_delta", text: delta.reasoning_content };
        if (delta.content) yield { type: "text_delta", text: delta.content };
        for (const fragment of delta.tool_calls ?? []) {
          const call = calls.get(fragment.index) ?? { id: "", name: "", arguments: "" };
          if (fragment.id) call.id = fragment.id;
          if (fragment.function?.name) call.name += fragment.function.name;
          if (fragment.function?.arguments) call.arguments += fragment.function.arguments;
          calls.set(fragment.index, call);
        }
        if (choice.finish_reason) {
          stopReason = mapFinishReason(choice.finish_reason);
          finished = true;
        }
      }
      // a body that ends early (no finish_reason, no [DONE]) ends the SDK's iteration without an
      // error: the answer is cut, and a call's arguments may be half a JSON text
      if (!finished) throw new IncompleteStreamError("choice with a finish_reason");
    } catch (error) {
      if (signal.aborted || error instanceof APIUserAbortError) throw error;
      const failure = toProviderError(this.provider, error, (candidate) => candidate instanceof APIError);
      logProviderFailure(this.options.logger, failure, {
        model: request.model,
        messageCount: body.messages.length,
        diagnostics: rendered.diagnostics,
      });
      throw failure;
    } finally {
      // the request is over, however it ended: its messages are read no more, and the session's next
      // request may reuse their array
      rendered.release();
    }
    for (const [, call] of [...calls.entries()].sort(([a], [b]) => a - b)) {
      yield { type: "tool_call", id: call.id, name: call.name, input: parseToolArguments(call.arguments) };
    }
    if (usage) yield { type: "usage", ...usage };
    yield { type: "stop", reason: calls.size > 0 ? "tool_use" : stopReason };
  }
}

function mapFinishReason(reason: string): ModelStopReason {
  switch (reason) {
    case "tool_calls":
    case "function_call":
      return "tool_use";
    case "length":
      return "max_tokens";
    case "stop":
      return "end_turn";
    default:
      return "other";
  }
}
