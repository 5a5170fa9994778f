/**
 * One call for a provider engine: render the history for a profile and translate it into that
 * provider's `messages`, with the thinking setting the request must use.
 */
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { HistoryBlock } from "../model.js";
import { toAnthropicRequestMessages } from "./adapters-anthropic.js";
import { toOpenAIChatMessages } from "./adapters-openai.js";
import { getProfile, type ProviderProfile } from "./profiles.js";
import { renderTranscript } from "./render.js";
import type { IdMaps, RenderDiagnostics, RenderOptions } from "./types.js";

type RequestCommon = {
  /** Whether the request must be sent with thinking enabled (see `diagnostics.thinking`). */
  thinking: boolean;
  diagnostics: RenderDiagnostics;
  ids: IdMaps;
};
export type ProviderRequestMessages =
  | (RequestCommon & { format: "anthropic-messages"; messages: MessageParam[] })
  | (RequestCommon & { format: "openai-chat"; messages: ChatCompletionMessageParam[] });

export function renderProviderRequest(
  history: readonly HistoryBlock[],
  profile: ProviderProfile | string,
  options: RenderOptions = {},
): ProviderRequestMessages {
  const resolved = typeof profile === "string" ? getProfile(profile) : profile;
  const { messages, diagnostics, ids } = renderTranscript(history, resolved, options);
  const common: RequestCommon = { thinking: diagnostics.thinking.effective, diagnostics, ids };
  return resolved.format === "anthropic-messages"
    ? { ...common, format: "anthropic-messages", messages: toAnthropicRequestMessages(messages) }
    : { ...common, format: "openai-chat", messages: toOpenAIChatMessages(messages, resolved) };
}
