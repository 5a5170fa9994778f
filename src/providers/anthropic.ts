/**
 * The Anthropic Messages engine (official SDK, streaming). The session's canonical history is rendered
 * for the `anthropic` profile on every inference, through a per-session cache that renders only the
 * blocks added since the session's previous inference. The SDK's own retries are off so that transient
 * failures are retried — and traced — by the loop like any other. Aborting the turn's signal aborts the
 * HTTP request. Token usage: `message_start` reports the input, `message_delta` the output so far (and
 * sometimes the input again); the last values are reported once, just before the stop, so a usage
 * report never counts as output that would stop a retry. A stream that ends without `message_stop`
 * fails like a dropped connection.
 */
import Anthropic, { APIError, APIUserAbortError } from "@anthropic-ai/sdk";
import type {
  MessageCreateParamsStreaming,
  RawMessageStreamEvent,
} from "@anthropic-ai/sdk/resources/messages";
import type { Logger } from "pino";
import { TranscriptCache } from "../history/render/index.js";
import type { ModelEngine, ModelEvent, ModelRequest, ModelStopReason } from "./engine.js";
import { IncompleteStreamError, logProviderFailure, toProviderError } from "./provider-error.js";
import { parseToolArguments } from "./tool-arguments.js";

export type AnthropicEngineOptions = {
  apiKey: string;
  baseUrl?: string;
  model: string;
  maxTokens: number;
  /** Extended thinking budget in tokens; 0 turns thinking off. */
  thinkingBudgetTokens: number;
  /** Overrides the profile's context budget (estimated tokens). */
  contextBudgetTokens?: number;
  /** Rendered transcripts kept per session (shared between engines, or one of its own). */
  transcripts?: TranscriptCache;
  logger: Logger;
};

export class AnthropicEngine implements ModelEngine {
  readonly provider = "anthropic";
  readonly defaultModel: string;
  private readonly client: Anthropic;
  private readonly transcripts: TranscriptCache;

  constructor(private readonly options: AnthropicEngineOptions) {
    this.defaultModel = options.model;
    this.transcripts = options.transcripts ?? new TranscriptCache();
    this.client = new Anthropic({ apiKey: options.apiKey, baseURL: options.baseUrl ?? null, maxRetries: 0 });
  }

  async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent> {
    const thinking = this.options.thinkingBudgetTokens > 0;
    const rendered = this.transcripts.renderProviderRequest(request.sessionId, request.history, "anthropic", {
      thinking,
      model: request.model,
      budgetTokens: this.options.contextBudgetTokens,
      // the agent's instructions, never part of the rendered history
      system: request.system,
    });
    if (rendered.format !== "anthropic-messages")
      throw new Error("anthropic profile rendered a non-Anthropic request");
    const body: MessageCreateParamsStreaming = {
      model: request.model,
      max_tokens: this.options.maxTokens,
      messages: rendered.messages,
      ...(rendered.system === undefined ? {} : { system: rendered.system }),
      stream: true,
      ...(request.tools.length > 0
        ? {
            tools: request.tools.map((tool) => ({
              name: tool.name,
              description: tool.description,
              input_schema: { type: "object" as const, ...tool.inputSchema },
            })),
            tool_choice:
              request.toolChoice === "none" ? { type: "none" as const } : { type: "auto" as const },
          }
        : {}),
      ...(rendered.thinking
        ? { thinking: { type: "enabled" as const, budget_tokens: this.options.thinkingBudgetTokens } }
        : {}),
    };

    const tools = new Map<number, { id: string; name: string; json: string }>();
    let stopReason: ModelStopReason = "end_turn";
    let usage: { inputTokens: number; outputTokens: number } | undefined;
    let ended = false;
    try {
      const events = await this.client.messages.create(body, { signal });
      for await (const event of events as AsyncIterable<RawMessageStreamEvent>) {
        switch (event.type) {
          case "content_block_start":
            if (event.content_block.type === "tool_use") {
              tools.set(event.index, {
                id: event.content_block.id,
                name: event.content_block.name,
                json: "",
              });
            } else if (event.content_block.type === "redacted_thinking") {
              // arrives whole, with no deltas
              yield { type: "thinking_redacted", data: event.content_block.data };
            }
            break;
          case "content_block_delta": {
            const delta = event.delta;
            if (delta.type === "text_delta") yield { type: "text_delta", text: delta.text };
            else if (delta.type === "thinking_delta") yield { type: "thinking_delta", text: delta.thinking };
            else if (delta.type === "signature_delta")
              yield { type: "thinking_signature", signature: delta.signature };
            else if (delta.type === "input_json_delta") {
              const tool = tools.get(event.index);
              if (tool) tool.json += delta.partial_json;
            }
            break;
          }
          case "content_block_stop": {
            const tool = tools.get(event.index);
            if (tool)
              yield { type: "tool_call", id: tool.id, name: tool.name, input: parseToolArguments(tool.json) };
            break;
          }
          case "message_start":
            usage = {
              inputTokens: event.message.usage.input_tokens,
              outputTokens: event.message.usage.output_tokens,
            };
            break;
          case "message_delta":
            stopReason = mapStopReason(event.delta.stop_reason);
            // cumulative counts: the latest replaces what message_start said
            usage = {
              inputTokens: event.usage.input_tokens ?? usage?.inputTokens ?? 0,
              outputTokens: event.usage.output_tokens,
            };
            break;
          case "message_stop":
            ended = true;
            break;
          default:
            break;
        }
      }
      // a body that ends early ends the SDK's iteration without an error: the answer, and any call
      // still waiting for its content_block_stop, is cut
      if (!ended) throw new IncompleteStreamError("message_stop");
    } catch (error) {
      if (signal.aborted || error instanceof APIUserAbortError) throw error;
      const failure = toProviderError("anthropic", error, (candidate) => candidate instanceof APIError);
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
    if (usage) yield { type: "usage", ...usage };
    yield { type: "stop", reason: stopReason };
  }
}

function mapStopReason(reason: string | null | undefined): ModelStopReason {
  switch (reason) {
    case "tool_use":
      return "tool_use";
    case "max_tokens":
      return "max_tokens";
    case "stop_sequence":
      return "stop_sequence";
    case "end_turn":
    case null:
    case undefined:
      return "end_turn";
    default:
      return "other";
  }
}
