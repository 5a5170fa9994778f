/**
 * One call for a provider engine: render the history for a profile and translate it into that
 * provider's `messages`, with the thinking setting the request must use; and where a system prompt
 * goes in each format (`withSystemPrompt`).
 */
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { HistoryBlock } from "../model.js";
import { toAnthropicRequestMessages } from "./adapters-anthropic.js";
import { toOpenAIChatMessages } from "./adapters-openai.js";
import type { ProviderProfile } from "./profiles.js";
import {
  budgetTokensOf,
  finalMessages,
  renderFromScratch,
  resolveProfile,
  transcriptSettings,
} from "./render.js";
import type { Rendering, TranscriptSettings } from "./transcript-state.js";
import type { IdMaps, RenderCounts, RenderDiagnostics, RenderOptions } from "./types.js";

type RequestCommon = {
  /** Whether the request must be sent with thinking enabled (see `diagnostics.thinking`). */
  readonly thinking: boolean;
  /** Built on first access, like `ids`. */
  readonly diagnostics: RenderDiagnostics;
  readonly ids: IdMaps;
  readonly counts: RenderCounts;
};
export type ProviderRequestMessages =
  | (RequestCommon & { format: "anthropic-messages"; messages: MessageParam[] })
  | (RequestCommon & { format: "openai-chat"; messages: ChatCompletionMessageParam[] });

export function renderProviderRequest(
  history: readonly HistoryBlock[],
  profile: ProviderProfile | string,
  options: RenderOptions = {},
): ProviderRequestMessages {
  const resolved = resolveProfile(profile);
  const settings = transcriptSettings(resolved, options, true);
  const { rendering } = renderFromScratch(history, settings, budgetTokensOf(resolved, options));
  return providerRequestOf(rendering, settings);
}

/** The request a rendering stands for (shared with `TranscriptCache`). */
export function providerRequestOf(
  rendering: Rendering,
  settings: TranscriptSettings,
): ProviderRequestMessages {
  const { lazy, counts } = rendering;
  const thinking = settings.thinking && !rendering.thinkingDisabled;
  // With thinking turned off every thinking block goes: the committed provider messages still carry
  // theirs, so this rare request is translated from the settled messages instead.
  const settled = rendering.providerMessages === undefined ? finalMessages(rendering, settings) : undefined;
  const { profile } = settings;
  const messages =
    rendering.providerMessages ??
    (profile.format === "anthropic-messages"
      ? toAnthropicRequestMessages(settled!)
      : toOpenAIChatMessages(settled!, profile));
  // the messages are of the profile's format; diagnostics and ids stay lazy (a spread would read them)
  return {
    format: profile.format,
    messages,
    thinking,
    counts,
    get diagnostics() {
      return lazy.diagnostics();
    },
    get ids() {
      return lazy.ids();
    },
  } as ProviderRequestMessages;
}

/**
 * Where a system prompt goes (docs/semantics.md#agents): Anthropic takes it as the request's `system`; the
 * OpenAI-compatible formats as a leading `{"role": "system"}` message. It is added to the request
 * only, never to the rendered (cached) messages or the history. No prompt (or an empty one): nothing.
 */
export function withSystemPrompt(
  request: ProviderRequestMessages,
  system: string | undefined,
): { system?: string; messages: MessageParam[] | ChatCompletionMessageParam[] } {
  if (system === undefined || system === "") return { messages: request.messages };
  if (request.format === "anthropic-messages") return { system, messages: request.messages };
  return { messages: [{ role: "system", content: system }, ...request.messages] };
}
