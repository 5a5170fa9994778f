/**
 * The typed client's stream handling without a server (src/client): the SSE reader across arbitrary
 * chunk boundaries, and the reconnecting turn stream on fake timers — it waits exactly the reconnect
 * delay, resumes with `Last-Event-ID`, skips a repeated event, ends on a 204, gives up after
 * `maxReconnects` failures, and an abort during the wait rejects at once and leaves no timer behind.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ReinsApiError, ReinsClient, TurnStreamLostError, type TurnEvent } from "../../src/client/index.js";
import { readSse, type SseField } from "../../src/client/sse-reader.js";

const TURN_ID = "turn_1";
const RECONNECT_DELAY_MS = 1_000;

function event(seq: number, type = "text_delta"): TurnEvent {
  const body =
    type === "turn_complete"
      ? {
          type,
          stopReason: "end_turn",
          durationMs: 1,
          toolCallCount: 0,
          usage: { inputTokens: 0, outputTokens: 0 },
        }
      : { type, text: `t${seq}` };
  return { ...body, turnId: TURN_ID, seq, at: 0 } as TurnEvent;
}

const frame = (turnEvent: TurnEvent) =>
  `id: ${turnEvent.seq}\nevent: ${turnEvent.type}\ndata: ${JSON.stringify(turnEvent)}\n\n`;

/** A body that sends `chunks`, then ends, or breaks like a cut connection when `breaks`. */
function body(chunks: string[], ending: "ends" | "breaks"): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let sent = 0;
  // one chunk per read: erroring a stream drops what is still queued, as a cut socket would not
  return new ReadableStream({
    pull(controller) {
      const chunk = chunks[sent];
      sent += 1;
      if (chunk !== undefined) controller.enqueue(encoder.encode(chunk));
      else if (ending === "ends") controller.close();
      else controller.error(new TypeError("terminated"));
    },
  });
}

const sse = (chunks: string[], ending: "ends" | "breaks" = "ends") =>
  new Response(body(chunks, ending), { headers: { "Content-Type": "text/event-stream" } });

async function collect(fields: AsyncIterable<SseField>): Promise<SseField[]> {
  const collected: SseField[] = [];
  for await (const field of fields) collected.push(field);
  return collected;
}

describe("readSse", () => {
  it("reads the same messages however the bytes are split, with CRLF, CR, comments and multi-line data", async () => {
    const text =
      'retry: 2000\r\n\r\n: a comment\rid: 7\revent: text_delta\rdata: {"text":"é€"}\r\rdata: one\ndata: two\n\n';
    const bytes = new TextEncoder().encode(text);
    const expected: SseField[] = [
      { kind: "retry", retryMs: 2000 },
      { kind: "message", message: { id: "7", event: "text_delta", data: '{"text":"é€"}' } },
      { kind: "message", message: { id: "7", event: "message", data: "one\ntwo" } },
    ];
    for (let split = 1; split < bytes.length; split += 1) {
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes.slice(0, split));
          controller.enqueue(bytes.slice(split));
          controller.close();
        },
      });
      expect(await collect(readSse(stream)), `split at byte ${split}`).toEqual(expected);
    }
  });
});

