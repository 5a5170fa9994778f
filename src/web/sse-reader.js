// @ts-check
/**
 * A `text/event-stream` parser over a fetch response body. The page reads SSE with `fetch` rather than
 * `EventSource` because `EventSource` cannot send `Authorization: Bearer …`.
 */

/**
 * @typedef {{id: string | undefined, event: string, data: string}} SseMessage
 */

/**
 * Reads a `text/event-stream` body and calls `onMessage` for each complete message (spec parsing:
 * `data` lines joined with "\n", comments ignored, CR, LF and CRLF line ends). Resolves when the stream
 * ends; rejects when it fails or is aborted.
 * @param {ReadableStream<Uint8Array>} body
 * @param {(message: SseMessage) => void} onMessage
 */
export async function readSse(body, onMessage) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  /** @type {string | undefined} */
  let id;
  let eventType = "";
  /** @type {string[]} */
  let dataLines = [];

  /** @param {string} line */
  const processLine = (line) => {
    if (line === "") {
      if (dataLines.length > 0) onMessage({ id, event: eventType || "message", data: dataLines.join("\n") });
      id = undefined;
      eventType = "";
      dataLines = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") dataLines.push(value);
    else if (field === "event") eventType = value;
    else if (field === "id" && !value.includes("\0")) id = value;
  };

  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (;;) {
        const match = /\r\n|\r|\n/.exec(buffer);
        if (!match) break;
        // a CR at the very end may be the first half of a CRLF split across chunks
        if (match[0] === "\r" && match.index === buffer.length - 1) break;
        processLine(buffer.slice(0, match.index));
        buffer = buffer.slice(match.index + match[0].length);
      }
    }
    buffer += decoder.decode();
    if (buffer !== "") processLine(buffer.replace(/\r$/, ""));
  } finally {
    reader.releaseLock();
  }
}
