/**
 * A real Chromium EventSource on an ended turn (docs/events.md#replay-and-reconnection), with auth on and a
 * stream token in the URL: it receives every event of the turn, reconnects once when the server closes the
 * stream, gets 204 and stops, instead of reconnecting every few seconds forever. The requests are counted on
 * the server's side of the socket, by a counting pass-through proxy in front of the real server.
 */
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SSE_RETRY_MS } from "../../src/http/sse.js";
import { launchBrowser } from "../helpers/browser.js";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, turnIdOf } from "../helpers/sse.js";

const ALICE = "alice-token-0001";

/** Forwards every request to `targetPort` unchanged (streamed both ways) and records its path. */
async function countingProxy(targetPort: number): Promise<{ server: Server; url: string; paths: string[] }> {
  const paths: string[] = [];
  const server = createServer((incoming, outgoing) => {
    paths.push(new URL(incoming.url ?? "/", "http://proxy").pathname);
    const upstream = request(
      {
        host: "127.0.0.1",
        port: targetPort,
        path: incoming.url,
        method: incoming.method,
        headers: incoming.headers,
        agent: false,
      },
      (response: IncomingMessage) => {
        outgoing.writeHead(response.statusCode ?? 502, response.headers);
        response.pipe(outgoing);
      },
    );
    upstream.on("error", () => outgoing.destroy());
    outgoing.on("close", () => upstream.destroy());
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, paths };
}

describe("a browser EventSource on an ended turn", () => {
  let server: ServerHandle;
  let browser: Browser;
  let proxy: Awaited<ReturnType<typeof countingProxy>>;

  beforeAll(async () => {
    server = await startServer({ env: { AUTH_TOKENS: `alice:${ALICE}` } });
    proxy = await countingProxy(server.port);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close().catch(() => {});
    proxy?.server.closeAllConnections();
    await new Promise((resolve) => proxy?.server.close(resolve));
    await server?.stop();
    server?.cleanup();
  });

  it("receives every event, then stops after one reconnect answered 204", { timeout: 60_000 }, async () => {
    const started = await SseStream.open(`${server.baseUrl}/api/sessions/stream`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ALICE}` },
      body: JSON.stringify({ message: '/tool echo {"text":"from the browser"}\n/then\nDone.' }),
    });
    const turnEvents = await started.untilEnd();
    const turnId = turnIdOf(started);
    const minted = await fetch(`${server.baseUrl}/api/turns/${turnId}/stream-token`, {
      method: "POST",
      headers: { authorization: `Bearer ${ALICE}` },
    });
    const { token } = (await minted.json()) as { token: string };

    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${proxy.url}/healthz`);
      const eventsPath = `/api/turns/${turnId}/events`;
      await page.evaluate(
        ({ url, types }) => {
          const record = { events: [] as { type: string; id: string; seq: number }[], opens: 0, errors: 0 };
          const source = new EventSource(url);
          source.onopen = () => record.opens++;
          source.onerror = () => record.errors++;
          for (const type of types) {
            source.addEventListener(type, (event) => {
              const message = event as MessageEvent;
              const { seq } = JSON.parse(message.data as string) as { seq: number };
              record.events.push({ type, id: message.lastEventId, seq });
            });
          }
          Object.assign(globalThis, { eventSourceTest: { source, record } });
        },
        { url: `${eventsPath}?token=${token}`, types: [...new Set(turnEvents.map((event) => event.type))] },
      );
      const state = () =>
        page.evaluate(() => {
          const { source, record } = (
            globalThis as unknown as { eventSourceTest: { source: EventSource; record: unknown } }
          ).eventSourceTest;
          return {
            readyState: source.readyState,
            ...(record as {
              events: { type: string; id: string; seq: number }[];
              opens: number;
              errors: number;
            }),
          };
        });

      // CLOSED (2) only once a reconnect was refused for good; the old server kept it reconnecting
      await expect.poll(async () => (await state()).readyState, { timeout: 30_000, interval: 200 }).toBe(2);
      const closed = await state();
      expect(closed.events).toEqual(
        turnEvents.map((event) => ({ type: event.type, id: String(event.seq), seq: event.seq })),
      );
      expect(closed.opens).toBe(1);
      expect(proxy.paths.filter((path) => path === eventsPath)).toHaveLength(2);

      // and nothing more: three reconnection delays later, still two requests
      await new Promise((resolve) => setTimeout(resolve, 3 * SSE_RETRY_MS));
      expect(proxy.paths.filter((path) => path === eventsPath)).toHaveLength(2);
      expect((await state()).events).toHaveLength(turnEvents.length);
    } finally {
      await context.close();
    }
  });
});
