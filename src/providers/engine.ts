/**
 * The `ModelEngine` interface every provider implements: `stream(request, signal)` yields text and
 * thinking deltas (with signatures and redacted blocks), complete tool calls and a final stop reason.
 * Aborting `signal` must abort the underlying request.
 */
import type { HistoryBlock } from "../history/model.js";
import type { ToolSpec } from "../tools/registry.js";

export type ModelRequest = {
  turnId: string;
  sessionId: string;
  model: string;
  /** The session's canonical history, this turn's user message and earlier steps included. */
  history: readonly HistoryBlock[];
  tools: readonly ToolSpec[];
  /**
   * The agent's instructions: the provider's system prompt (Anthropic `system`, OpenAI-compatible a
   * leading `system` message). Never part of the history.
   */
  system?: string;
  /** `none`: the model must answer in text (the final inference after a turn deadline). */
  toolChoice?: "auto" | "none";
};

export type ModelStopReason = "end_turn" | "tool_use" | "max_tokens" | "stop_sequence" | "other";

export type ModelEvent =
  | { type: "text_delta"; text: string }
  | { type: "thinking_delta"; text: string }
  /**
   * The signature of the thinking streamed since the previous block ended; it ends that block, so the
   * next `thinking_delta` starts another one (a signature covers its block's exact text).
   */
  | { type: "thinking_signature"; signature: string }
  /** A whole thinking block whose text the provider withheld: `data` is opaque, sent back unchanged. */
  | { type: "thinking_redacted"; data: string }
  | { type: "tool_call"; id: string; name: string; input: Record<string, unknown> }
  /** Tokens of this inference as the provider reported them (the loop sums them over the turn). */
  | { type: "usage"; inputTokens: number; outputTokens: number }
  | { type: "stop"; reason: ModelStopReason };

export interface ModelEngine {
  /** Provider name as clients select it (`scripted`, `anthropic`, …). */
  readonly provider: string;
  readonly defaultModel: string;
  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent>;
}
