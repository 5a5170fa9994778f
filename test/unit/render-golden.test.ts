/**
 * The renderer's output, fixed: digests of everything a request carries — provider messages, thinking,
 * counts, diagnostics and id maps — for the bench's synthetic history of 3,000 blocks (results before
 * their calls, duplicates, an error before a success, aborted batches, calls left without a result),
 * with thinking on and with a budget that drops most turns; and the same of `renderTranscript`'s
 * provider-neutral messages. The request digests were taken from the renderer before it was made faster
 * (issue 11), the transcript digests before its call records were slimmed; later rewrites must give the
 * same bytes, and any change of output must be deliberate: update the digests in the same commit and
 * say why.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { syntheticHistory } from "../../bench/render-bench.js";
import {
  PROFILE_NAMES,
  renderProviderRequest,
  renderTranscript,
  type IdMaps,
  type ProfileName,
  type RenderCounts,
  type RenderDiagnostics,
  type RenderOptions,
} from "../../src/history/render/index.js";

const HISTORY = syntheticHistory(3_000);
const THINKING: RenderOptions = { thinking: true, model: "claude-bench" };
const SMALL_BUDGET: RenderOptions = { thinking: false, budgetTokens: 5_000 };

const DIGESTS: Record<ProfileName, { thinking: string; smallBudget: string }> = {
  anthropic: { thinking: "12950d3c21a806aa", smallBudget: "bc677ed0099a79ef" },
  openai: { thinking: "45bae9c386cd66bf", smallBudget: "0f81bad5bfbf0afd" },
  kimi: { thinking: "ba50714dae473331", smallBudget: "eb25276953fd3544" },
  mistral: { thinking: "24a0d6d702926092", smallBudget: "beaff12737bcb638" },
};

/** The same for `renderTranscript`: the provider-neutral messages, counts, diagnostics and id maps. */
const TRANSCRIPT_DIGESTS: Record<ProfileName, { thinking: string; smallBudget: string }> = {
  anthropic: { thinking: "5852c6533fca3b57", smallBudget: "0e5d5b3b3196f497" },
  openai: { thinking: "75ce5a26c5a281c4", smallBudget: "37809d8b1d594022" },
  kimi: { thinking: "b498b29421710a22", smallBudget: "bf74399b10a90933" },
  mistral: { thinking: "a933852c6f3d1018", smallBudget: "8c1bc9f95e2e619b" },
};

/** Everything a render carries (a transcript has no `thinking` flag: JSON leaves the key out). */
function digest(rendered: {
  messages: unknown;
  thinking?: boolean;
  counts: RenderCounts;
  diagnostics: RenderDiagnostics;
  ids: IdMaps;
}): string {
  const everything = JSON.stringify({
    messages: rendered.messages,
    thinking: rendered.thinking,
    counts: rendered.counts,
    diagnostics: rendered.diagnostics,
    ids: [[...rendered.ids.toProjected], [...rendered.ids.toCanonical]],
  });
  return createHash("sha256").update(everything).digest("hex").slice(0, 16);
}

describe("the rendered request for a fixed history", () => {
  it.each(PROFILE_NAMES)(
    "%s: is byte for byte what it was, with thinking on and under a small budget",
    (profile) => {
      expect(digest(renderProviderRequest(HISTORY, profile, THINKING))).toBe(DIGESTS[profile].thinking);
      expect(digest(renderProviderRequest(HISTORY, profile, SMALL_BUDGET))).toBe(
        DIGESTS[profile].smallBudget,
      );
      expect(renderProviderRequest(HISTORY, profile, SMALL_BUDGET).counts.droppedTurns).toBeGreaterThan(0);
    },
  );

  it.each(PROFILE_NAMES)("%s: the provider-neutral transcript is byte for byte what it was", (profile) => {
    expect(digest(renderTranscript(HISTORY, profile, THINKING))).toBe(TRANSCRIPT_DIGESTS[profile].thinking);
    expect(digest(renderTranscript(HISTORY, profile, SMALL_BUDGET))).toBe(
      TRANSCRIPT_DIGESTS[profile].smallBudget,
    );
  });
});