describe("the reconnecting turn stream", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A client whose fetch answers from `responses` in order and records every request. */
  function clientWith(responses: (() => Response)[], maxReconnects = 3) {
    const requests: { url: string; lastEventId: string | null }[] = [];
    const fetch = vi.fn((input: string | URL | Request, init?: RequestInit) => {
      const headers = new Headers(init?.headers);
      requests.push({ url: String(input), lastEventId: headers.get("Last-Event-ID") });
      init?.signal?.throwIfAborted();
      const next = responses.shift();
      if (!next) return Promise.reject(new TypeError("fetch failed"));
      return Promise.resolve(next());
    });
    const client = new ReinsClient({
      baseUrl: "http://reins.test",
      fetch: fetch as typeof globalThis.fetch,
      reconnectDelayMs: RECONNECT_DELAY_MS,
      maxReconnects,
    });
    return { client, requests };
  }

  it("waits the reconnect delay, resumes after the last seq, skips a repeated event, ends at the terminal one", async () => {
    const { client, requests } = clientWith([
      () => sse(["retry: 2000\n\n", frame(event(1, "turn_start")), frame(event(2)), "id: 3\nda"], "breaks"),
      // a replay that starts one event early must not yield it twice
      () => sse([frame(event(2)), frame(event(3)), frame(event(4, "turn_complete"))]),
    ]);
    const received: number[] = [];
    const done = (async () => {
      for await (const turnEvent of client.startTurn({ message: "hi" })) received.push(turnEvent.seq);
    })();
    await vi.advanceTimersByTimeAsync(RECONNECT_DELAY_MS - 1);
    expect(received).toEqual([1, 2]);
    expect(requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await done;
    expect(received).toEqual([1, 2, 3, 4]);
    expect(requests).toEqual([
      { url: "http://reins.test/api/sessions/stream", lastEventId: null },
      { url: `http://reins.test/api/turns/${TURN_ID}/events`, lastEventId: "2" },
    ]);
  });

  it("ends quietly on a 204 (the turn ended and everything was received)", async () => {
    const { client } = clientWith([
      () => sse([frame(event(1)), frame(event(2))]),
      () => new Response(null, { status: 204 }),
    ]);
    const received: number[] = [];
    const done = (async () => {
      for await (const turnEvent of client.followTurn(TURN_ID)) received.push(turnEvent.seq);
    })();
    await vi.advanceTimersByTimeAsync(RECONNECT_DELAY_MS);
    await done;
    expect(received).toEqual([1, 2]);
  });

  it("gives up after maxReconnects failed attempts in a row", async () => {
    const { client, requests } = clientWith([() => sse([frame(event(1))], "breaks")], 2);
    const done = expect(collectEvents(client.followTurn(TURN_ID))).rejects.toBeInstanceOf(
      TurnStreamLostError,
    );
    await vi.advanceTimersByTimeAsync(RECONNECT_DELAY_MS * 3);
    await done;
    // the first stream and two resumptions
    expect(requests).toHaveLength(3);
  });

  it("raises the server's final refusal of a resumption as a ReinsApiError at once", async () => {
    const { client, requests } = clientWith([
      () => sse([frame(event(1))], "breaks"),
      () => Response.json({ error: "Turn not found", code: "turn_not_found" }, { status: 404 }),
    ]);
    const done = expect(collectEvents(client.followTurn(TURN_ID))).rejects.toMatchObject({
      status: 404,
      code: "turn_not_found",
    });
    await vi.advanceTimersByTimeAsync(RECONNECT_DELAY_MS);
    await done;
    expect(requests).toHaveLength(2);
  });

  it("retries a resumption refused for now (429, 503) after its Retry-After, and loses nothing", async () => {
    const tooMany = { error: "Too many open streams", code: "too_many_streams" };
    const { client, requests } = clientWith([
      () => sse([frame(event(1, "turn_start"))], "breaks"),
      // the server has not yet seen the dropped stream go: its place is still taken
      () => Response.json(tooMany, { status: 429, headers: { "Retry-After": "5" } }),
      // a proxy in front of a restarting server
      () => new Response("bad gateway", { status: 503 }),
      () => sse([frame(event(2)), frame(event(3, "turn_complete"))]),
    ]);
    const received: number[] = [];
    const done = (async () => {
      for await (const turnEvent of client.followTurn(TURN_ID)) received.push(turnEvent.seq);
    })();
    await vi.advanceTimersByTimeAsync(RECONNECT_DELAY_MS);
    expect(requests).toHaveLength(2);
    // the 429's Retry-After (5 s), not the reconnect delay (1 s)
    await vi.advanceTimersByTimeAsync(4_000);
    expect(requests).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(requests).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(RECONNECT_DELAY_MS);
    await done;
    expect(received).toEqual([1, 2, 3]);
    expect(requests.map((request) => request.lastEventId)).toEqual([null, "1", "1", "1"]);
  });

  it("gives up on refusals for now after maxReconnects, with the last refusal as the cause", async () => {
    const refusal = () =>
      Response.json({ error: "Too many open streams", code: "too_many_streams" }, { status: 429 });
    const { client, requests } = clientWith([() => sse([frame(event(1))], "breaks"), refusal, refusal], 2);
    const done = expect(collectEvents(client.followTurn(TURN_ID))).rejects.toMatchObject({
      name: "TurnStreamLostError",
      cause: { status: 429, code: "too_many_streams" },
    });
    await vi.advanceTimersByTimeAsync(RECONNECT_DELAY_MS * 3);
    await done;
    expect(requests).toHaveLength(3);
  });

  it("rejects at once when aborted while waiting to reconnect, and leaves no timer behind", async () => {
    const { client, requests } = clientWith([() => sse([frame(event(1))], "breaks")]);
    const controller = new AbortController();
    const stream = client.followTurn(TURN_ID, { signal: controller.signal });
    expect((await stream.next()).value).toMatchObject({ seq: 1 });
    const pending = stream.next();
    await vi.advanceTimersByTimeAsync(RECONNECT_DELAY_MS / 2);
    expect(vi.getTimerCount()).toBe(1);
    const reason = new Error("stop");
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
    expect(requests).toHaveLength(1);
  });

  it("does not repeat the POST that starts a turn when it fails (it could start a second turn)", async () => {
    const { client, requests } = clientWith([]);
    await expect(collectEvents(client.startTurn({ message: "hi" }))).rejects.toThrow("fetch failed");
    expect(requests).toHaveLength(1);
  });

  it("maps a refusal to a ReinsApiError with the server's code and message", async () => {
    const { client } = clientWith([
      () => Response.json({ error: "Session not found: s1", code: "session_not_found" }, { status: 404 }),
      () => new Response("<html>bad gateway</html>", { status: 502 }),
    ]);
    const notFound = await client.getSession("s1").catch((error: unknown) => error);
    expect(notFound).toBeInstanceOf(ReinsApiError);
    expect(notFound).toMatchObject({
      status: 404,
      code: "session_not_found",
      message: "Session not found: s1",
    });
    await expect(client.getSession("s1")).rejects.toMatchObject({ status: 502, code: "http_error" });
  });
});

async function collectEvents(events: AsyncIterable<TurnEvent>): Promise<TurnEvent[]> {
  const collected: TurnEvent[] = [];
  for await (const turnEvent of events) collected.push(turnEvent);
  return collected;
}
