/**
 * Rendered transcripts kept per session and rendering (profile, thinking, model), so that the render an
 * inference pays covers only the blocks added since the session's previous inference: between two
 * inferences a history only grows at its end and every earlier call is closed. That is checked, not
 * assumed — the cached length and last block must match, and no new block may change a committed
 * message — and anything else renders from scratch. A bounded LRU of sessions; the output is the same
 * as `renderProviderRequest` on the same history, with or without a cached entry.
 */
import type { HistoryBlock } from "../model.js";
import type { ProviderProfile } from "./profiles.js";
import { renderBudgetOf, renderFromScratch, resolveProfile, transcriptSettings } from "./render.js";
import { providerRequestOf, requestInstructions, type ProviderRequestMessages } from "./request.js";
import type { TranscriptSettings, TranscriptState } from "./transcript-state.js";
import type { RenderOptions } from "./types.js";

export const DEFAULT_TRANSCRIPT_CACHE_SESSIONS = 16;

export type TranscriptCacheOptions = {
  /** Sessions kept; the least recently rendered is dropped first. */
  maxSessions?: number;
};

/** How a render was served, for tests and metrics. */
export type TranscriptCacheStats = { hits: number; misses: number; fallbacks: number; evictions: number };

export class TranscriptCache {
  private readonly entries = new Map<string, TranscriptState>();
  private readonly maxSessions: number;
  readonly stats: TranscriptCacheStats = { hits: 0, misses: 0, fallbacks: 0, evictions: 0 };

  constructor(options: TranscriptCacheOptions = {}) {
    const maxSessions = options.maxSessions ?? DEFAULT_TRANSCRIPT_CACHE_SESSIONS;
    if (!Number.isInteger(maxSessions) || maxSessions < 1) {
      throw new Error(`maxSessions must be a positive integer, got ${maxSessions}.`);
    }
    this.maxSessions = maxSessions;
  }

  get size(): number {
    return this.entries.size;
  }

  /** `renderProviderRequest(history, profile, options)`, reusing what was rendered for `sessionId`. */
  renderProviderRequest(
    sessionId: string,
    history: readonly HistoryBlock[],
    profile: ProviderProfile | string,
    options: RenderOptions = {},
  ): ProviderRequestMessages {
    const resolved = resolveProfile(profile);
    const settings = transcriptSettings(resolved, options, true);
    const budget = renderBudgetOf(resolved, options);
    // the instructions go in the request only: the kept state never depends on them
    const instructions = requestInstructions(resolved, options.system);
    const key = JSON.stringify([sessionId, resolved.name, settings.thinking, settings.model ?? null]);

    const cached = this.entries.get(key);
    this.entries.delete(key);
    if (cached !== undefined && rendersAlike(cached.settings, settings)) {
      const rendering = cached.render(history, budget, instructions.leading);
      if (rendering !== null) {
        this.stats.hits++;
        this.remember(key, cached);
        return providerRequestOf(rendering, settings, instructions);
      }
      this.stats.fallbacks++;
    } else {
      this.stats.misses++;
    }
    const { state, rendering } = renderFromScratch(history, settings, budget, instructions.leading);
    // A history that had to be sorted is not one a session grows at its end: not worth keeping.
    if (!rendering.reordered) this.remember(key, state);
    return providerRequestOf(rendering, settings, instructions);
  }

  /** Forgets every session (e.g. when histories are rewritten). */
  clear(): void {
    this.entries.clear();
  }

  private remember(key: string, state: TranscriptState): void {
    this.entries.set(key, state);
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.maxSessions) break;
      this.entries.delete(oldest);
      this.stats.evictions++;
    }
  }
}

/** Two settings render a history identically (the context budget is applied per render). */
function rendersAlike(left: TranscriptSettings, right: TranscriptSettings): boolean {
  const a = left.profile;
  const b = right.profile;
  return (
    left.thinking === right.thinking &&
    left.model === right.model &&
    left.providerOutput === right.providerOutput &&
    (a === b ||
      (a.name === b.name &&
        a.provider === b.provider &&
        a.format === b.format &&
        a.idFormat === b.idFormat &&
        a.thinking === b.thinking &&
        a.toolNamePattern.source === b.toolNamePattern.source &&
        a.toolNamePattern.flags === b.toolNamePattern.flags &&
        a.quirks.textBesideToolCalls === b.quirks.textBesideToolCalls &&
        a.quirks.assistantBetweenToolResultsAndUser === b.quirks.assistantBetweenToolResultsAndUser &&
        a.quirks.lastMessageUserOrTool === b.quirks.lastMessageUserOrTool &&
        a.quirks.toolResultName === b.quirks.toolResultName))
  );
}
