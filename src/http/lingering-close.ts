/**
 * Closing a connection after answering before the request body was read (413), without resetting
 * it. Node ends a `Connection: close` response with `socket.destroySoon()`: FIN, then the socket is
 * destroyed at once. Whatever the client is still sending then reaches a closed socket, the kernel
 * answers with a reset, and a client that had not read the 413 yet loses it (ECONNRESET). Here the
 * socket lingers instead, the way nginx's lingering close does: after the response, FIN; the rest of
 * the body is read and dropped; the socket is destroyed when the client closes its side, or at the
 * latest after `LINGER_MS` or `LINGER_MAX_BYTES`, so a client that never stops cannot hold it.
 * The hook is that one socket's `destroySoon`, which Node's HTTP server calls for exactly this (and the
 * socket is not reused: the response says `Connection: close`).
 */
import type { IncomingMessage } from "node:http";

/** Longest time a socket lingers after its 413 for the client to finish sending and close. */
export const LINGER_MS = 10_000;
/** Most body bytes read and dropped after a 413 before the socket is dropped anyway. */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;

export type LingerLimits = { lingerMs: number; maxBytes: number };

/** Arranges for the connection of `incoming` to close cleanly once the response has been sent. */
export function lingerAfterResponse(
  incoming: IncomingMessage,
  limits: LingerLimits = { lingerMs: LINGER_MS, maxBytes: LINGER_MAX_BYTES },
): void {
  const socket = incoming.socket;
  if (socket.destroyed) return;

  let lingerTimer: NodeJS.Timeout | undefined;
  // Node calls this once the `Connection: close` response is written (and @hono/node-server again,
  // harmlessly, when its own drain gives up): half-close, drop the rest of the body, and let the
  // socket close when the client ends its side, or when the timer fires.
  socket.destroySoon = () => {
    if (socket.writable) socket.end();
    if (lingerTimer) return;
    lingerTimer = setTimeout(() => socket.destroy(), limits.lingerMs);
    lingerTimer.unref();
    dropBody(incoming, limits.maxBytes, () => socket.destroy());
  };
  socket.once("close", () => clearTimeout(lingerTimer));
}

/**
 * Reads the rest of a request body and drops it. The web stream over the body (created when the
 * request was) pauses it whenever nobody pulls, so its listener goes first.
 */
function dropBody(incoming: IncomingMessage, maxBytes: number, onTooMuch: () => void): void {
  incoming.removeAllListeners("data");
  let droppedBytes = 0;
  incoming.on("data", (chunk: Buffer) => {
    droppedBytes += chunk.length;
    if (droppedBytes > maxBytes) onTooMuch();
  });
  incoming.resume();
}
