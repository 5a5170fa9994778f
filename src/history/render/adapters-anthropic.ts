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
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index]!;
    if (message.role === "user") {
      request.push({ role: "user", content: [textBlock(message.text)] });
    } else if (message.role === "assistant") {
      request.push({ role: "assistant", content: assistantContent(message) });
    } else {
      const content: ContentBlockParam[] = toolResultBlocks(message);
      const next = messages[index + 1];
      if (next?.role === "user") {
        content.push(textBlock(next.text));
        index++;
      }
      request.push({ role: "user", content });
    }
  }
  return request;
}

function textBlock(text: string): TextBlockParam {
  return { type: "text", text };
}

function assistantContent(message: RenderedAssistantMessage): ContentBlockParam[] {
  return message.content.map((part): ContentBlockParam => {
    if (part.type === "text") return textBlock(part.text);
    if (part.type === "thinking") return { type: "thinking", thinking: part.text, signature: part.signature };
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
