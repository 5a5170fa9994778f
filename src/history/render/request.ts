/**
 * One call for a provider engine: render the history for a profile and translate it into that
 * provider's `messages`, with the thinking setting the request must use and the agent's instructions
 * where the format takes them (`options.system`).
 */
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { HistoryBlock } from "../model.js";
import { toAnthropicRequestMessages } from "./adapters-anthropic.js";
import { toOpenAIChatMessages } from "./adapters-openai.js";
import type { ProviderProfile } from "./profiles.js";
import {
  renderBudgetOf,
  finalMessages,
  renderFromScratch,
  resolveProfile,
  transcriptSettings,
} from "./render.js";
import type { ProviderMessage, Rendering, TranscriptSettings } from "./transcript-state.js";
import type { IdMaps, RenderCounts, RenderDiagnostics, RenderOptions } from "./types.js";
import { wellFormed } from "../../well-formed.js";

type RequestCommon = {
  /** Whether the request must be sent with thinking enabled (see `diagnostics.thinking`). */
  readonly thinking: boolean;
  /** Built on first access, like `ids`. */
  readonly diagnostics: RenderDiagnostics;
  readonly ids: IdMaps;
  readonly counts: RenderCounts;
  /**
   * The request was sent and its `messages` are read no more: a `TranscriptCache` may then reuse their
   * array for the session's next request instead of copying its committed messages again. Not calling
   * it costs only that copy; reading `messages` after calling it is a mistake.
   */
  release(): void;
};
export type ProviderRequestMessages =
  | (RequestCommon & {
      format: "anthropic-messages";
      messages: MessageParam[];
      /** The agent's instructions (`options.system`), when there are any. */
      system?: string;
    })
  | (RequestCommon & {
      format: "openai-chat";
      /** Led by a `system` message with the agent's instructions (`options.system`), when there are any. */
      messages: ChatCompletionMessageParam[];
    });

export function renderProviderRequest(
  history: readonly HistoryBlock[],
  profile: ProviderProfile | string,
  options: RenderOptions = {},
): ProviderRequestMessages {
  const resolved = resolveProfile(profile);
  const settings = transcriptSettings(resolved, options, true);
  const instructions = requestInstructions(resolved, options.system);
  const budget = renderBudgetOf(resolved, options);
  const { rendering } = renderFromScratch(history, settings, budget, instructions.leading);
  return providerRequestOf(rendering, settings, instructions);
}

/**
 * Where a request of one profile carries the agent's instructions: Anthropic's in its `system`, an
 * OpenAI format's as the `system` message its messages start with (`leading`). No instructions (or
 * empty ones): neither.
 */
export type RequestInstructions = { system: string | undefined; leading: ProviderMessage[] };

export function requestInstructions(
  profile: ProviderProfile,
  system: string | undefined,
): RequestInstructions {
  if (!system) return { system: undefined, leading: [] };
  const text = wellFormed(system);
  if (profile.format === "anthropic-messages") return { system: text, leading: [] };
  return { system: undefined, leading: [{ role: "system", content: text }] };
}

/**
 * With thinking turned off every thinking block goes: the committed provider messages still carry
 * theirs, so this rare request is translated from the settled messages instead (only Anthropic's
 * signed thinking turns it off, and Anthropic has no leading message).
 */
function settledRequestMessages(
  rendering: Rendering,
  settings: TranscriptSettings,
  instructions: RequestInstructions,
): ProviderMessage[] {
  const settled = finalMessages(rendering, settings);
  const messages: ProviderMessage[] =
    settings.profile.format === "anthropic-messages"
      ? toAnthropicRequestMessages(settled)
      : toOpenAIChatMessages(settled, settings.profile);
  return instructions.leading.length === 0 ? messages : instructions.leading.concat(messages);
}

/**
 * The request a rendering stands for (shared with `TranscriptCache`); the rendering was made with
 * `instructions.leading`.
 */
export function providerRequestOf(
  rendering: Rendering,
  settings: TranscriptSettings,
  instructions: RequestInstructions,
): ProviderRequestMessages {
  const { lazy, counts } = rendering;
  const thinking = settings.thinking && !rendering.thinkingDisabled;
  const { profile } = settings;
  const messages = rendering.providerMessages ?? settledRequestMessages(rendering, settings, instructions);
  // the messages are of the profile's format; diagnostics and ids stay lazy (a spread would read them)
  return {
    format: profile.format,
    messages,
    ...(instructions.system === undefined ? {} : { system: instructions.system }),
    thinking,
    counts,
    release: rendering.release,
    get diagnostics() {
      return lazy.diagnostics();
    },
    get ids() {
      return lazy.ids();
    },
  } as ProviderRequestMessages;
}
