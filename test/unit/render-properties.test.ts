/**
 * Transcript integrity for every history (docs/semantics.md#transcript-integrity): whatever
 * aborts, crashes, retries and provider switches left in the canonical history, the rendered request passes
 * every rule of the selected provider, ids are well-formed and collision-free, no successful result is lost,
 * every call without a result gets an `[INTERRUPTED]` one, rendering is deterministic, and a small context
 * budget drops whole turns without ever separating a call from its result.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { HistoryBlock, ToolResponseBlock } from "../../src/history/model.js";
import {
  EMPTY_RESULT_TEXT,
  PROFILE_NAMES,
  isWellFormedId,
  renderProviderRequest,
  renderTranscript,
  type ProfileName,
  type RenderOptions,
  type RenderResult,
} from "../../src/history/render/index.js";
import {
  RENDER_MODEL,
  acceptsRedactedOf,
  acceptsSignaturesOf,
  historyArbitrary,
} from "../support/history-arbitraries.js";
import { checkProviderMessages, rejectionMessage } from "../support/provider-rules.js";

const RUNS = 300;
const THINKING_SETTINGS = [false, true] as const;

/** Renders for `profile`, translates, and returns the provider's verdict on the request. */
function providerVerdict(history: readonly HistoryBlock[], profile: ProfileName, options: RenderOptions) {
  const request = renderProviderRequest(history, profile, { model: RENDER_MODEL, ...options });
  const rejection = checkProviderMessages(profile, request.messages, {
    thinking: request.thinking,
    acceptSignature: acceptsSignaturesOf("anthropic", RENDER_MODEL),
    acceptRedacted: acceptsRedactedOf("anthropic", RENDER_MODEL),
  });
  return { request, rejection };
}

/**
 * What the history says each call's result must be: the first complete one, else the first error, else
 * the first recorded one. (Changed on purpose: it used to be the first real one, complete or error.)
 */
function expectedOutcomes(history: readonly HistoryBlock[]) {
  const callOrder: string[] = [];
  const names = new Map<string, string>();
  const firstComplete = new Map<string, ToolResponseBlock>();
  const firstError = new Map<string, ToolResponseBlock>();
  const firstAny = new Map<string, ToolResponseBlock>();
  for (const block of history) {
    if (block.kind === "tool_call" && !names.has(block.callId)) {
      names.set(block.callId, block.name);
      callOrder.push(block.callId);
    } else if (block.kind === "tool_response") {
      if (!firstAny.has(block.callId)) firstAny.set(block.callId, block);
      if (block.status === "complete" && !firstComplete.has(block.callId))
        firstComplete.set(block.callId, block);
      if (block.status === "error" && !firstError.has(block.callId)) firstError.set(block.callId, block);
    }
  }
  const expected = (callId: string) =>
    firstComplete.get(callId) ?? firstError.get(callId) ?? firstAny.get(callId);
  return { callOrder, names, expected };
}

function emittedCalls(result: RenderResult) {
  return result.messages.flatMap((message) =>
    message.role === "assistant" ? message.content.filter((part) => part.type === "tool_call") : [],
  );
}

