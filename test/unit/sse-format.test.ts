/**
 * The SSE writer (docs/events.md, docs/events.md#replay-and-reconnection): exact frame bytes, the `retry:`
 * field that opens every stream, keep-alive pings after silence (fake timers), headers, a close callback
 * that runs exactly once however the stream ends, and, served by Node, frames written straight to the
 * response, the head leaving with the first events, the close callback held until the response is over,
 * and a writer told when its client lags.
 */
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { EventEmitter } from "node:events";
import type { AddressInfo, Socket } from "node:net";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import {
  SSE_RETRY_MS,
  formatEvent,
  formatPing,
  formatRetry,
  nodeResponseOf,
  sseResponse,
  type NodeResponse,
  type SseWriter,
} from "../../src/http/sse.js";

const PING_INTERVAL_MS = 1000;

const textDelta = (seq: number, text: string): TurnEvent => ({
  type: "text_delta",
  text,
  turnId: "turn_1",
  seq,
  at: 1_700_000_000_000 + seq,
});

/** What every stream starts with: an EventSource's reconnection delay. */
const RETRY_FIELD = "retry: 2000\n\n";

describe("formatEvent / formatPing / formatRetry", () => {
  it("writes id, event and data lines and a blank line", () => {
    expect(formatEvent(textDelta(1, "hi"))).toBe(
      'id: 1\nevent: text_delta\ndata: {"type":"text_delta","text":"hi","turnId":"turn_1","seq":1,"at":1700000000001}\n\n',
    );
  });

  it("keeps a multi-line payload on one data line", () => {
    const frame = formatEvent(textDelta(7, "line one\nline two\r\n"));
    expect(frame.split("\n")).toEqual([
      "id: 7",
      "event: text_delta",
      'data: {"type":"text_delta","text":"line one\\nline two\\r\\n","turnId":"turn_1","seq":7,"at":1700000000007}',
      "",
      "",
    ]);
  });

  it("writes a ping without an id", () => {
    expect(formatPing(42)).toBe('event: ping\ndata: {"at":42}\n\n');
  });

  it("writes the reconnection delay as a retry field alone (no event for a client to dispatch)", () => {
    expect(SSE_RETRY_MS).toBe(2000);
    expect(formatRetry(SSE_RETRY_MS)).toBe(RETRY_FIELD);
  });
});

/** Opens an SSE response and reads it chunk by chunk, recording what arrived. */
function openStream(nodeResponse?: NodeResponse) {
  let writer: SseWriter | undefined;
  let closes = 0;
  const response = sseResponse({
    pingIntervalMs: PING_INTERVAL_MS,
    now: () => Date.now(),
    open: (opened) => (writer = opened),
    onClose: () => closes++,
    nodeResponse,
  });
  if (!response.body) throw new Error("no body");
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const chunks: string[] = [];
  let ended = false;
  const pump = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(decoder.decode(value));
    }
    ended = true;
  })().catch(() => {});
  if (!writer) throw new Error("open was not called");
  return {
    response,
    writer,
    reader,
    chunks,
    pump,
    closes: () => closes,
    ended: () => ended,
  };
}

