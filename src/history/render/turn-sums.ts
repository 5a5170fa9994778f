/**
 * Per-turn sums of a transcript, as the budget and the counts read them: for each turn (the first
 * message, then every user message) the estimated tokens, tool calls and synthetic results before it,
 * the estimate of its first message, and where the provider messages after that first message begin.
 * Kept per turn, not per message; the committed messages' sums grow with the session, the tail's are
 * rebuilt by each render.
 */
import { countToolCalls, estimateMessageTokens, type BudgetView } from "./budget.js";
import type { RenderedMessage, RenderedUserMessage } from "./types.js";

/** Running totals, and the per-turn lists. */
export class TurnSums {
  readonly starts: number[] = [];
  readonly tokensBefore: number[] = [];
  readonly firstTokens: number[] = [];
  readonly callsBefore: number[] = [];
  readonly syntheticBefore: number[] = [];
  readonly providerAfterFirst: number[] = [];
  tokens = 0;
  calls = 0;
  synthetic = 0;

  /** Adds message `index`; true when it starts a turn. */
  add(message: RenderedMessage, index: number): boolean {
    const cost = estimateMessageTokens(message);
    const startsTurn = index === 0 || message.role === "user";
    if (startsTurn) {
      this.starts.push(index);
      this.tokensBefore.push(this.tokens);
      this.firstTokens.push(cost);
      this.callsBefore.push(this.calls);
      this.syntheticBefore.push(this.synthetic);
    }
    this.tokens += cost;
    this.calls += countToolCalls(message);
    this.synthetic += countSynthetic(message);
    return startsTurn;
  }

  /** Empty sums continuing these totals (for the uncommitted tail). */
  continued(): TurnSums {
    const sums = new TurnSums();
    sums.tokens = this.tokens;
    sums.calls = this.calls;
    sums.synthetic = this.synthetic;
    return sums;
  }
}

type TurnList = "starts" | "tokensBefore" | "firstTokens" | "callsBefore" | "syntheticBefore";

/** Entry `turn` of a per-turn list, committed turns first, then the tail's. */
export function turnValue(committed: TurnSums, tail: TurnSums, list: TurnList, turn: number): number {
  const committedTurns = committed.starts.length;
  return turn < committedTurns ? committed[list][turn]! : tail[list][turn - committedTurns]!;
}

export function budgetView(
  items: readonly RenderedMessage[],
  committed: TurnSums,
  tail: TurnSums,
): BudgetView {
  const value = (list: TurnList) => (turn: number) => turnValue(committed, tail, list, turn);
  const turnStart = value("starts");
  return {
    totalTokens: tail.tokens,
    turnCount: committed.starts.length + tail.starts.length,
    turnStart,
    tokensBeforeTurn: value("tokensBefore"),
    firstMessageTokens: value("firstTokens"),
    callsBeforeTurn: value("callsBefore"),
    userText: (turn) => (items[turnStart(turn)] as RenderedUserMessage).text,
  };
}

function countSynthetic(message: RenderedMessage): number {
  if (message.role !== "tool_results") return 0;
  let synthetic = 0;
  for (const result of message.results) if (result.synthetic) synthetic++;
  return synthetic;
}
