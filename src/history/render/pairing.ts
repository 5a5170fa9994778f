/**
 * The renderer's first pass: which tool call each canonical id means and which recorded result answers
 * it. One scan, maps keyed by canonical id, no assumption about order: a result may come before its
 * call, be recorded several times, or answer nothing.
 *
 * - The first tool_call block of an id is the call; later ones are dropped (never duplicated).
 * - Among results of an id, a real one (`complete`, `error`) beats a synthetic one (`cancelled`,
 *   `timeout`, `interrupted`); among reals, and among synthetics, the first recorded wins.
 * - Results whose id has no call anywhere are orphans: dropped.
 */
import type { HistoryBlock, ToolCallBlock, ToolResponseBlock, ToolResponseStatus } from "../model.js";
import type { DedupeReason, RenderDiagnostics } from "./types.js";

export type CallEntry = { block: HistoryBlock & ToolCallBlock; index: number };
export type ResultEntry = { block: HistoryBlock & ToolResponseBlock; index: number };

export type HistoryIndex = {
  /** The first tool_call block of each canonical id. */
  calls: Map<string, CallEntry>;
  /** The winning result of each canonical id that has a call. */
  results: Map<string, ResultEntry>;
};

type Decision = {
  keptPosition: number;
  keptStatus: ToolResponseStatus;
  droppedPosition: number;
  droppedStatus: ToolResponseStatus;
  reason: DedupeReason;
};

export function isRealStatus(status: ToolResponseStatus): boolean {
  return status === "complete" || status === "error";
}

export function indexHistory(blocks: readonly HistoryBlock[], diagnostics: RenderDiagnostics): HistoryIndex {
  const calls = new Map<string, CallEntry>();
  const winners = new Map<string, ResultEntry>();
  const decisions = new Map<string, Decision[]>();

  for (let index = 0; index < blocks.length; index++) {
    const block = blocks[index]!;
    if (block.kind === "tool_call") {
      if (calls.has(block.callId)) {
        diagnostics.duplicateCalls.push({ callId: block.callId, position: block.position });
      } else {
        calls.set(block.callId, { block, index });
        diagnostics.callIdsSeen.push(block.callId);
      }
      continue;
    }
    if (block.kind !== "tool_response") continue;

    const current = winners.get(block.callId);
    if (!current) {
      winners.set(block.callId, { block, index });
      continue;
    }
    const candidateIsReal = isRealStatus(block.status);
    const currentIsReal = isRealStatus(current.block.status);
    const replace = candidateIsReal && !currentIsReal;
    const kept = replace ? block : current.block;
    const dropped = replace ? current.block : block;
    const reason: DedupeReason = replace
      ? "real_beats_synthetic"
      : currentIsReal
        ? "first_real_wins"
        : "first_synthetic_wins";
    if (replace) winners.set(block.callId, { block, index });
    const decision: Decision = {
      keptPosition: kept.position,
      keptStatus: kept.status,
      droppedPosition: dropped.position,
      droppedStatus: dropped.status,
      reason,
    };
    const list = decisions.get(block.callId);
    if (list) list.push(decision);
    else decisions.set(block.callId, [decision]);
  }

  const results = new Map<string, ResultEntry>();
  const orphans = new Map<string, number[]>();
  for (const [callId, winner] of winners) {
    if (calls.has(callId)) {
      results.set(callId, winner);
      for (const decision of decisions.get(callId) ?? []) diagnostics.dedupe.push({ callId, ...decision });
      if (winner.index < calls.get(callId)!.index) {
        diagnostics.resultsBeforeCall.push({ callId, position: winner.block.position });
      }
    } else {
      orphans.set(callId, []);
    }
  }
  if (orphans.size > 0) {
    // Orphans are rare: their positions are gathered in a second scan instead of tracking every id's.
    for (const block of blocks) {
      if (block.kind === "tool_response") orphans.get(block.callId)?.push(block.position);
    }
    for (const [callId, positions] of orphans) diagnostics.orphanResults.push({ callId, positions });
  }
  return { calls, results };
}
