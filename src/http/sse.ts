/**
 * The SSE writer: a `text/event-stream` Response that opens with a `retry:` field (how long an
 * EventSource waits before reconnecting) and whose events are written as `id`, `event`, `data`
 * lines, with a `ping` after every `pingIntervalMs` of silence (re-armed on each write, so an active
 * stream sends none). `onClose` runs once, whether we end the stream, the client goes away, or
 * `open` throws (then no stream is returned) — served by Node, once the response is over: what was
 * written has left for the client or the connection is gone, so a stream holds its place in the
 * principal's limit for as long as it holds the server's memory.
 *
 * A writer that can wait (a replay of the log) waits until the client has taken what it was sent
 * (`backlogged`, `drained`), so a client that does not read makes the server hold no more than that.
 *
 * Served by @hono/node-server, the frames skip the Response's body stream once the response's head is
 * out: they are written straight to the Node response, so an event leaves with the tick that sent it
 * (the stream's pump would write it only after everything else that tick does, a turn's end included),
 * and closing ends the response at once, which flushes the last frames. The Node response is corked
 * from the request until the end of the event-loop turn that made it, so the head, the retry field and
 * the events committed in that turn (a new turn's first batch) leave in one write, not three.
 */
import type { HttpBindings } from "@hono/node-server";
import type { Context } from "hono";
import type { ServerResponse } from "node:http";
import type { TurnEvent } from "../events.js";
import { framedResponse } from "./frame-guard.js";

export const SSE_HEADERS = Object.freeze({
  "Content-Type": "text/event-stream",
  "Cache-Control": "no-cache",
  Connection: "keep-alive",
  "X-Accel-Buffering": "no",
} as const);

/**
 * The reconnection delay every stream announces (docs/events.md#replay-and-reconnection): a browser's
 * EventSource otherwise uses its browser's own default (3 s in Chromium). 2 s resumes a dropped stream soon
 * without hammering the server; after a turn's end the reconnect gets a 204, which stops it.
 */
export const SSE_RETRY_MS = 2_000;

export type SseWriter = {
  send(event: TurnEvent): void;
  /** Writes a frame as it is (a stream in another format than reins' events). */
  write(frame: string): void;
  close(): void;
  readonly closed: boolean;
  /** True while the client has not taken what was written: a writer that can wait should (`drained`). */
  readonly backlogged: boolean;
  /** Settles once the client has taken what was written, or the stream is closed. */
  drained(): Promise<void>;
};

export type SseOptions = {
  pingIntervalMs: number;
  now?: () => number;
  /** Called with the writer once the stream exists. */
  open(writer: SseWriter): void;
  /** Called once when the stream ends for any reason. */
  onClose(): void;
  /** Another wire format on the same writer: its headers, first frame and keep-alive frame. */
  format?: { headers: Readonly<Record<string, string>>; preamble: string; ping: () => string };
  /** The Node response this Response will be written to, when there is one (`nodeResponseOf`). */
  nodeResponse?: NodeResponse;
};

/**
 * What a HEAD request of an event stream gets: the stream's status and headers, and no stream. Hono
 * answers HEAD with the GET handler and drops the body unread, so a stream opened for it would never
 * learn that its client went away: it would follow the turn (which then does not end when its real
 * clients leave) and hold a place in the principal's stream limit until the turn's end.
 */
function streamHeadResponse(headers: Readonly<Record<string, string>>): Response {
  return framedResponse(null, { status: 200, headers });
}

/**
 * A stream route's answer once the stream's place is taken (at the limit, taking it threw the 429): the
 * stream `open` makes, or for HEAD the answer a GET would get, the place given back at once.
 */
export function streamOrHead(
  method: string,
  release: () => void,
  open: (release: () => void) => Response,
  headers: Readonly<Record<string, string>> = SSE_HEADERS,
): Response {
  if (method !== "HEAD") return open(release);
  release();
  return streamHeadResponse(headers);
}

/** What the writer uses of the Node response @hono/node-server writes a Response to. */
export type NodeResponse = Pick<
  ServerResponse,
  "headersSent" | "write" | "end" | "cork" | "uncork" | "writableNeedDrain" | "once" | "off"
>;

