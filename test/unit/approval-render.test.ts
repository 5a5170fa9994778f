/**
 * A rejected call (tool approval, docs/semantics.md#approval) in transcripts: its `[REJECTED] …` result is a
 * real answer the model gets, not a synthetic placeholder, so it beats a closing `cancelled` or `interrupted`
 * result recorded for the same call and is never marked synthetic.
 */
import { describe, expect, it } from "vitest";
import { isRealStatus, resultRank } from "../../src/history/render/pairing.js";
import { renderTranscript } from "../../src/history/render/index.js";
import { call, history, result, user } from "../support/history-arbitraries.js";

function resultsOf(rendered: ReturnType<typeof renderTranscript>) {
  return rendered.messages.flatMap((message) => (message.role === "tool_results" ? message.results : []));
}

describe("rejected results in transcripts", () => {
  it("rank as real results, with errors, under complete", () => {
    expect(isRealStatus("rejected")).toBe(true);
    expect(resultRank("rejected")).toBe(resultRank("error"));
    expect(resultRank("rejected")).toBeLessThan(resultRank("complete"));
    expect(resultRank("rejected")).toBeGreaterThan(resultRank("cancelled"));
  });

  it.each(["anthropic", "openai"] as const)(
    "reach the %s model as the call's result, not synthetic",
    (provider) => {
      const rendered = renderTranscript(
        history(user("go"), call("c1"), result("c1", "[REJECTED] not today", "rejected")),
        provider,
      );
      expect(resultsOf(rendered)).toEqual([
        expect.objectContaining({ canonicalId: "c1", content: "[REJECTED] not today", synthetic: false }),
      ]);
    },
  );

  it("win over an earlier cancelled result of the same call", () => {
    const rendered = renderTranscript(
      history(
        user("go"),
        call("c1"),
        result("c1", "[CANCELLED] Turn aborted by user.", "cancelled"),
        result("c1", "[REJECTED] not today", "rejected"),
      ),
      "anthropic",
    );
    expect(resultsOf(rendered)).toEqual([
      expect.objectContaining({ canonicalId: "c1", content: "[REJECTED] not today", status: "rejected" }),
    ]);
  });
});
