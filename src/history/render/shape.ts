/**
 * The renderer's last pass: provider quirks that depend on the final message order (after the budget).
 *
 * - Mistral: no text beside tool calls — the text moves into its own assistant message just before
 *   (when the message before is not an assistant's, so roles still alternate), else it is dropped;
 *   a user message never follows tool results — a short assistant line bridges them; the request ends
 *   with a user message or tool results — a short user line follows a final assistant message.
 * - Anthropic with thinking on: the assistant message whose tool calls the request answers must start
 *   with its signed (or redacted) thinking. When it has none (it came from another provider, or
 *   thinking was off when it was made), thinking cannot be enabled for this request: every thinking
 *   block is removed and `diagnostics.thinking.effective` says so.
 *
 * How one message is shaped depends only on the role of the message before it (shaping never changes
 * the role a message's output ends with), so an incremental render shapes each message once.
 */
import { withFields } from "../../objects.js";
import type { ProviderProfile, ShapeQuirks } from "./profiles.js";
import type {
  RenderDiagnostics,
  RenderedAssistantMessage,
  RenderedAssistantPart,
  RenderedMessage,
  RenderedThinkingPart,
} from "./types.js";
import { CONTINUE_TEXT, NO_REPLY_BRIDGE_TEXT } from "./wording.js";

export const THINKING_DISABLED_REASON =
  "the assistant message whose tool calls this request answers has no signed thinking from this provider and model; send the request with thinking disabled";

/** Whether any message needs reshaping for this profile. */
export function hasShapeQuirks(quirks: ShapeQuirks): boolean {
  return (
    !quirks.textBesideToolCalls || quirks.assistantBetweenToolResultsAndUser || quirks.lastMessageUserOrTool
  );
}

/** Whether shaping turns `message` into something else than itself. */
export function reshapes(
  message: RenderedMessage,
  previousRole: RenderedMessage["role"] | undefined,
  quirks: ShapeQuirks,
): boolean {
  if (message.role === "user") {
    return quirks.assistantBetweenToolResultsAndUser && previousRole === "tool_results";
  }
  return (
    message.role === "assistant" &&
    !quirks.textBesideToolCalls &&
    message.content.some((part) => part.type === "tool_call") &&
    message.content.some((part) => part.type === "text")
  );
}

/**
 * Appends `message`, shaped for `quirks`, to `shaped`. `previousRole` is the role of the message
 * before it in the transcript (undefined for the first). Decisions go to `diagnostics` when given;
 * `insertedMessages` indices count the messages of `shaped`.
 */
export function pushShaped(
  shaped: RenderedMessage[],
  message: RenderedMessage,
  previousRole: RenderedMessage["role"] | undefined,
  quirks: ShapeQuirks,
  diagnostics?: RenderDiagnostics,
): void {
  if (!reshapes(message, previousRole, quirks)) {
    shaped.push(message);
    return;
  }
  if (message.role === "assistant") {
    const { text, rest } = splitText(message.content);
    if (previousRole !== "assistant") {
      shaped.push({ role: "assistant", content: text });
      diagnostics?.splitText.push({
        callIds: rest.flatMap((part) => (part.type === "tool_call" ? [part.canonicalId] : [])),
      });
    } else {
      diagnostics?.droppedText.push(
        ...text.map(() => ({
          position: -1,
          role: "assistant" as const,
          reason: "beside_tool_calls" as const,
        })),
      );
    }
    shaped.push(withFields(message, { content: rest }));
    return;
  }
  if (message.role === "user") {
    diagnostics?.insertedMessages.push({
      index: shaped.length,
      role: "assistant",
      reason: "user_after_tool_results",
    });
    shaped.push({ role: "assistant", content: [{ type: "text", text: NO_REPLY_BRIDGE_TEXT }] });
  }
  shaped.push(message);
}

/** An assistant message's text parts and its other parts, in arrays of their final size. */
function splitText(content: readonly RenderedAssistantPart[]): {
  text: RenderedAssistantPart[];
  rest: RenderedAssistantPart[];
} {
  let textCount = 0;
  for (const part of content) if (part.type === "text") textCount++;
  const text = new Array<RenderedAssistantPart>(textCount);
  const rest = new Array<RenderedAssistantPart>(content.length - textCount);
  let textAt = 0;
  let restAt = 0;
  for (const part of content) {
    if (part.type === "text") text[textAt++] = part;
    else rest[restAt++] = part;
  }
  return { text, rest };
}

/** The user line that must end a transcript whose last message is `lastRole`, if the profile needs one. */
export function closingMessage(
  lastRole: RenderedMessage["role"] | undefined,
  quirks: ShapeQuirks,
): RenderedMessage | undefined {
  return quirks.lastMessageUserOrTool && lastRole === "assistant"
    ? { role: "user", text: CONTINUE_TEXT }
    : undefined;
}

export function applyShapeQuirks(
  messages: RenderedMessage[],
  profile: ProviderProfile,
  diagnostics: RenderDiagnostics,
): RenderedMessage[] {
  const { quirks } = profile;
  if (!hasShapeQuirks(quirks)) return messages;
  const shaped: RenderedMessage[] = [];
  let previousRole: RenderedMessage["role"] | undefined;
  for (const message of messages) {
    pushShaped(shaped, message, previousRole, quirks, diagnostics);
    previousRole = message.role;
  }
  const closing = closingMessage(shaped[shaped.length - 1]?.role, quirks);
  if (closing !== undefined) {
    diagnostics.insertedMessages.push({ index: shaped.length, role: "user", reason: "assistant_last" });
    shaped.push(closing);
  }
  return shaped;
}

/**
 * Whether signed thinking must be turned off for a request ending with `messages` (only the messages
 * from `from` on are looked at): the assistant message whose tool calls it answers has no thinking.
 */
export function mustDisableThinking(
  messages: readonly RenderedMessage[],
  profile: ProviderProfile,
  requested: boolean,
  from = 0,
): boolean {
  if (profile.thinking !== "signed-blocks" || !requested) return false;
  const answered = answeredAssistantIndex(messages, from);
  if (answered === -1) return false;
  const first = (messages[answered] as RenderedAssistantMessage).content[0];
  return first === undefined || !isThinkingPart(first);
}

function isThinkingPart(part: RenderedAssistantPart): part is RenderedThinkingPart {
  return part.type === "thinking" || part.type === "redacted_thinking";
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
  if (!mustDisableThinking(messages, profile, diagnostics.thinking.requested)) return messages;
  diagnostics.thinking.effective = false;
  diagnostics.thinking.reason = THINKING_DISABLED_REASON;
  return messages.map((candidate) => {
    if (candidate.role !== "assistant" || !candidate.content.some(isThinkingPart)) return candidate;
    for (const part of candidate.content) {
      if (isThinkingPart(part))
        diagnostics.droppedThinking.push({ position: -1, reason: "thinking_disabled" });
    }
    return withFields(candidate, { content: candidate.content.filter((part) => !isThinkingPart(part)) });
  });
}

/**
 * The index of the assistant message whose tool calls the request answers: the one before the last
 * tool-results message, when nothing but user text follows those results. -1 when there is none.
 */
function answeredAssistantIndex(messages: readonly RenderedMessage[], from: number): number {
  for (let index = messages.length - 1; index >= from; index--) {
    const role = messages[index]!.role;
    if (role === "tool_results") return index - 1;
    if (role === "assistant") return -1;
  }
  return -1;
}