describe("sseResponse", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("sends the SSE headers", () => {
    const { response, writer } = openStream();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(response.headers.get("cache-control")).toBe("no-cache");
    expect(response.headers.get("x-accel-buffering")).toBe("no");
    writer.close();
  });

  it("opens the stream with the retry field at once, before any event", async () => {
    const { writer, chunks } = openStream();
    await vi.advanceTimersByTimeAsync(0);
    expect(chunks).toEqual([RETRY_FIELD]);
    writer.close();
  });

  it("writes events as they are sent, after the retry field", async () => {
    const { writer, chunks, pump } = openStream();
    writer.send(textDelta(1, "a"));
    writer.send(textDelta(2, "b"));
    writer.close();
    await pump;
    expect(chunks.join("")).toBe(
      RETRY_FIELD + formatEvent(textDelta(1, "a")) + formatEvent(textDelta(2, "b")),
    );
  });

  it("sends a ping after pingIntervalMs of silence, not before", async () => {
    const { writer, chunks } = openStream();
    await vi.advanceTimersByTimeAsync(PING_INTERVAL_MS - 1);
    expect(chunks).toEqual([RETRY_FIELD]);
    await vi.advanceTimersByTimeAsync(1);
    expect(chunks).toEqual([RETRY_FIELD, formatPing(PING_INTERVAL_MS)]);
    // and again after another interval of silence
    await vi.advanceTimersByTimeAsync(PING_INTERVAL_MS - 1);
    expect(chunks).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(chunks).toEqual([RETRY_FIELD, formatPing(PING_INTERVAL_MS), formatPing(2 * PING_INTERVAL_MS)]);
    writer.close();
  });

  it("re-arms the ping on every event, so an active stream sends none", async () => {
    const { writer, chunks } = openStream();
    for (let seq = 1; seq <= 5; seq++) {
      await vi.advanceTimersByTimeAsync(PING_INTERVAL_MS - 1);
      writer.send(textDelta(seq, String(seq)));
    }
    await vi.advanceTimersByTimeAsync(0);
    expect(chunks.join("")).not.toContain("event: ping");
    const lastEventAt = 5 * (PING_INTERVAL_MS - 1);
    await vi.advanceTimersByTimeAsync(PING_INTERVAL_MS - 1);
    expect(chunks.join("")).not.toContain("event: ping");
    await vi.advanceTimersByTimeAsync(1);
    expect(chunks.at(-1)).toBe(formatPing(lastEventAt + PING_INTERVAL_MS));
    writer.close();
  });

  it("runs onClose once when we close the stream, and stops pinging", async () => {
    const { writer, reader, closes, pump, ended, chunks } = openStream();
    writer.close();
    writer.close();
    expect(writer.closed).toBe(true);
    await pump;
    expect(ended()).toBe(true);
    await reader.cancel();
    expect(closes()).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
    writer.send(textDelta(1, "late"));
    await vi.advanceTimersByTimeAsync(10 * PING_INTERVAL_MS);
    expect(chunks).toEqual([RETRY_FIELD]);
  });

  it("runs onClose once when the reader cancels, and stops pinging", async () => {
    const { writer, reader, closes, chunks } = openStream();
    writer.send(textDelta(1, "a"));
    await vi.advanceTimersByTimeAsync(0);
    await reader.cancel();
    expect(closes()).toBe(1);
    expect(writer.closed).toBe(true);
    writer.close();
    expect(closes()).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10 * PING_INTERVAL_MS);
    expect(chunks).toEqual([RETRY_FIELD, formatEvent(textDelta(1, "a"))]);
  });
});

/**
 * A Node response as @hono/node-server hands it over: what is written to it directly, whether it ended,
 * how far it is corked, and whether its client lags (`state.lagging`, set by the test). It emits "close"
 * when it ends (its client had everything) unless `closeOnEnd` is false.
 */
function fakeNodeResponse(headersSent: boolean, closeOnEnd = true) {
  const written: string[] = [];
  let ends = 0;
  let corks = 0;
  const emitter = new EventEmitter();
  const state = { lagging: false };
  const response = Object.assign(emitter, {
    headersSent,
    cork: () => {
      corks++;
    },
    uncork: () => {
      corks--;
    },
    write: (chunk: string) => {
      written.push(chunk);
      return true;
    },
    end: () => {
      ends++;
      if (closeOnEnd) emitter.emit("close");
      return response;
    },
  });
  // read when asked (Object.assign would copy a getter's value once)
  Object.defineProperty(response, "writableNeedDrain", { get: () => state.lagging });
  return {
    response: response as unknown as NodeResponse,
    emitter,
    state,
    written,
    ends: () => ends,
    corks: () => corks,
  };
}

