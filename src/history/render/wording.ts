/**
 * The exact text of everything the renderer writes itself. The model reads it, so each line says what
 * happened; tests and clients match on the bracketed prefixes.
 */

/** The result of a call that has no recorded result (a crash, a lost write, an old history). */
export function missingResultText(toolName: string): string {
  return `[INTERRUPTED] Tool "${toolName}" has no recorded result: it was interrupted before it returned, so its outcome is unknown.`;
}

/** Stands in for an empty result: no provider accepts empty or whitespace-only text content. */
export const EMPTY_RESULT_TEXT = "(no output)";

/**
 * Bridges tool results and a following user message for providers that forbid `user` after `tool`
 * (Mistral): the turn ended before the model answered the results.
 */
export const NO_REPLY_BRIDGE_TEXT = "[No reply: the turn ended before these tool results were answered.]";

/** Ends a transcript whose last message is the assistant's, for providers that need a user or tool last. */
export const CONTINUE_TEXT = "[Continue.]";

/** The one line that replaces turns dropped to fit the context budget. */
export function omittedTurnsSummary(turns: number, toolCalls: number): string {
  const turnWord = turns === 1 ? "turn" : "turns";
  const callWord = toolCalls === 1 ? "tool call" : "tool calls";
  return `[Earlier conversation omitted: ${turns} ${turnWord}, ${toolCalls} ${callWord}]`;
}
