/**
 * Reads Server-Sent Events from a response body: yields each message's `id`, `event` and `data` as
 * the stream delivers them (the `text/event-stream` rules: lines end in LF, CR or CRLF; a blank line
 * ends a message; `data` lines join with LF; comments and unknown fields are ignored), and the `retry`
 * the server asks for. Cancelling the iteration releases the body.
 */

export type SseMessage = { id?: string; event: string; data: string };
export type SseField = { kind: "message"; message: SseMessage } | { kind: "retry"; retryMs: number };

export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseField> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let id: string | undefined;
  let event = "";
  let data: string[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end: RegExpExecArray | null;
      // a lone CR at the end may be the first half of CRLF: wait for the next chunk
      while ((end = /\r\n|\n|\r(?!$)/.exec(buffer)) !== null) {
        const line = buffer.slice(0, end.index);
        buffer = buffer.slice(end.index + end[0].length);
        if (line === "") {
          if (data.length > 0)
            yield { kind: "message", message: { id, event: event || "message", data: data.join("\n") } };
          event = "";
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") data.push(value);
        else if (field === "event") event = value;
        else if (field === "id" && !value.includes("\0")) id = value;
        else if (field === "retry" && /^\d+$/.test(value)) yield { kind: "retry", retryMs: Number(value) };
      }
    }
  } finally {
    // on an early return (the consumer stopped, or an abort) the body must not stay open
    await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