describe("rendered transcripts for arbitrary histories", () => {
  it.each(PROFILE_NAMES)(
    "%s: the adapted request passes every provider rule, with thinking on and off",
    (profile) => {
      fc.assert(
        fc.property(historyArbitrary(), (history) => {
          for (const thinking of THINKING_SETTINGS) {
            const { request, rejection } = providerVerdict(history, profile, { thinking });
            expect(rejectionMessage(rejection)).toBeNull();
            if (profile !== "anthropic") expect(request.thinking).toBe(thinking);
          }
        }),
        { numRuns: RUNS },
      );
    },
  );

  it.each(PROFILE_NAMES)(
    "%s: projected ids are well-formed, injective, and shared by each call and its result",
    (profile) => {
      fc.assert(
        fc.property(historyArbitrary(), (history) => {
          const result = renderTranscript(history, profile);
          const calls = emittedCalls(result);
          for (const call of calls) expect(isWellFormedId(call.id, result.diagnostics.idFormat)).toBe(true);
          expect(new Set(calls.map((call) => call.id)).size).toBe(calls.length);
          expect(new Set(calls.map((call) => call.canonicalId)).size).toBe(calls.length);
          for (const call of calls) {
            expect(result.ids.toCanonical.get(call.id)).toBe(call.canonicalId);
            expect(result.ids.toProjected.get(call.canonicalId)).toBe(call.id);
          }
          result.messages.forEach((message, index) => {
            if (message.role !== "tool_results") return;
            const previous = result.messages[index - 1];
            expect(previous?.role).toBe("assistant");
            const callIds =
              previous?.role === "assistant"
                ? previous.content.flatMap((part) => (part.type === "tool_call" ? [part.id] : []))
                : [];
            expect(message.results.map((entry) => entry.id)).toEqual(callIds);
          });
        }),
        { numRuns: RUNS },
      );
    },
  );

  it.each(PROFILE_NAMES)(
    "%s: every call is emitted once with its first complete result, else its first error, else its recorded one, else [INTERRUPTED]",
    (profile) => {
      fc.assert(
        fc.property(historyArbitrary(), (history) => {
          const { callOrder, names, expected } = expectedOutcomes(history);
          const result = renderTranscript(history, profile);
          expect(emittedCalls(result).map((call) => call.canonicalId)).toEqual(callOrder);
          const results = result.messages.flatMap((message) =>
            message.role === "tool_results" ? message.results : [],
          );
          expect(results.map((entry) => entry.canonicalId)).toEqual(callOrder);
          for (const entry of results) {
            const recorded = expected(entry.canonicalId);
            if (recorded === undefined) {
              expect(entry.synthetic).toBe(true);
              expect(entry.content.startsWith(`[INTERRUPTED] Tool "${names.get(entry.canonicalId)}"`)).toBe(
                true,
              );
            } else {
              expect(entry.synthetic).toBe(false);
              expect(entry.status).toBe(recorded.status);
              expect(entry.content).toBe(recorded.result.trim() === "" ? EMPTY_RESULT_TEXT : recorded.result);
            }
          }
        }),
        { numRuns: RUNS },
      );
    },
  );

  it.each(PROFILE_NAMES)(
    "%s: a redacted block's data goes only to Anthropic, for the model that made it, and only as redacted_thinking",
    (profile) => {
      fc.assert(
        fc.property(historyArbitrary(), (history) => {
          for (const thinking of THINKING_SETTINGS) {
            const { request } = providerVerdict(history, profile, { thinking });
            const sent = JSON.stringify(request.messages).match(/redacted:[^"]*/g) ?? [];
            const asBlocks = request.messages.flatMap((message) =>
              Array.isArray(message.content)
                ? (message.content as { type?: string; data?: string }[]).flatMap((block) =>
                    block.type === "redacted_thinking" ? [block.data] : [],
                  )
                : [],
            );
            expect(sent).toEqual(asBlocks);
            const own = `redacted:anthropic:${RENDER_MODEL}:`;
            for (const data of sent) expect(profile === "anthropic" && data.startsWith(own)).toBe(true);
          }
        }),
        { numRuns: RUNS },
      );
    },
  );

  it("renders the same history identically every time, for every profile", () => {
    fc.assert(
      fc.property(historyArbitrary(), fc.boolean(), (history, thinking) => {
        for (const profile of PROFILE_NAMES) {
          const first = renderProviderRequest(history, profile, { thinking, model: RENDER_MODEL });
          const second = renderProviderRequest(structuredClone(history), profile, {
            thinking,
            model: RENDER_MODEL,
          });
          expect(second.messages).toEqual(first.messages);
          expect(second.diagnostics).toEqual(first.diagnostics);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it.each(PROFILE_NAMES)(
    "%s: under a small budget whole turns are dropped, the newest is kept, and the request still passes",
    (profile) => {
      fc.assert(
        fc.property(
          historyArbitrary({ maxTurns: 6 }),
          fc.integer({ min: 1, max: 150 }),
          (history, budgetTokens) => {
            const { request, rejection } = providerVerdict(history, profile, {
              thinking: true,
              budgetTokens,
            });
            expect(rejectionMessage(rejection)).toBeNull();

            const { budget } = request.diagnostics;
            const newestUserText = history.findLast(
              (block) => block.kind === "text" && block.role === "user" && block.text.trim() !== "",
            );
            if (newestUserText?.kind === "text") {
              expect(JSON.stringify(request.messages)).toContain(
                JSON.stringify(newestUserText.text).slice(1, -1),
              );
            }
            if (budget.droppedTurns > 0) {
              expect(budget.summary).toMatch(
                /^\[Earlier conversation omitted: \d+ turns?, \d+ tool calls?\]$/,
              );
              expect(JSON.stringify(request.messages[0])).toContain("[Earlier conversation omitted:");
              const emitted = new Set(request.diagnostics.emittedCalls.map((call) => call.canonicalId));
              for (const dropped of budget.droppedCallIds) expect(emitted.has(dropped)).toBe(false);
            }
            // Calls and results are dropped together: each emitted call has exactly one emitted result.
            const resultIds = request.diagnostics.emittedResults.map((entry) => entry.canonicalId);
            expect(resultIds).toEqual(request.diagnostics.emittedCalls.map((call) => call.canonicalId));
          },
        ),
        { numRuns: RUNS },
      );
    },
  );
});
