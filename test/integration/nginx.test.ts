/**
 * reins behind a real nginx running the shipped config/nginx.conf (test/helpers/nginx.ts).
 *
 * - Events reach the client one by one as they are sent: through the shipped location
 *   (proxy_buffering off), with proxy_buffering on, and with buffering on plus gzip on the stream.
 *   Plain buffering alone does not hold small events back when the client keeps up (nginx passes on
 *   what it has read); buffering together with gzip does, and there reins' `X-Accel-Buffering: no` is
 *   what keeps the stream live. Control: with that header ignored, the turn arrives in one burst.
 * - An idle stream outlives nginx's proxy_read_timeout thanks to `ping`. Control: without pings,
 *   nginx cuts it after the timeout.
 * - Authorization is forwarded, a client going away aborts the turn, bodies over the limit get 413,
 *   and other responses are gzipped.
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import { DEFAULT_BODY_LIMIT_BYTES } from "../../src/config/schema.js";
import {
  addDirective,
  setDirective,
  shippedSiteConfig,
  startNginx,
  type NginxHandle,
} from "../helpers/nginx.js";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, sessionIdOf, type SseMessage } from "../helpers/sse.js";

/** nginx's read timeout in these tests, and the ping interval of the server that pings. */
const READ_TIMEOUT_MS = 1_000;
const PING_INTERVAL_MS = 300;
/** Both servers require a bearer token, so every turn below also proves nginx forwards Authorization. */
const TOKEN = "nginx-test-token";
const AUTH = { authorization: `Bearer ${TOKEN}` };