describe("sseResponse served by Node", () => {
  it("writes frames straight to the Node response once the server reads with its head out", async () => {
    const node = fakeNodeResponse(true);
    const { writer, chunks, pump, ended, closes } = openStream(node.response);
    writer.send(textDelta(1, "a"));
    // what was sent before the server first read goes through the body stream, in order
    await vi.waitFor(() => expect(chunks).toEqual([RETRY_FIELD, formatEvent(textDelta(1, "a"))]));
    writer.send(textDelta(2, "b"));
    writer.send(textDelta(3, "c"));
    // written in the same tick, with no hop through the stream
    expect(node.written).toEqual([formatEvent(textDelta(2, "b")), formatEvent(textDelta(3, "c"))]);
    writer.close();
    expect(node.ends()).toBe(1);
    await pump;
    expect(ended()).toBe(true);
    expect(closes()).toBe(1);
    expect(chunks).toHaveLength(2);
    writer.send(textDelta(4, "late"));
    expect(node.written).toHaveLength(2);
  });

  it("keeps to the body stream while the Node response's head is not out", async () => {
    const node = fakeNodeResponse(false);
    const { writer, chunks, pump } = openStream(node.response);
    await vi.waitFor(() => expect(chunks).toEqual([RETRY_FIELD]));
    writer.send(textDelta(1, "a"));
    writer.close();
    await pump;
    expect(chunks.join("")).toBe(RETRY_FIELD + formatEvent(textDelta(1, "a")));
    expect(node.written).toEqual([]);
    expect(node.ends()).toBe(0);
  });

  it("sends pings to the Node response after silence, and none once closed", async () => {
    vi.useFakeTimers({ now: 0 });
    try {
      const node = fakeNodeResponse(true);
      const { writer, chunks } = openStream(node.response);
      await vi.advanceTimersByTimeAsync(0);
      expect(chunks).toEqual([RETRY_FIELD]);
      await vi.advanceTimersByTimeAsync(PING_INTERVAL_MS);
      expect(node.written).toEqual([formatPing(PING_INTERVAL_MS)]);
      writer.close();
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("runs onClose once when the server cancels (the client went away)", async () => {
    const node = fakeNodeResponse(true);
    const { writer, reader, closes, chunks } = openStream(node.response);
    await vi.waitFor(() => expect(chunks).toEqual([RETRY_FIELD]));
    writer.send(textDelta(1, "a"));
    node.emitter.emit("close");
    await reader.cancel();
    expect(closes()).toBe(1);
    expect(writer.closed).toBe(true);
    writer.send(textDelta(2, "late"));
    expect(node.written).toEqual([formatEvent(textDelta(1, "a"))]);
  });
});

describe("sseResponse served by Node, with a client that lags", () => {
  it("holds onClose (the stream's place) until the response is over, not until its end was written", async () => {
    const node = fakeNodeResponse(true, false);
    const { writer, chunks, closes } = openStream(node.response);
    await vi.waitFor(() => expect(chunks).toEqual([RETRY_FIELD]));
    writer.send(textDelta(1, "a"));
    writer.close();
    expect(node.ends()).toBe(1);
    expect(closes()).toBe(0);
    node.emitter.emit("close");
    expect(closes()).toBe(1);
  });

  it("tells a writer that its client lags, and when it has caught up", async () => {
    const node = fakeNodeResponse(true);
    const { writer, chunks } = openStream(node.response);
    // the server has read the body stream with the head out: frames now go to the response
    writer.send(textDelta(1, "a"));
    await vi.waitFor(() => expect(chunks).toEqual([RETRY_FIELD, formatEvent(textDelta(1, "a"))]));
    expect(writer.backlogged).toBe(false);
    node.state.lagging = true;
    expect(writer.backlogged).toBe(true);
    let caughtUp = false;
    const drained = writer.drained().then(() => (caughtUp = true));
    await Promise.resolve();
    expect(caughtUp).toBe(false);
    node.state.lagging = false;
    node.emitter.emit("drain");
    await drained;
    // the wait leaves no listener behind (a replay waits once per page)
    expect(node.emitter.listenerCount("drain")).toBe(0);
    expect(node.emitter.listenerCount("close")).toBe(1);
    writer.close();
  });
});

describe("sseResponse served by @hono/node-server on a real socket", () => {
  /**
   * Serves one SSE route whose events come from a flush scheduled before the response was made, as a
   * new turn's first committed batch is, and records each write the server's socket makes.
   */
  async function serveAndRecordWrites() {
    const app = new Hono();
    app.get("/stream", (context) => {
      let writer: SseWriter | undefined;
      // the store's flush of this turn: scheduled when the turn started, before its stream was made
      setImmediate(() => {
        writer?.send(textDelta(1, "a"));
        writer?.send(textDelta(2, "b"));
      });
      return sseResponse({
        pingIntervalMs: 60_000,
        open: (opened) => {
          writer = opened;
          setTimeout(() => opened.close(), 20);
        },
        onClose: () => {},
        nodeResponse: nodeResponseOf(context),
      });
    });
    const socketWrites: string[] = [];
    const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
    server.on("connection", (socket: Socket) => {
      // what reaches the socket's handle, one entry per write system call
      const record = socket as unknown as {
        _write(chunk: Buffer, encoding: string, callback: () => void): void;
        _writev(chunks: { chunk: Buffer | string }[], callback: () => void): void;
      };
      const write = record._write.bind(socket);
      const writev = record._writev.bind(socket);
      record._write = (chunk, encoding, callback) => {
        socketWrites.push(String(chunk));
        write(chunk, encoding, callback);
      };
      record._writev = (chunks, callback) => {
        socketWrites.push(chunks.map(({ chunk }) => String(chunk)).join(""));
        writev(chunks, callback);
      };
    });
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    const { port } = server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}/stream`, socketWrites, close: () => server.close() };
  }

  it("sends the head, the retry field and the events of the first flush in one write", async () => {
    const served = await serveAndRecordWrites();
    try {
      const body = await (await fetch(served.url)).text();
      expect(body).toBe(RETRY_FIELD + formatEvent(textDelta(1, "a")) + formatEvent(textDelta(2, "b")));
      const [first] = served.socketWrites;
      expect(first).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*content-type: text\/event-stream/i);
      expect(first).toContain(RETRY_FIELD);
      expect(first).toContain(formatEvent(textDelta(1, "a")));
      expect(first).toContain(formatEvent(textDelta(2, "b")));
    } finally {
      served.close();
    }
  });
});
