/**
 * The renderer's output, fixed: digests of everything a request carries — provider messages, thinking,
 * counts, diagnostics and id maps — for the bench's synthetic history of 3,000 blocks (results before
 * their calls, duplicates, an error before a success, aborted batches, calls left without a result),
 * with thinking on and with a budget that drops most turns; and the same of `renderTranscript`'s
 * provider-neutral messages. The request digests were taken from the renderer before it was made faster
 * (issue 11), the transcript digests before its call records were slimmed; later rewrites must give the
 * same bytes, and any change of output must be deliberate: update the digests in the same commit and
 * say why. (Last updated when `diagnostics.budget` gained `instructionTokens`, 0 here: the digests
 * without that field were checked to be the ones before it.)
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
  anthropic: { thinking: "ed3ca0506edff90c", smallBudget: "6efe485e6ad10601" },
  openai: { thinking: "ac75d00d8823b7fe", smallBudget: "8725f329e94097d6" },
  kimi: { thinking: "c9a2b6f901ffac68", smallBudget: "fa78353825402168" },
  mistral: { thinking: "00df281ca48f4015", smallBudget: "1aa595a72843b97a" },
};

/** The same for `renderTranscript`: the provider-neutral messages, counts, diagnostics and id maps. */
const TRANSCRIPT_DIGESTS: Record<ProfileName, { thinking: string; smallBudget: string }> = {
  anthropic: { thinking: "a334321eee95d667", smallBudget: "fb2d6e760f7b1198" },
  openai: { thinking: "c535573d4adb592b", smallBudget: "d7d23cf424b91065" },
  kimi: { thinking: "09164b7b6c68e4a6", smallBudget: "7f0761dc541c3531" },
  mistral: { thinking: "4e4dc01abb5be94a", smallBudget: "5a44b1e08305e5ae" },
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
