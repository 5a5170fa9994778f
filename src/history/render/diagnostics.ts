/**
 * The diagnostics of one render. Counting happens during the render (`RenderCounts`); the lists —
 * several of them one entry per call — are assembled here only when somebody reads them, from what
 * the passes recorded: the first pass's index as of the render, the walk's logs, the budget's choice,
 * and the kept messages, on which the thinking settlement and the shape quirks are re-run to collect
 * their decisions along with the emitted ids.
 */
import type { ProviderProfile } from "./profiles.js";
import { applyShapeQuirks, settleSignedThinking } from "./shape.js";
import type { BudgetCut, RenderBudget } from "./budget.js";
import type { IdMaps, RenderDiagnostics, RenderedMessage } from "./types.js";

export function createDiagnostics(
  profile: ProviderProfile,
  thinkingRequested: boolean,
  budget: RenderBudget,
): RenderDiagnostics {
  return {
    profile: profile.name,
    format: profile.format,
    idFormat: profile.idFormat,
    thinking: { requested: thinkingRequested, effective: thinkingRequested },
    callIdsSeen: [],
    emittedCalls: [],
    emittedResults: [],
    idProjection: { kept: 0, generated: 0 },
    dedupe: [],
    duplicateCalls: [],
    syntheticResults: [],
    orphanResults: [],
    resultsBeforeCall: [],
    movedBlocks: [],
    droppedThinking: [],
    droppedText: [],
    splitText: [],
    renamedTools: [],
    coercedInputs: [],
    emptyResults: [],
    insertedMessages: [],
    reordered: false,
    budget: {
      budgetTokens: budget.budgetTokens,
      instructionTokens: budget.instructionTokens,
      estimatedTokens: 0,
      renderedTokens: 0,
      droppedTurns: 0,
      droppedMessages: 0,
      droppedToolCalls: 0,
      droppedCallIds: [],
      overBudget: false,
    },
  };
}

/** What the passes before the budget decided, as lists (see `TranscriptState.record`). */
export type PassRecords = Pick<
  RenderDiagnostics,
  | "callIdsSeen"
  | "idProjection"
  | "dedupe"
  | "duplicateCalls"
  | "orphanResults"
  | "resultsBeforeCall"
  | "movedBlocks"
  | "droppedThinking"
  | "droppedText"
  | "renamedTools"
  | "coercedInputs"
  | "emptyResults"
  | "reordered"
>;

export type DiagnosticsSource = {
  profile: ProviderProfile;
  thinkingRequested: boolean;
  budget: RenderBudget;
  cut: BudgetCut;
  /** Builds the lists the passes recorded. */
  records: () => PassRecords;
  /** The messages the budget kept, before thinking settlement and shape quirks. */
  keptMessages: () => RenderedMessage[];
  /** The canonical ids of the calls the budget dropped. */
  droppedCallIds: () => string[];
};

export type LazyDiagnostics = { diagnostics: () => RenderDiagnostics; ids: () => IdMaps };

/** Diagnostics and ids built on first use, once. */
export function lazyDiagnostics(source: DiagnosticsSource): LazyDiagnostics {
  let built: { diagnostics: RenderDiagnostics; ids: IdMaps } | undefined;
  const build = () => (built ??= buildDiagnostics(source));
  return { diagnostics: () => build().diagnostics, ids: () => build().ids };
}

function buildDiagnostics(source: DiagnosticsSource): { diagnostics: RenderDiagnostics; ids: IdMaps } {
  const { profile, cut } = source;
  const diagnostics = createDiagnostics(profile, source.thinkingRequested, source.budget);
  Object.assign(diagnostics, source.records());
  diagnostics.budget = {
    budgetTokens: source.budget.budgetTokens,
    instructionTokens: source.budget.instructionTokens,
    estimatedTokens: cut.estimatedTokens,
    renderedTokens: cut.renderedTokens,
    droppedTurns: cut.droppedTurns,
    droppedMessages: cut.droppedMessages,
    droppedToolCalls: cut.droppedToolCalls,
    droppedCallIds: source.droppedCallIds(),
    ...(cut.summary === undefined ? {} : { summary: cut.summary }),
    overBudget: cut.overBudget,
  };
  const settled = settleSignedThinking(source.keptMessages(), profile, diagnostics);
  const messages = applyShapeQuirks(settled, profile, diagnostics);
  return { diagnostics, ids: recordEmitted(messages, diagnostics) };
}

/** Fills the emitted call and result lists and returns the id maps of the emitted calls. */
export function recordEmitted(
  messages: readonly RenderedMessage[],
  diagnostics: RenderDiagnostics | undefined,
): IdMaps {
  const toProjected = new Map<string, string>();
  const toCanonical = new Map<string, string>();
  for (const message of messages) {
    if (message.role === "assistant") {
      for (const part of message.content) {
        if (part.type !== "tool_call") continue;
        diagnostics?.emittedCalls.push({
          canonicalId: part.canonicalId,
          projectedId: part.id,
          name: part.name,
        });
        toProjected.set(part.canonicalId, part.id);
        toCanonical.set(part.id, part.canonicalId);
      }
    } else if (message.role === "tool_results" && diagnostics !== undefined) {
      for (const result of message.results) {
        if (result.synthetic) {
          diagnostics.syntheticResults.push({
            callId: result.canonicalId,
            projectedId: result.id,
            name: result.name,
            reason: "no_result_recorded",
          });
        }
        diagnostics.emittedResults.push({
          canonicalId: result.canonicalId,
          projectedId: result.id,
          status: result.status,
          synthetic: result.synthetic,
        });
      }
    }
  }
  return { toProjected, toCanonical };
}
