/**
 * The context budget (docs/semantics.md#transcript-integrity): when the rendered transcript's estimated size
 * exceeds the budget, whole older turns are dropped — a turn being a user message and everything after it
 * until the next one, so a call is never separated from its results — and replaced by one summary line at the
 * start of the first kept user message (a separate user message would break role alternation). The newest
 * turn is always kept, even when it alone is over budget. Estimates are ceil(chars / 4).
 *
 * The choice reads a transcript through a `BudgetView` of per-turn prefix sums, so an incremental
 * render that keeps them decides in O(log turns) plus the few turns it tries, not O(messages).
 */
import type { BudgetReport, RenderedMessage, RenderedUserMessage } from "./types.js";
import { omittedTurnsSummary } from "./wording.js";

export const CHARACTERS_PER_TOKEN = 4;
const SUMMARY_SEPARATOR = "\n\n";

export type BudgetOutcome = BudgetReport & { messages: RenderedMessage[] };

/**
 * The budget of one render: the whole of it, and what the agent's instructions take of it first. The
 * transcript is cut to fit the rest (`transcriptTokens`).
 */
export type RenderBudget = { budgetTokens: number; instructionTokens: number };

/**
 * What the instructions leave the transcript: below zero when they alone exceed the budget, so that
 * every transcript, an empty one too, is over budget then.
 */
export function transcriptTokens(budget: RenderBudget): number {
  return budget.budgetTokens - budget.instructionTokens;
}

/**
 * A transcript as the budget sees it, turn by turn: the first turn starts at message 0, every other at
 * a user message. Token counts are estimates; the `turn` arguments are 0 … turnCount − 1.
 */
export type BudgetView = {
  totalTokens: number;
  turnCount: number;
  /** The index of the turn's first message. */
  turnStart(turn: number): number;
  /** Estimated tokens of every message before the turn's first message, and of that message. */
  tokensBeforeTurn(turn: number): number;
  firstMessageTokens(turn: number): number;
  /** Tool calls in the messages before the turn. */
  callsBeforeTurn(turn: number): number;
  /** The text of the user message that starts the turn (turn ≥ 1). */
  userText(turn: number): string;
};

/** What the budget decided, without the list of dropped call ids (see `droppedCallIdsOf`). */
export type BudgetCut = Omit<BudgetReport, "droppedCallIds"> & {
  /** When turns were dropped: the first kept user message, with the summary line in front. */
  firstKept?: RenderedUserMessage;
};

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
      else if (part.type === "redacted_thinking") characters += part.data.length;
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

/**
 * Drops as few whole turns, oldest first, as bring the transcript within `budgetTokens` (counting the
 * summary line that replaces them); every turn but the newest when none does.
 */
export function chooseBudgetCut(view: BudgetView, budgetTokens: number): BudgetCut {
  const total = view.totalTokens;
  const unchanged: BudgetCut = {
    estimatedTokens: total,
    renderedTokens: total,
    droppedTurns: 0,
    droppedMessages: 0,
    droppedToolCalls: 0,
    overBudget: total > budgetTokens,
  };
  if (total <= budgetTokens || view.turnCount < 2) return unchanged;

  // Tokens left after dropping `turns` turns, not counting the first kept user message: they only
  // shrink as more turns go, so no smaller count can fit once they alone exceed the budget.
  const restAfter = (turns: number) => total - view.tokensBeforeTurn(turns) - view.firstMessageTokens(turns);
  const lastCandidate = view.turnCount - 1;
  let low = 1;
  let high = lastCandidate;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (restAfter(middle) <= budgetTokens) high = middle;
    else low = middle + 1;
  }
  let droppedTurns = low;
  for (; droppedTurns < lastCandidate; droppedTurns++) {
    if (restAfter(droppedTurns) + firstKeptTokens(view, droppedTurns) <= budgetTokens) break;
  }

  const droppedToolCalls = view.callsBeforeTurn(droppedTurns);
  const summary = omittedTurnsSummary(droppedTurns, droppedToolCalls);
  const renderedTokens = restAfter(droppedTurns) + firstKeptTokens(view, droppedTurns);
  return {
    estimatedTokens: total,
    renderedTokens,
    droppedTurns,
    droppedMessages: view.turnStart(droppedTurns),
    droppedToolCalls,
    summary,
    overBudget: renderedTokens > budgetTokens,
    firstKept: { role: "user", text: summary + SUMMARY_SEPARATOR + view.userText(droppedTurns) },
  };
}

function firstKeptTokens(view: BudgetView, droppedTurns: number): number {
  const summary = omittedTurnsSummary(droppedTurns, view.callsBeforeTurn(droppedTurns));
  return estimateTextTokens(summary.length + SUMMARY_SEPARATOR.length + view.userText(droppedTurns).length);
}

/** The canonical ids of the calls in `messages`, in order. */
export function callIdsOf(messages: readonly RenderedMessage[]): string[] {
  const callIds: string[] = [];
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    for (const part of message.content) if (part.type === "tool_call") callIds.push(part.canonicalId);
  }
  return callIds;
}

export function countToolCalls(message: RenderedMessage): number {
  if (message.role !== "assistant") return 0;
  let calls = 0;
  for (const part of message.content) if (part.type === "tool_call") calls++;
  return calls;
}

/** A `BudgetView` of a plain list of messages. */
export function budgetViewOf(messages: readonly RenderedMessage[]): BudgetView {
  const starts: number[] = [];
  const tokensBefore: number[] = [];
  const firstTokens: number[] = [];
  const callsBefore: number[] = [];
  let tokens = 0;
  let calls = 0;
  messages.forEach((message, index) => {
    const cost = estimateMessageTokens(message);
    if (index === 0 || message.role === "user") {
      starts.push(index);
      tokensBefore.push(tokens);
      firstTokens.push(cost);
      callsBefore.push(calls);
    }
    tokens += cost;
    calls += countToolCalls(message);
  });
  return {
    totalTokens: tokens,
    turnCount: starts.length,
    turnStart: (turn) => starts[turn]!,
    tokensBeforeTurn: (turn) => tokensBefore[turn]!,
    firstMessageTokens: (turn) => firstTokens[turn]!,
    callsBeforeTurn: (turn) => callsBefore[turn]!,
    userText: (turn) => (messages[starts[turn]!] as RenderedUserMessage).text,
  };
}

export function applyBudget(messages: RenderedMessage[], budgetTokens: number): BudgetOutcome {
  const { firstKept, ...cut } = chooseBudgetCut(budgetViewOf(messages), budgetTokens);
  if (firstKept === undefined) return { ...cut, droppedCallIds: [], messages };
  return {
    ...cut,
    droppedCallIds: callIdsOf(messages.slice(0, cut.droppedMessages)),
    messages: [firstKept, ...messages.slice(cut.droppedMessages + 1)],
  };
}
