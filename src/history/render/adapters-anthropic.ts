/**
 * Rendered messages → Anthropic Messages `messages` (shape translation only; the renderer already
 * made the transcript valid). Tool results become a user message whose `tool_result` blocks come
 * first; the user text that follows them is merged into that same message, since roles alternate.
 */
import type {
  ContentBlockParam,
  MessageParam,
  TextBlockParam,
  ToolResultBlockParam,
} from "@anthropic-ai/sdk/resources/messages";
import type { RenderedAssistantMessage, RenderedMessage, RenderedToolResultsMessage } from "./types.js";

export function toAnthropicRequestMessages(messages: readonly RenderedMessage[]): MessageParam[] {
  const request: MessageParam[] = [];
  let previousRole: RenderedMessage["role"] | undefined;
  for (const message of messages) {
    pushAnthropicMessage(request, message, previousRole);
    previousRole = message.role;
  }
  return request;
}

/**
 * Appends the Anthropic form of `message` to `request`, whose last entry is the form of the message
 * before it (`previousRole`): user text right after tool results joins their user message, replacing
 * that entry with a merged copy (the entry itself is never modified).
 */
export function pushAnthropicMessage(
  request: MessageParam[],
  message: RenderedMessage,
  previousRole: RenderedMessage["role"] | undefined,
): void {
  if (message.role === "user") {
    const last = request[request.length - 1];
    if (previousRole === "tool_results" && last !== undefined && Array.isArray(last.content)) {
      request[request.length - 1] = { role: "user", content: [...last.content, textBlock(message.text)] };
    } else {
      request.push({ role: "user", content: [textBlock(message.text)] });
    }
  } else if (message.role === "assistant") {
    request.push({ role: "assistant", content: assistantContent(message) });
  } else {
    request.push({ role: "user", content: toolResultBlocks(message) });
  }
}

function textBlock(text: string): TextBlockParam {
  return { type: "text", text };
}

function assistantContent(message: RenderedAssistantMessage): ContentBlockParam[] {
  return message.content.map((part): ContentBlockParam => {
    if (part.type === "text") return textBlock(part.text);
    if (part.type === "thinking") return { type: "thinking", thinking: part.text, signature: part.signature };
    if (part.type === "redacted_thinking") return { type: "redacted_thinking", data: part.data };
    return { type: "tool_use", id: part.id, name: part.name, input: part.input };
  });
}

function toolResultBlocks(message: RenderedToolResultsMessage): ToolResultBlockParam[] {
  return message.results.map((result): ToolResultBlockParam => {
    const block: ToolResultBlockParam = {
      type: "tool_result",
      tool_use_id: result.id,
      content: result.content,
    };
    if (result.isError) block.is_error = true;
    return block;
  });
}