describe("reins behind nginx (config/nginx.conf)", () => {
  let pinging: ServerHandle;
  let silent: ServerHandle;
  let nginx: NginxHandle;

  beforeAll(async () => {
    const buffered = (block: string) => setDirective(block, "proxy_buffering", "on");
    const gzipStream = (block: string) => setDirective(block, "gzip_types", "text/event-stream");
    // tool_progress would break a tool's silence; push it far out of the way.
    const quiet = {
      PROGRESS_AFTER_MS: "600000",
      PROGRESS_INTERVAL_MS: "600000",
      AUTH_TOKENS: `tester:${TOKEN}`,
    };
    [pinging, silent] = await Promise.all([
      startServer({ env: { ...quiet, PING_INTERVAL_MS: String(PING_INTERVAL_MS) } }),
      startServer({ env: { ...quiet, PING_INTERVAL_MS: "60000" } }),
    ]);
    nginx = await startNginx({
      readTimeout: `${READ_TIMEOUT_MS}ms`,
      sites: [
        // the shipped location as it is: proxy_buffering off
        { name: "unbuffered", upstream: `127.0.0.1:${pinging.port}` },
        // buffering on, as another location may have it
        { name: "buffered", upstream: `127.0.0.1:${pinging.port}`, edit: buffered },
        // buffering on and the stream gzipped: nginx would hold the events back; reins'
        // X-Accel-Buffering: no must still make it stream
        { name: "bufferedGzip", upstream: `127.0.0.1:${pinging.port}`, edit: (b) => gzipStream(buffered(b)) },
        // control: the same with reins' header ignored, so nginx does buffer
        {
          name: "ignoresHeader",
          upstream: `127.0.0.1:${pinging.port}`,
          edit: (b) => addDirective(gzipStream(buffered(b)), "proxy_ignore_headers X-Accel-Buffering"),
        },
        // control: a server whose pings come far later than nginx's read timeout
        { name: "noPings", upstream: `127.0.0.1:${silent.port}` },
      ],
    });
  });

  afterAll(async () => {
    const code = await nginx?.stop();
    await Promise.all([pinging?.stop(), silent?.stop()]);
    pinging?.cleanup();
    silent?.cleanup();
    if (nginx) {
      // graceful stop (SIGQUIT): exit 0, and the prefix (logs, temp paths, pid file) is gone
      expect(code).toBe(0);
      expect(existsSync(nginx.prefix)).toBe(false);
    }
  });

  const startTurn = (baseUrl: string, message: string) =>
    SseStream.open(`${baseUrl}/api/sessions/stream`, {
      method: "POST",
      headers: { ...AUTH, "content-type": "application/json", "accept-encoding": "gzip" },
      body: JSON.stringify({ message }),
    });

  /** Turn events with the time each was received. */
  const received = (stream: SseStream) =>
    stream.messages
      .filter((message) => message.event !== "ping")
      .map((message: SseMessage) => ({ event: JSON.parse(message.data) as TurnEvent, at: message.received }));

  /** Two calls finishing 1 s and 3 s in: seconds apart, so a busy machine's late sends cannot blur them. */
  const TWO_TOOLS = '/tool sleep {"ms":1000}\n/tool sleep {"ms":3000}';

  /**
   * Runs TWO_TOOLS through `site`. Returns, for turn_start, both tool_results and turn_complete, when
   * the server created the event (`event.at`) and when the client received it (`at`).
   */
  async function twoToolTurn(site: string) {
    const started = Date.now();
    const stream = await startTurn(nginx.urls[site]!, TWO_TOOLS);
    expect(stream.response.headers.get("content-type")).toBe("text/event-stream");
    await stream.untilEnd(10_000);
    const events = received(stream);
    const results = events.filter(({ event }) => event.type === "tool_result");
    const start = events.find(({ event }) => event.type === "turn_start");
    const complete = events.find(({ event }) => event.type === "turn_complete");
    expect(results).toHaveLength(2);
    expect(start).toBeDefined();
    expect(complete).toBeDefined();
    const encoding = stream.response.headers.get("content-encoding");
    return { started, start: start!, first: results[0]!, second: results[1]!, complete: complete!, encoding };
  }

  it.each([
    // the shipped file: gzip is on, but not for text/event-stream
    { site: "unbuffered", encoding: null },
    { site: "buffered", encoding: null },
    { site: "bufferedGzip", encoding: "gzip" },
  ])("delivers each event as it is sent ($site proxy)", async ({ site, encoding }) => {
    const { started, start, first, second, complete, ...turn } = await twoToolTurn(site);
    expect(turn.encoding).toBe(encoding);
    // The client held each event before the server had even created the next one: turn_start
    // before the 1 s tool finished, that tool's result before the 3 s tool finished.
    // (Comparing against the server's own timestamps keeps this true on a loaded machine.)
    expect(start.at).toBeLessThan(first.event.at);
    expect(first.at).toBeLessThan(second.event.at);
    // so the first result came on its own, well before the end of the turn
    expect(first.at - started).toBeGreaterThanOrEqual(950);
    expect(complete.at - first.at).toBeGreaterThanOrEqual(1_000);
  });

  it("control: with X-Accel-Buffering ignored, nginx delivers the whole turn in one burst at the end", async () => {
    const { start, first, second, complete, encoding } = await twoToolTurn("ignoresHeader");
    expect(encoding).toBe("gzip");
    // the same checks fail: nothing arrived until the server had finished the turn
    expect(start.at).toBeGreaterThanOrEqual(complete.event.at);
    expect(first.at).toBeGreaterThanOrEqual(second.event.at);
    expect(complete.at - first.at).toBeLessThan(500);
  });

  it("forwards Authorization: reins requires it and sees it through the proxy", async () => {
    const request = (headers: Record<string, string>) =>
      fetch(`${nginx.urls.unbuffered}/api/sessions/stream`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ message: "hello" }),
      });
    const without = await request({});
    expect(without.status).toBe(401);
    expect(await without.json()).toMatchObject({ code: "unauthorized" });
    const wrong = await request({ authorization: "Bearer not-the-token" });
    expect(wrong.status).toBe(401);
    await wrong.text();
    const right = await request(AUTH);
    expect(right.status).toBe(200);
    expect(await right.text()).toContain("event: turn_complete");
  });

  it("limits request bodies as reins does: client_max_body_size equals the default BODY_LIMIT_BYTES", async () => {
    const setting = /^\s*client_max_body_size\s+(\d+)([km]?);/im.exec(shippedSiteConfig());
    expect(setting).not.toBeNull();
    const unit = { "": 1, k: 1024, m: 1024 * 1024 }[setting![2]!.toLowerCase() as "" | "k" | "m"];
    const limit = Number(setting![1]) * unit;
    expect(limit).toBe(DEFAULT_BODY_LIMIT_BYTES);

    const post = (bytes: number) =>
      fetch(`${nginx.urls.unbuffered}/api/sessions/stream`, {
        method: "POST",
        headers: { ...AUTH, "content-type": "application/json" },
        body: JSON.stringify({ message: "x".repeat(bytes - '{"message":""}'.length) }),
      });
    const over = await post(limit + 1);
    expect(over.status).toBe(413);
    expect(over.headers.get("server")).toMatch(/^nginx/);
    await over.text();
  });

  it("compresses other responses: the shipped gzip settings are in effect", async () => {
    // the page, and a script of it (reins serves scripts as text/javascript)
    for (const [path, type] of [
      ["/", /^text\/html/],
      ["/approval-card.js", /^text\/javascript/],
    ] as const) {
      const response = await fetch(`${nginx.urls.unbuffered}${path}`, {
        headers: { "accept-encoding": "gzip" },
      });
      expect(response.status, path).toBe(200);
      expect(response.headers.get("content-type"), path).toMatch(type);
      expect(response.headers.get("content-encoding"), path).toBe("gzip");
      await response.text();
    }
  });

  it("keeps a stream open through a silence longer than proxy_read_timeout, thanks to pings", async () => {
    // 5 s leaves 2 s for a tool_start sent late on a busy machine (the silence the client sees
    // shrinks by that)
    const stream = await startTurn(nginx.urls.unbuffered!, '/tool sleep {"ms":5000}');
    await stream.untilEnd(15_000);
    const events = received(stream);
    expect(events.at(-1)?.event).toMatchObject({ type: "turn_complete", stopReason: "end_turn" });

    const toolStart = events.find(({ event }) => event.type === "tool_start")!;
    const toolResult = events.find(({ event }) => event.type === "tool_result")!;
    // the tool was silent for more than three read timeouts...
    expect(toolResult.at - toolStart.at).toBeGreaterThanOrEqual(3 * READ_TIMEOUT_MS);
    // ...and only pings crossed the proxy meanwhile (in stream order: a stalled client receives some
    // in one chunk with the result), never more than a read timeout apart
    const kinds = stream.messages.map((message) => message.event);
    const during = stream.messages.slice(kinds.indexOf("tool_start") + 1, kinds.indexOf("tool_result"));
    expect(during.every((message) => message.event === "ping")).toBe(true);
    expect(during.length).toBeGreaterThanOrEqual(5);
    // by the server's stamps (a stalled client would bunch pings that were sent in time): each ping
    // came less than a read timeout after the one before, and the result less than one after the last
    const times = [
      ...during.map((message) => (JSON.parse(message.data) as { at: number }).at),
      toolResult.event.at,
    ];
    const gaps = times.slice(1).map((time, index) => time - times[index]!);
    expect(Math.max(...gaps)).toBeLessThan(READ_TIMEOUT_MS);
  });

  it("control: without pings, nginx cuts the idle stream after proxy_read_timeout", async () => {
    // hang, not a sleep: a sleep's silence shrinks by however late its tool_start is sent on a busy
    // machine, and a silence shorter than the read timeout would let the turn finish uncut
    const stream = await startTurn(nginx.urls.noPings!, "/tool hang {}");
    await stream.untilEnd(15_000);
    const ended = Date.now();
    const events = received(stream);
    const types = events.map(({ event }) => event.type);
    expect(types).toEqual(["turn_start", "tool_start"]);
    expect(stream.messages.some((message) => message.event === "ping")).toBe(false);
    const lastEvent = events.at(-1)!.at;
    // nginx re-arms a running timer only when it moves by more than 300 ms (NGX_TIMER_LAZY_DELAY),
    // so the cut may come up to that much before a full read timeout after the last event
    expect(ended - lastEvent).toBeGreaterThanOrEqual(READ_TIMEOUT_MS - 400);
    // nothing else would end a hanging turn's stream before untilEnd gives up
    expect(ended - lastEvent).toBeLessThan(READ_TIMEOUT_MS + 5_000);
    expect(nginx.errorLog()).toMatch(/upstream timed out/);
  });

  it("passes a client going away on to reins: the turn ends with reason disconnect (ON_DISCONNECT=abort)", async () => {
    const stream = await startTurn(nginx.urls.unbuffered!, '/tool sleep {"ms":10000}');
    await stream.next((event) => event.type === "tool_start", 5_000);
    const sessionId = sessionIdOf(stream);
    await stream.cancel();
    const deadline = Date.now() + 5_000;
    let turn: { status: string; abortReason: string | null } | undefined;
    while (Date.now() < deadline) {
      const history = (await (
        await fetch(`${pinging.baseUrl}/api/sessions/${sessionId}/history`, { headers: AUTH })
      ).json()) as { turns: { status: string; abortReason: string | null }[] };
      turn = history.turns.at(-1);
      if (turn?.status !== "running") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(turn).toMatchObject({ status: "aborted", abortReason: "disconnect" });
  });
});
