/**
 * Rendered messages → OpenAI Chat Completions `messages`, for OpenAI and the compatible providers
 * (Kimi, Mistral). Shape translation only: an assistant message with tool calls carries `content:
 * null` when it has no text; each result becomes one `tool` message; the profile decides whether tool
 * messages carry `name` (Mistral, Kimi) and whether `reasoning_content` is sent (Kimi with thinking).
 */
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionToolMessageParam,
} from "openai/resources/chat/completions";
import type { ProviderProfile } from "./profiles.js";
import type { RenderedAssistantMessage, RenderedMessage } from "./types.js";

/** Kimi's extension: the reasoning that led to an assistant message's tool calls. */
export type AssistantMessageWithReasoning = ChatCompletionAssistantMessageParam & {
  reasoning_content?: string;
};
/** Mistral's and Kimi's extension: the function name on a tool message. */
export type ToolMessageWithName = ChatCompletionToolMessageParam & { name?: string };
export type OpenAIChatMessage =
  ChatCompletionMessageParam | AssistantMessageWithReasoning | ToolMessageWithName;

const TEXT_PART_SEPARATOR = "\n\n";

export function toOpenAIChatMessages(
  messages: readonly RenderedMessage[],
  profile: Pick<ProviderProfile, "quirks">,
): ChatCompletionMessageParam[] {
  const request: ChatCompletionMessageParam[] = [];
  for (const message of messages) pushOpenAIChatMessages(request, message, profile);
  return request;
}

/** Appends the Chat Completions form of `message` (one message, or one per tool result) to `request`. */
export function pushOpenAIChatMessages(
  request: ChatCompletionMessageParam[],
  message: RenderedMessage,
  profile: Pick<ProviderProfile, "quirks">,
): void {
  if (message.role === "user") {
    request.push({ role: "user", content: message.text });
  } else if (message.role === "assistant") {
    request.push(assistantMessage(message));
  } else {
    for (const result of message.results) {
      const tool: ToolMessageWithName = { role: "tool", tool_call_id: result.id, content: result.content };
      if (profile.quirks.toolResultName) tool.name = result.name;
      request.push(tool);
    }
  }
}

function assistantMessage(message: RenderedAssistantMessage): AssistantMessageWithReasoning {
  let text: string | null = null;
  let callCount = 0;
  for (const part of message.content) {
    if (part.type === "text") text = text === null ? part.text : text + TEXT_PART_SEPARATOR + part.text;
    else if (part.type === "tool_call") callCount++;
  }
  const assistant: AssistantMessageWithReasoning = { role: "assistant", content: text };
  if (callCount > 0) {
    const calls = new Array<ChatCompletionMessageFunctionToolCall>(callCount);
    let at = 0;
    for (const part of message.content) {
      if (part.type !== "tool_call") continue;
      calls[at++] = {
        id: part.id,
        type: "function",
        function: { name: part.name, arguments: part.arguments },
      };
    }
    assistant.tool_calls = calls;
  }
  if (message.reasoningContent !== undefined) assistant.reasoning_content = message.reasoningContent;
  return assistant;
}
