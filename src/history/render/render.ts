/**
 * `renderTranscript(history, profile, options)`: the canonical history as one provider accepts it
 * (DESIGN.md §5.6 points 1–6). Pure and deterministic; O(n) — every lookup goes through a map keyed by
 * canonical id. Passes:
 *
 * 1. index — the call of each canonical id and its winning result; duplicates and orphans noted;
 * 2. project ids and sanitize tool names, once per call;
 * 3. assemble — neutral messages, each call's results right after its assistant message;
 * 4. budget — older whole turns dropped behind a summary line;
 * 5. shape — signed-thinking settlement and the profile's role quirks;
 * 6. diagnostics — the emitted call and result ids.
 */
import type { HistoryBlock } from "../model.js";
import { assembleMessages } from "./assemble.js";
import { applyBudget } from "./budget.js";
import { createDiagnostics } from "./diagnostics.js";
import { projectCallIds, type ProjectableCall } from "./ids.js";
import { indexHistory } from "./pairing.js";
import { getProfile, type ProviderProfile } from "./profiles.js";
import { applyShapeQuirks, settleSignedThinking } from "./shape.js";
import { createToolNameSanitizer } from "./tool-names.js";
import type { RenderDiagnostics, RenderOptions, RenderResult, RenderedMessage } from "./types.js";

export function renderTranscript(
  history: readonly HistoryBlock[],
  profile: ProviderProfile | string,
  options: RenderOptions = {},
): RenderResult {
  const resolved = typeof profile === "string" ? getProfile(profile) : profile;
  const budgetTokens = options.budgetTokens ?? resolved.contextBudgetTokens;
  const diagnostics = createDiagnostics(resolved, options.thinking === true, budgetTokens);

  const blocks = inPositionOrder(history, diagnostics);
  const index = indexHistory(blocks, diagnostics);

  const sanitize = createToolNameSanitizer(resolved.toolNamePattern);
  const names = new Map<string, string>();
  const projectable: ProjectableCall[] = [];
  for (const { block } of index.calls.values()) {
    const name = sanitize(block.name);
    if (name !== block.name)
      diagnostics.renamedTools.push({ callId: block.callId, from: block.name, to: name });
    names.set(block.callId, name);
    projectable.push({ callId: block.callId, providerCallId: block.providerCallId, name });
  }
  const projection = projectCallIds(projectable, resolved.idFormat);
  diagnostics.idProjection = { kept: projection.kept, generated: projection.generated };

  const assembled = assembleMessages(blocks, {
    profile: resolved,
    thinking: options.thinking === true,
    model: options.model,
    index,
    projection,
    names,
    diagnostics,
  });

  const budget = applyBudget(assembled, budgetTokens);
  diagnostics.budget = {
    budgetTokens,
    estimatedTokens: budget.estimatedTokens,
    renderedTokens: budget.renderedTokens,
    droppedTurns: budget.droppedTurns,
    droppedMessages: budget.droppedMessages,
    droppedToolCalls: budget.droppedToolCalls,
    droppedCallIds: budget.droppedCallIds,
    ...(budget.summary === undefined ? {} : { summary: budget.summary }),
    overBudget: budget.overBudget,
  };

  const settled = settleSignedThinking(budget.messages, resolved, diagnostics);
  const messages = applyShapeQuirks(settled, resolved, diagnostics);
  return { messages, diagnostics, ids: recordEmitted(messages, diagnostics) };
}

/** The history in position order: as given when it already is (the store's case), else stably sorted. */
function inPositionOrder(
  history: readonly HistoryBlock[],
  diagnostics: RenderDiagnostics,
): readonly HistoryBlock[] {
  for (let index = 1; index < history.length; index++) {
    if (history[index]!.position < history[index - 1]!.position) {
      diagnostics.reordered = true;
      return [...history].sort((left, right) => left.position - right.position);
    }
  }
  return history;
}

function recordEmitted(
  messages: readonly RenderedMessage[],
  diagnostics: RenderDiagnostics,
): RenderResult["ids"] {
  const toProjected = new Map<string, string>();
  const toCanonical = new Map<string, string>();
  for (const message of messages) {
    if (message.role === "assistant") {
      for (const part of message.content) {
        if (part.type !== "tool_call") continue;
        diagnostics.emittedCalls.push({
          canonicalId: part.canonicalId,
          projectedId: part.id,
          name: part.name,
        });
        toProjected.set(part.canonicalId, part.id);
        toCanonical.set(part.id, part.canonicalId);
      }
    } else if (message.role === "tool_results") {
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
