/**
 * A minimal chat page on reins with the AI SDK's useChat (see README.md next to it). Not built by the
 * project's CI: copy it into a React app that has `ai` and `@ai-sdk/react` (6.x) installed.
 */
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport } from "ai";
import { useState } from "react";

/** Where reins listens; the server must list this page's origin in CORS_ORIGINS. */
const REINS_CHAT_URL = "http://localhost:8787/api/chat";

export function Chat({ chatId, token }: { chatId: string; token?: string }) {
  const [input, setInput] = useState("");
  const [note, setNote] = useState("");
  const { messages, sendMessage, status, stop } = useChat({
    // the chat id is the reins session: the server keeps the history and reads only the new message
    id: chatId,
    // resume a turn still running after a reload (GET /api/chat/:id/stream; 204 when none runs);
    // start reins with ON_DISCONNECT=continue, or the reload's dropped stream ends the turn first
    resume: true,
    transport: new DefaultChatTransport({
      api: REINS_CHAT_URL,
      headers: token ? { Authorization: `Bearer ${token}` } : undefined,
      // optional: the agent a new chat runs as (one of GET /api/agents)
      // body: { agentId: "default" },
      // only the newest message: the server keeps the history, and a long chat's whole history would
      // outgrow reins' body limit (1 MiB: 413 body_too_large on every later message)
      prepareSendMessagesRequest: ({ id, messages, body, trigger, messageId }) => ({
        body: { ...body, id, messages: messages.slice(-1), trigger, messageId },
      }),
    }),
    onData: (part) => {
      // transient parts: data-tool-progress, data-tool-retry, data-model-retry, data-tool-approval, …
      if (part.type === "data-tool-progress") setNote(`tool still running: ${JSON.stringify(part.data)}`);
    },
  });

  const stopTurn = async () => {
    stop(); // closes this page's stream
    // and stops the turn on the server (otherwise ON_DISCONNECT decides what happens to it)
    await fetch(`${REINS_CHAT_URL}/${encodeURIComponent(chatId)}/stop`, {
      method: "POST",
      headers: token ? { Authorization: `Bearer ${token}` } : {},
    });
  };

  return (
    <div>
      {messages.map((message) => (
        <div key={message.id}>
          <strong>{message.role}</strong>
          {message.parts.map((part, index) => {
            switch (part.type) {
              case "text":
                return <p key={index}>{part.text}</p>;
              case "reasoning":
                return <pre key={index}>{part.text}</pre>;
              case "dynamic-tool": // reins' tools are not declared on the client
                return (
                  <pre key={index}>
                    {part.toolName} {JSON.stringify(part.input)} → {part.state}
                    {part.state === "output-available" ? `\n${String(part.output)}` : ""}
                    {part.state === "output-error" ? `\n${part.errorText}` : ""}
                  </pre>
                );
              default:
                return null;
            }
          })}
        </div>
      ))}
      {status === "streaming" && note ? <small>{note}</small> : null}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (input.trim() === "") return;
          void sendMessage({ text: input });
          setInput("");
        }}
      >
        <input value={input} onChange={(event) => setInput(event.target.value)} />
        <button type="submit" disabled={status !== "ready"}>
          Send
        </button>
        {status === "streaming" || status === "submitted" ? (
          <button type="button" onClick={() => void stopTurn()}>
            Stop
          </button>
        ) : null}
      </form>
    </div>
  );
}
