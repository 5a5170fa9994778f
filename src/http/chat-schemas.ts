/**
 * zod schemas of `/api/chat` (docs/http-api.md#chat-routes-ai-sdk-usechat): the body the AI SDK's
 * `DefaultChatTransport` posts (`{id, messages, trigger, messageId?, …}`; fields a transport's `body`
 * option adds are allowed), the chat id, and the turn's message read from it: the last message, the
 * user's, its text parts joined.
 */
import { z } from "@hono/zod-openapi";
import { idSchema, MAX_MESSAGE_CHARS, modelSchema } from "./schemas.js";

/** Longest chat id (a chat is a reins session with that id). */
export const MAX_CHAT_ID_CHARS = 64;

export const chatIdSchema = z
  .string()
  .min(1, "must not be empty")
  .max(MAX_CHAT_ID_CHARS, `must be at most ${MAX_CHAT_ID_CHARS} characters`)
  .regex(/^[A-Za-z0-9_-]+$/, "must contain only letters, digits, '_' and '-'");

export const chatParamsSchema = z.strictObject({ id: chatIdSchema });

const uiMessagePartSchema = z.looseObject({ type: z.string() });
const uiMessageSchema = z.looseObject({
  id: z.string(),
  role: z.enum(["system", "user", "assistant"]),
  parts: z.array(uiMessagePartSchema),
});
type UiMessageInput = z.infer<typeof uiMessageSchema>;

/** The last message's text parts joined by a line break, when it is the user's; else undefined. */
export function newUserMessageText(messages: readonly UiMessageInput[]): string | undefined {
  const newest = messages.at(-1);
  if (newest?.role !== "user") return undefined;
  const texts = newest.parts.flatMap((part) =>
    part.type === "text" && typeof part["text"] === "string" ? [part["text"]] : [],
  );
  const text = texts.join("\n");
  return text.trim() === "" ? undefined : text;
}

export const chatBodySchema = z
  .looseObject({
    id: chatIdSchema,
    messages: z.array(uiMessageSchema).min(1, "must hold at least the new user message"),
    trigger: z.enum(["submit-message", "regenerate-message"]),
    messageId: z.string().optional(),
    /** Through the transport's `body` option: the agent a new chat runs as, a provider, a model. */
    agentId: idSchema.optional(),
    provider: z.string().min(1).max(64).optional(),
    model: modelSchema.optional(),
  })
  .superRefine((body, context) => {
    if (body.trigger === "regenerate-message") {
      context.addIssue({
        code: "custom",
        path: ["trigger"],
        message:
          "regenerate-message is not supported: the server keeps the chat's history; send the message again",
      });
      return;
    }
    if (body.messageId !== undefined) {
      context.addIssue({
        code: "custom",
        path: ["messageId"],
        message:
          "a message id is sent to edit an earlier message (or for the AI SDK's approval round " +
          "trip), which is not supported: the server keeps the chat's history; send a new message, " +
          "or start a new chat",
      });
      return;
    }
    if (body.messages.at(-1)?.role !== "user") {
      context.addIssue({
        code: "custom",
        path: ["messages"],
        message:
          "the last message must be the user's new message (the server keeps the history; the AI SDK's " +
          "approval and client-side tool round trips are not supported)",
      });
      return;
    }
    const text = newUserMessageText(body.messages);
    if (text === undefined) {
      context.addIssue({
        code: "custom",
        path: ["messages"],
        message: "the new user message has no text part (it is the turn's message)",
      });
    } else if (text.length > MAX_MESSAGE_CHARS) {
      context.addIssue({
        code: "custom",
        path: ["messages"],
        message: `the newest user message's text must be at most ${MAX_MESSAGE_CHARS} characters`,
      });
    }
  })
  .openapi("ChatRequest", {
    description:
      "The body of the AI SDK's DefaultChatTransport. Only the last message, the user's new one, is read " +
      "(its text parts joined): the server keeps the chat's history, so `messageId` (an edit) is refused.",
  });