/** The Node response behind `context`: there is one when @hono/node-server serves it, none in-process. */
export function nodeResponseOf(context: Context): NodeResponse | undefined {
  return (context.env as Partial<HttpBindings> | undefined)?.outgoing;
}

/** Formats one turn event as an SSE frame. */
export function formatEvent(event: TurnEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** The field that opens every stream: an EventSource reconnects after `retryMs`. */
export function formatRetry(retryMs: number): string {
  return `retry: ${retryMs}\n\n`;
}

export function formatPing(at: number): string {
  return `event: ping\ndata: ${JSON.stringify({ at })}\n\n`;
}

/**
 * Corks `nodeResponse` until the end of this event-loop turn (`setImmediate`): what is written to it
 * until then — the head, the retry field, the frames of writes committed in this turn (their flush was
 * scheduled before this) — is sent in one write. The immediate is left to run even when the stream
 * closes first: it comes within this turn anyway, and ending a Node response has already uncorked it.
 */
function corkUntilTurnEnds(nodeResponse: NodeResponse): void {
  nodeResponse.cork();
  setImmediate(() => nodeResponse.uncork());
}

export function sseResponse(options: SseOptions): Response {
  const encoder = new TextEncoder();
  const now = options.now ?? Date.now;
  let pingTimer: NodeJS.Timeout | undefined;
  let closed = false;
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** Set once the Node response's head is out: from then on frames are written to it directly. */
  let direct: NodeResponse | undefined;
  /** Writers waiting for the server to read the body stream again (before `direct`). */
  const waitingForRead: (() => void)[] = [];
  const { nodeResponse } = options;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    options.onClose();
  };
  if (nodeResponse) {
    corkUntilTurnEnds(nodeResponse);
    nodeResponse.once("close", release);
  }

  const wakeReaders = () => {
    for (const wake of waitingForRead.splice(0)) wake();
  };
  const end = () => {
    if (closed) return;
    closed = true;
    clearTimeout(pingTimer);
    wakeReaders();
    // served by Node, the place is given back when the response is over (its "close")
    if (!nodeResponse) release();
  };
  const write = (text: string) => {
    if (closed) return;
    if (direct) direct.write(text);
    else if (controllerRef) controllerRef.enqueue(encoder.encode(text));
    else return;
    armPing();
  };
  const drained = (): Promise<void> => {
    if (closed) return Promise.resolve();
    const response = direct;
    if (response === undefined) return new Promise((resolve) => waitingForRead.push(resolve));
    if (!response.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        response.off("drain", done);
        response.off("close", done);
        resolve();
      };
      response.once("drain", done);
      response.once("close", done);
    });
  };
  const ping = options.format?.ping ?? (() => formatPing(now()));
  const armPing = () => {
    clearTimeout(pingTimer);
    pingTimer = setTimeout(() => write(ping()), options.pingIntervalMs);
  };
  const writer: SseWriter = {
    send: (event) => write(formatEvent(event)),
    write,
    close: () => {
      if (closed) return;
      end();
      // ending the Node response uncorks its socket: the last frames leave now, not after this tick's other work
      direct?.end();
      controllerRef?.close();
    },
    get closed() {
      return closed;
    },
    get backlogged() {
      if (closed) return false;
      if (direct) return direct.writableNeedDrain;
      return (controllerRef?.desiredSize ?? 0) < 0;
    },
    drained,
  };

  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controllerRef = controller;
        const preamble = options.format?.preamble ?? formatRetry(SSE_RETRY_MS);
        if (preamble !== "") write(preamble);
        try {
          options.open(writer);
        } catch (error) {
          // no stream after all: the ping timer and whatever `onClose` releases must not outlive it
          end();
          throw error;
        }
      },
      /**
       * The server reads and the stream has nothing queued: every frame enqueued so far has been handed
       * to the Node response. Once that response's head is out, later frames go to it directly.
       */
      pull() {
        if (nodeResponse?.headersSent) direct = nodeResponse;
        wakeReaders();
      },
      cancel() {
        end();
      },
    },
    {
      // no read ahead: `pull` runs only when the server is waiting for a frame
      highWaterMark: 0,
    },
  );
  // made with the frame headers: frameGuard need not read them back (frame-guard.ts)
  return framedResponse(body, { status: 200, headers: options.format?.headers ?? SSE_HEADERS });
}
