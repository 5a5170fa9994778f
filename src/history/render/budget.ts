/**
 * The context budget (DESIGN.md §5.6): when the rendered transcript's estimated size exceeds the
 * budget, whole older turns are dropped — a turn being a user message and everything after it until
 * the next one, so a call is never separated from its results — and replaced by one summary line at
 * the start of the first kept user message (a separate user message would break role alternation).
 * The newest turn is always kept, even when it alone is over budget. Estimates are ceil(chars / 4).
 */
import type { BudgetReport, RenderedMessage } from "./types.js";
import { omittedTurnsSummary } from "./wording.js";

export const CHARACTERS_PER_TOKEN = 4;
const SUMMARY_SEPARATOR = "\n\n";

export type BudgetOutcome = BudgetReport & { messages: RenderedMessage[] };

export function estimateTextTokens(characters: number): number {
  return Math.ceil(characters / CHARACTERS_PER_TOKEN);
}

/** Estimated tokens of one message: every string the provider will see, over four. */
export function estimateMessageTokens(message: RenderedMessage): number {
  let characters = 0;
  if (message.role === "user") {
    characters = message.text.length;
  } else if (message.role === "assistant") {
    characters = message.reasoningContent?.length ?? 0;
    for (const part of message.content) {
      if (part.type === "text") characters += part.text.length;
      else if (part.type === "thinking") characters += part.text.length + part.signature.length;
      else characters += part.id.length + part.name.length + part.arguments.length;
    }
  } else {
    for (const result of message.results) {
      characters += result.id.length + result.name.length + result.content.length;
    }
  }
  return estimateTextTokens(characters);
}

export function estimateTranscriptTokens(messages: readonly RenderedMessage[]): number {
  let total = 0;
  for (const message of messages) total += estimateMessageTokens(message);
  return total;
}

export function applyBudget(messages: RenderedMessage[], budgetTokens: number): BudgetOutcome {
  const costs = messages.map(estimateMessageTokens);
  let total = 0;
  for (const cost of costs) total += cost;
  const unchanged: BudgetOutcome = {
    messages,
    estimatedTokens: total,
    renderedTokens: total,
    droppedTurns: 0,
    droppedMessages: 0,
    droppedToolCalls: 0,
    droppedCallIds: [],
    overBudget: total > budgetTokens,
  };
  if (total <= budgetTokens) return unchanged;

  // Turn starts: every user message, and the start when the transcript opens with something else.
  const starts: number[] = [];
  for (let index = 0; index < messages.length; index++) {
    if (index === 0 || messages[index]!.role === "user") starts.push(index);
  }
  if (starts.length < 2) return unchanged;

  let remaining = total;
  let droppedTurns = 0;
  const droppedCallIds: string[] = [];
  let summary = "";
  let firstKeptText = "";
  let firstKeptCost = 0;
  for (let turn = 0; turn < starts.length - 1; turn++) {
    const end = starts[turn + 1]!;
    for (let index = starts[turn]!; index < end; index++) {
      remaining -= costs[index]!;
      const message = messages[index]!;
      if (message.role === "assistant") {
        for (const part of message.content)
          if (part.type === "tool_call") droppedCallIds.push(part.canonicalId);
      }
    }
    droppedTurns = turn + 1;
    const firstKept = messages[end] as Extract<RenderedMessage, { role: "user" }>;
    summary = omittedTurnsSummary(droppedTurns, droppedCallIds.length);
    firstKeptText = summary + SUMMARY_SEPARATOR + firstKept.text;
    firstKeptCost = estimateTextTokens(firstKeptText.length);
    if (remaining - costs[end]! + firstKeptCost <= budgetTokens) break;
  }

  const cut = starts[droppedTurns]!;
  const kept: RenderedMessage[] = [{ role: "user", text: firstKeptText }, ...messages.slice(cut + 1)];
  const renderedTokens = remaining - costs[cut]! + firstKeptCost;
  return {
    messages: kept,
    estimatedTokens: total,
    renderedTokens,
    droppedTurns,
    droppedMessages: cut,
    droppedToolCalls: droppedCallIds.length,
    droppedCallIds,
    summary,
    overBudget: renderedTokens > budgetTokens,
  };
}
