/**
 * The renderer's last pass: provider quirks that depend on the final message order (after the budget).
 *
 * - Mistral: no text beside tool calls — the text moves into its own assistant message just before
 *   (when the message before is not an assistant's, so roles still alternate), else it is dropped;
 *   a user message never follows tool results — a short assistant line bridges them; the request ends
 *   with a user message or tool results — a short user line follows a final assistant message.
 * - Anthropic with thinking on: the assistant message whose tool calls the request answers must start
 *   with its signed thinking. When it has none (it came from another provider, or thinking was off
 *   when it was made), thinking cannot be enabled for this request: every thinking block is removed
 *   and `diagnostics.thinking.effective` says so.
 */
import type { ProviderProfile } from "./profiles.js";
import type { RenderDiagnostics, RenderedAssistantMessage, RenderedMessage } from "./types.js";
import { CONTINUE_TEXT, NO_REPLY_BRIDGE_TEXT } from "./wording.js";

export function applyShapeQuirks(
  messages: RenderedMessage[],
  profile: ProviderProfile,
  diagnostics: RenderDiagnostics,
): RenderedMessage[] {
  const { quirks } = profile;
  if (
    quirks.textBesideToolCalls &&
    !quirks.assistantBetweenToolResultsAndUser &&
    !quirks.lastMessageUserOrTool
  ) {
    return messages;
  }
  const shaped: RenderedMessage[] = [];
  for (const message of messages) {
    const previous = shaped[shaped.length - 1];
    if (
      message.role === "assistant" &&
      !quirks.textBesideToolCalls &&
      message.content.some((part) => part.type === "tool_call") &&
      message.content.some((part) => part.type === "text")
    ) {
      const callIds: string[] = [];
      const text: RenderedAssistantMessage["content"] = [];
      const rest: RenderedAssistantMessage["content"] = [];
      for (const part of message.content) {
        if (part.type === "text") text.push(part);
        else rest.push(part);
        if (part.type === "tool_call") callIds.push(part.canonicalId);
      }
      if (previous?.role !== "assistant") {
        shaped.push({ role: "assistant", content: text });
        diagnostics.splitText.push({ callIds });
      } else {
        diagnostics.droppedText.push(
          ...text.map(() => ({
            position: -1,
            role: "assistant" as const,
            reason: "beside_tool_calls" as const,
          })),
        );
      }
      shaped.push({ ...message, content: rest });
      continue;
    }
    if (
      message.role === "user" &&
      quirks.assistantBetweenToolResultsAndUser &&
      previous?.role === "tool_results"
    ) {
      diagnostics.insertedMessages.push({
        index: shaped.length,
        role: "assistant",
        reason: "user_after_tool_results",
      });
      shaped.push({ role: "assistant", content: [{ type: "text", text: NO_REPLY_BRIDGE_TEXT }] });
    }
    shaped.push(message);
  }
  if (quirks.lastMessageUserOrTool && shaped[shaped.length - 1]?.role === "assistant") {
    diagnostics.insertedMessages.push({ index: shaped.length, role: "user", reason: "assistant_last" });
    shaped.push({ role: "user", text: CONTINUE_TEXT });
  }
  return shaped;
}

/**
 * Decides whether signed thinking can stay enabled (Anthropic) and removes every thinking block when
 * it cannot. Returns the messages to send (the same array when nothing changed).
 */
export function settleSignedThinking(
  messages: RenderedMessage[],
  profile: ProviderProfile,
  diagnostics: RenderDiagnostics,
): RenderedMessage[] {
  if (profile.thinking !== "signed-blocks" || !diagnostics.thinking.requested) return messages;
  const answered = answeredAssistantIndex(messages);
  if (answered === -1) return messages;
  const message = messages[answered] as RenderedAssistantMessage;
  if (message.content[0]?.type === "thinking") return messages;

  diagnostics.thinking.effective = false;
  diagnostics.thinking.reason =
    "the assistant message whose tool calls this request answers has no signed thinking from this provider and model; send the request with thinking disabled";
  return messages.map((candidate) => {
    if (candidate.role !== "assistant" || !candidate.content.some((part) => part.type === "thinking")) {
      return candidate;
    }
    for (const part of candidate.content) {
      if (part.type === "thinking")
        diagnostics.droppedThinking.push({ position: -1, reason: "thinking_disabled" });
    }
    return { ...candidate, content: candidate.content.filter((part) => part.type !== "thinking") };
  });
}

/**
 * The index of the assistant message whose tool calls the request answers: the one before the last
 * tool-results message, when nothing but user text follows those results. -1 when there is none.
 */
function answeredAssistantIndex(messages: readonly RenderedMessage[]): number {
  for (let index = messages.length - 1; index >= 0; index--) {
    const role = messages[index]!.role;
    if (role === "tool_results") return index - 1;
    if (role === "assistant") return -1;
  }
  return -1;
}
