/**
 * `renderTranscript(history, profile, options)`: the canonical history as one provider accepts it
 * (docs/semantics.md#transcript-integrity points 1–6). Pure and deterministic; O(n) — every lookup goes
 * through a map keyed by canonical id. Passes:
 *
 * 1. index — the call of each canonical id and its winning result; duplicates and orphans noted; ids
 *    projected and tool names sanitized once per call (pairing.ts, ids.ts);
 * 2. assemble — neutral messages, each call's results right after its assistant message;
 * 3. budget — older whole turns dropped behind a summary line;
 * 4. shape — signed-thinking settlement and the profile's role quirks;
 * 5. diagnostics — built from what the passes recorded when first read.
 *
 * The passes run incrementally (transcript-state.ts); a render here starts from nothing. Provider
 * engines render through a `TranscriptCache`, which renders only what a session added since.
 */
import type { HistoryBlock } from "../model.js";
import { estimateTextTokens, type RenderBudget } from "./budget.js";
import { createDiagnostics } from "./diagnostics.js";
import { getProfile, type ProviderProfile } from "./profiles.js";
import { applyShapeQuirks, settleSignedThinking } from "./shape.js";
import {
  TranscriptState,
  type ProviderMessage,
  type Rendering,
  type TranscriptSettings,
} from "./transcript-state.js";
import type { RenderOptions, RenderResult, RenderedMessage } from "./types.js";

export function resolveProfile(profile: ProviderProfile | string): ProviderProfile {
  return typeof profile === "string" ? getProfile(profile) : profile;
}

export function transcriptSettings(
  profile: ProviderProfile,
  options: RenderOptions,
  providerOutput: boolean,
): TranscriptSettings {
  return { profile, thinking: options.thinking === true, model: options.model, providerOutput };
}

/** The budget a render of `options` has (the profile's, or the one asked for), with the instructions' share. */
export function renderBudgetOf(profile: ProviderProfile, options: RenderOptions): RenderBudget {
  return {
    budgetTokens: options.budgetTokens ?? profile.contextBudgetTokens,
    instructionTokens: options.system ? estimateTextTokens(options.system.length) : 0,
  };
}

/**
 * Renders `history` on a new state; a history out of position order is stably sorted first (the
 * store's histories never are) and `diagnostics.reordered` says so. When a result answers a call that
 * an earlier stretch of the walk already assembled (transcript-state.ts), the history is walked again
 * in one stretch. `leading`: provider messages the request starts with (`TranscriptState.render`).
 */
export function renderFromScratch(
  history: readonly HistoryBlock[],
  settings: TranscriptSettings,
  budget: RenderBudget,
  leading: readonly ProviderMessage[] = [],
): { state: TranscriptState; rendering: Rendering } {
  const state = new TranscriptState(settings);
  const rendering = state.render(history, budget, leading);
  if (rendering !== null) return { state, rendering };
  const reordered = state.failure === "unordered";
  const blocks = reordered ? [...history].sort((left, right) => left.position - right.position) : history;
  const whole = new TranscriptState(settings, reordered, Number.POSITIVE_INFINITY);
  return { state: whole, rendering: whole.render(blocks, budget, leading)! };
}

const NO_BUDGET: RenderBudget = { budgetTokens: 0, instructionTokens: 0 };

/** The kept messages after thinking settlement and shape quirks: what the provider is sent. */
export function finalMessages(rendering: Rendering, settings: TranscriptSettings): RenderedMessage[] {
  // The decisions these passes take are collected again, with the rest, when diagnostics are read.
  const scratch = createDiagnostics(settings.profile, settings.thinking, NO_BUDGET);
  const settled = settleSignedThinking(rendering.keptMessages(), settings.profile, scratch);
  return applyShapeQuirks(settled, settings.profile, scratch);
}

export function renderTranscript(
  history: readonly HistoryBlock[],
  profile: ProviderProfile | string,
  options: RenderOptions = {},
): RenderResult {
  const resolved = resolveProfile(profile);
  const settings = transcriptSettings(resolved, options, false);
  const { rendering } = renderFromScratch(history, settings, renderBudgetOf(resolved, options));
  const { lazy, counts } = rendering;
  return {
    messages: finalMessages(rendering, settings),
    counts,
    get diagnostics() {
      return lazy.diagnostics();
    },
    get ids() {
      return lazy.ids();
    },
  };
}
