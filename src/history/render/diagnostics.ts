/** An empty diagnostics record for one render; each pass of the renderer appends what it decided. */
import type { ProviderProfile } from "./profiles.js";
import type { RenderDiagnostics } from "./types.js";

export function createDiagnostics(
  profile: ProviderProfile,
  thinkingRequested: boolean,
  budgetTokens: number,
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
      budgetTokens,
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
