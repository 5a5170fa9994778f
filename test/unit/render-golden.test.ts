/**
 * The renderer's output, fixed: digests of everything a request carries — provider messages, thinking,
 * counts, diagnostics and id maps — for the bench's synthetic history of 3,000 blocks (results before
 * their calls, duplicates, an error before a success, aborted batches, calls left without a result),
 * with thinking on and with a budget that drops most turns. The digests were taken from the renderer
 * before it was made faster (issue 11); the rewrite had to give the same bytes, and any later change of
 * output must be deliberate: update the digests in the same commit and say why.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { syntheticHistory } from "../../bench/render-bench.js";
import {
  PROFILE_NAMES,
  renderProviderRequest,
  type ProfileName,
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

function digest(profile: ProfileName, options: RenderOptions): string {
  const request = renderProviderRequest(HISTORY, profile, options);
  const everything = JSON.stringify({
    messages: request.messages,
    thinking: request.thinking,
    counts: request.counts,
    diagnostics: request.diagnostics,
    ids: [[...request.ids.toProjected], [...request.ids.toCanonical]],
  });
  return createHash("sha256").update(everything).digest("hex").slice(0, 16);
}

describe("the rendered request for a fixed history", () => {
  it.each(PROFILE_NAMES)(
    "%s: is byte for byte what it was, with thinking on and under a small budget",
    (profile) => {
      expect(digest(profile, THINKING)).toBe(DIGESTS[profile].thinking);
      expect(digest(profile, SMALL_BUDGET)).toBe(DIGESTS[profile].smallBudget);
      expect(renderProviderRequest(HISTORY, profile, SMALL_BUDGET).counts.droppedTurns).toBeGreaterThan(0);
    },
  );
});
