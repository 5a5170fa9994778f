/**
 * A client that does not read its stream (docs/events.md#replay-and-reconnection), over a real socket to
 * the app served by @hono/node-server in this process: an ended turn whose log is far larger than the
 * sockets' buffers is replayed only as fast as the client takes it, and the stream holds its place in
 * the principal's stream limit until the client has it all — not from the moment the log was written
 * into the server's memory. The log is read from the store a page at a time, each page once the client
 * has taken the one before, so a stalled client makes the server read (and hold) a few pages of it, not
 * all of it. Once the client reads, it gets every event, in order.
 */
import { serve, type ServerType } from "@hono/node-server";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  buildApp,
  createRuntime,
  parseConfig,
  type ModelEngine,
  type ModelEvent,
  type Runtime,
} from "../../src/index.js";
import { eventually } from "../helpers/eventually.js";

/** Text deltas of 64 KiB: 800 of them make a log of about 52 MB, far past any socket buffers. */
const DELTA = "x".repeat(64 * 1024);
const DELTAS = 800;

/** A model that answers with DELTAS deltas of DELTA, one per turn of the event loop (a commit each). */
const bigAnswer: ModelEngine = {
  provider: "big",
  defaultModel: "big-1",
  async *stream(): AsyncIterable<ModelEvent> {
    for (let index = 0; index < DELTAS; index++) {
      yield { type: "text_delta", text: DELTA };
      await new Promise((resolve) => setImmediate(resolve));
    }
    yield { type: "stop", reason: "end_turn" };
  },
};

/** A GET of `path` on a socket that is never read until `read()` is called. */
function unreadStream(port: number, path: string) {
  const socket = net.connect(port, "127.0.0.1");
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  return {
    socket,
    /** Reads to the end of the response; resolves with everything it said. */
    read: () =>
      new Promise<string>((resolve, reject) => {
        const chunks: Buffer[] = [];
        let tail = "";
        socket.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          tail = (tail + chunk.toString("latin1")).slice(-5);
          // the chunked body's last chunk: the stream is over
          if (tail === "0\r\n\r\n") resolve(Buffer.concat(chunks).toString());
        });
        socket.on("error", reject);
      }),
  };
}

describe("a stream whose client does not read", () => {
  let runtime: Runtime;
  let server: ServerType;
  let port: number;
  let dataDir: string;
  let turnId: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "reins-backpressure-"));
    runtime = createRuntime(parseConfig({ dataDir, limits: { maxStreamsPerPrincipal: 2 } }).config, {
      logger: pino({ level: "silent" }),
      engines: [bigAnswer],
    });
    server = serve({ fetch: buildApp(runtime).fetch, port: 0, hostname: "127.0.0.1" });
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    port = (server.address() as AddressInfo).port;
    const turn = runtime.manager.startTurn({ message: "go", provider: "big" });
    turnId = turn.turnId;
    await turn.done;
  }, 60_000);

  afterAll(async () => {
    if ("closeAllConnections" in server) server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await runtime.mcp.stop();
    runtime.store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("holds its place until the client has the whole replay, and gives every event once read", async () => {
    const path = `/api/turns/${turnId}/events`;
    const logged = runtime.store.listEvents(turnId);
    // what the replays read from the store from now on
    let read = 0;
    const listEvents = runtime.store.listEvents.bind(runtime.store);
    runtime.store.listEvents = (...args: Parameters<typeof listEvents>) => {
      const page = listEvents(...args);
      read += page.length;
      return page;
    };
    const stalled = [unreadStream(port, path), unreadStream(port, path)];
    try {
      // both places are held while their replays wait for their clients: a third stream is refused
      await eventually(async () => {
        const third = await fetch(`http://127.0.0.1:${port}${path}`);
        await third.body?.cancel();
        expect(third.status).toBe(429);
      }, 20_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // two stalled replays read what their sockets took and a page more each: far less than the log
      expect(read).toBeLessThan(logged.length);

      const text = await stalled[0]!.read();
      const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));
      expect(ids).toEqual(logged.map((event) => event.seq));
      expect(logged.at(-1)?.type).toBe("turn_complete");
      expect(text.split(DELTA).length - 1).toBe(DELTAS);

      // that stream is over: its place is free again
      await eventually(async () => {
        const third = await fetch(`http://127.0.0.1:${port}${path}`);
        await third.body?.cancel();
        expect(third.status).toBe(200);
      }, 20_000);
    } finally {
      for (const stream of stalled) stream.socket.destroy();
    }
  }, 60_000);
});
