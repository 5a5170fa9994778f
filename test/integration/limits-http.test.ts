/**
 * Per-principal limits and HTTP hardening over the real server (docs/semantics.md#isolation-and-limits): a
 * real process on a real port, attacked over real sockets — one principal opening far more turns and streams
 * than it may, clients going away mid-stream, oversized bodies on kept-alive connections, deep JSON.
 */
import http from "node:http";
import net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../helpers/eventually.js";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, sessionIdOf, turnIdOf } from "../helpers/sse.js";

const ALICE = "alice-token-0123456789";
const BOB = "bob-token-0123456789";
/** A turn that runs until it is aborted. */
const LONG_TURN = { message: '/tool sleep {"ms":600000}' };

type Refusal = { status: number; retryAfter: string | null; body: Record<string, unknown> };

/** What one principal (a token, or none) can do against one server. */
function client(server: () => ServerHandle, token: string | null) {
  const headers = (extra: Record<string, string> = {}) => ({
    ...extra,
    ...(token ? { authorization: `Bearer ${token}` } : {}),
  });
  const startInit = (): RequestInit => ({
    method: "POST",
    headers: headers({ "content-type": "application/json" }),
    body: JSON.stringify(LONG_TURN),
  });
  const eventsUrl = (turnId: string) => `${server().baseUrl}/api/turns/${turnId}/events`;
  const refusalOf = async (response: Response): Promise<Refusal> => {
    const refusal = { status: response.status, retryAfter: response.headers.get("retry-after") };
    // accepted after all: a stream, which would never end by itself
    if (response.ok) {
      await response.body?.cancel();
      return { ...refusal, body: {} };
    }
    return { ...refusal, body: (await response.json()) as Record<string, unknown> };
  };
  return {
    /** Starts a long turn and waits for its turn_start. */
    async start(): Promise<SseStream> {
      const stream = await SseStream.open(`${server().baseUrl}/api/sessions/stream`, startInit());
      await stream.next((event) => event.type === "turn_start");
      return stream;
    },
    /** Starts a turn expecting a refusal. */
    async startRefused(): Promise<Refusal> {
      return refusalOf(await fetch(`${server().baseUrl}/api/sessions/stream`, startInit()));
    },
    /** Follows a turn and waits for its first event. */
    async follow(turnId: string): Promise<SseStream> {
      const stream = await SseStream.open(eventsUrl(turnId), { headers: headers() });
      await stream.next((event) => event.type === "turn_start");
      return stream;
    },
    async followRefused(turnId: string): Promise<Refusal> {
      return refusalOf(await fetch(eventsUrl(turnId), { headers: headers() }));
    },
    /** HEAD of a turn's stream: its status and Retry-After (it opens no stream). */
    async head(turnId: string): Promise<{ status: number; retryAfter: string | null }> {
      const response = await fetch(eventsUrl(turnId), { method: "HEAD", headers: headers() });
      return { status: response.status, retryAfter: response.headers.get("retry-after") };
    },
    /** Aborts every running turn of this principal. */
    async abortAll(): Promise<void> {
      const active = (await (
        await fetch(`${server().baseUrl}/api/turns/active`, { headers: headers() })
      ).json()) as { turns: { turnId: string }[] };
      for (const { turnId } of active.turns) {
        await fetch(`${server().baseUrl}/api/turns/${turnId}/abort`, { method: "POST", headers: headers() });
      }
    },
  };
}

const tooMany = (code: string, limit: number) => ({
  status: 429,
  retryAfter: "5",
  body: expect.objectContaining({ code, limit, error: expect.stringContaining(String(limit)) }),
});

describe("per-principal limits with two principals", () => {
  let server: ServerHandle;
  const open: SseStream[] = [];
  const alice = client(() => server, ALICE);
  const bob = client(() => server, BOB);

  beforeAll(async () => {
    server = await startServer({
      env: {
        AUTH_TOKENS: `alice:${ALICE},bob:${BOB}`,
        MAX_TURNS_PER_PRINCIPAL: "3",
        MAX_STREAMS_PER_PRINCIPAL: "5",
      },
    });
  });
  afterEach(async () => {
    await alice.abortAll();
    await bob.abortAll();
    await Promise.all(open.splice(0).map((stream) => stream.cancel()));
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
  });

  it("accepts exactly MAX_TURNS_PER_PRINCIPAL turns of 20, refuses the rest with 429, serves another principal", async () => {
    const accepted: Response[] = [];
    const refused: Refusal[] = [];
    try {
      for (let attempt = 0; attempt < 20; attempt++) {
        const response = await fetch(`${server.baseUrl}/api/sessions/stream`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${ALICE}` },
          body: JSON.stringify(LONG_TURN),
        });
        if (response.status === 200) accepted.push(response);
        else {
          refused.push({
            status: response.status,
            retryAfter: response.headers.get("retry-after"),
            body: (await response.json()) as Record<string, unknown>,
          });
        }
      }
      expect(accepted).toHaveLength(3);
      expect(refused).toHaveLength(17);
      for (const refusal of refused) expect(refusal).toEqual(tooMany("too_many_turns", 3));

      // another principal is still served
      open.push(await bob.start());
      // and turns that end give their places back
      await alice.abortAll();
      await Promise.all(accepted.map((response) => response.text()));
      open.push(await alice.start(), await alice.start(), await alice.start());
      expect(await alice.startRefused()).toEqual(tooMany("too_many_turns", 3));
    } finally {
      await Promise.all(accepted.map((response) => response.body?.cancel().catch(() => {})));
    }
  });

  it("refuses a stream beyond MAX_STREAMS_PER_PRINCIPAL with 429, serves another principal, and frees the place of a client that goes away", async () => {
    const turn = await alice.start();
    open.push(turn);
    const turnId = turnIdOf(turn);
    // 1 stream (the turn's own) + 4 followers = 5
    const followers: SseStream[] = [];
    for (let follower = 0; follower < 4; follower++) followers.push(await alice.follow(turnId));
    open.push(...followers);
    expect(await alice.followRefused(turnId)).toEqual(tooMany("too_many_streams", 5));
    // a new turn needs a stream too
    expect(await alice.startRefused()).toEqual(tooMany("too_many_streams", 5));

    const bobTurn = await bob.start();
    open.push(bobTurn);
    open.push(await bob.follow(turnIdOf(bobTurn)));

    // clients that go away mid-stream, again and again: each one's place comes back
    for (let round = 0; round < 15; round++) {
      await followers.shift()?.cancel();
      const replacement = await eventually(() => alice.follow(turnId), 15_000);
      followers.push(replacement);
      open.push(replacement);
      expect(await alice.followRefused(turnId)).toEqual(tooMany("too_many_streams", 5));
    }

    // a turn that ends closes its streams and frees every place
    await alice.abortAll();
    await turn.untilEnd();
    const second = await alice.start();
    open.push(second);
    for (let follower = 0; follower < 4; follower++) open.push(await alice.follow(turnIdOf(second)));
    expect(await alice.followRefused(turnIdOf(second))).toEqual(tooMany("too_many_streams", 5));
  });

  it("answers HEAD of a stream as a GET would, 429 at the limit included, and holds no place", async () => {
    const turn = await alice.start();
    open.push(turn);
    const turnId = turnIdOf(turn);
    // 1 stream (the turn's own) + 3 followers = 4 of 5
    for (let follower = 0; follower < 3; follower++) open.push(await alice.follow(turnId));
    for (let probe = 0; probe < 10; probe++)
      expect(await alice.head(turnId)).toEqual({ status: 200, retryAfter: null });
    // the probes took no place: the fifth stream still opens
    open.push(await alice.follow(turnId));
    expect(await alice.followRefused(turnId)).toEqual(tooMany("too_many_streams", 5));
    expect(await alice.head(turnId)).toEqual({ status: 429, retryAfter: "5" });
  });

  it("counts a replay of an ended turn only while it streams", async () => {
    const ended = await alice.start();
    await alice.abortAll();
    await ended.untilEnd();
    const running = await alice.start();
    open.push(running);
    for (let follower = 0; follower < 3; follower++) open.push(await alice.follow(turnIdOf(running)));
    // 4 of 5 places held: 20 replays in a row each close by themselves and give the last place back
    for (let replay = 0; replay < 20; replay++) {
      const stream = await SseStream.open(`${server.baseUrl}/api/turns/${turnIdOf(ended)}/events`, {
        headers: { authorization: `Bearer ${ALICE}` },
      });
      expect((await stream.untilEnd()).at(-1)?.type).toBe("turn_abort");
    }
    open.push(await alice.follow(turnIdOf(running)));
    expect(await alice.followRefused(turnIdOf(running))).toEqual(tooMany("too_many_streams", 5));
  });
});

describe("without auth (the loopback principal) and on the HTTP boundary", () => {
  let server: ServerHandle;
  const open: SseStream[] = [];
  const anonymous = client(() => server, null);

  beforeAll(async () => {
    server = await startServer({
      env: { MAX_TURNS_PER_PRINCIPAL: "2", MAX_STREAMS_PER_PRINCIPAL: "3", BODY_LIMIT_BYTES: "65536" },
    });
  });
  afterEach(async () => {
    await anonymous.abortAll();
    await Promise.all(open.splice(0).map((stream) => stream.cancel()));
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
  });

  it("limits the unauthenticated principal like any other", async () => {
    open.push(await anonymous.start(), await anonymous.start());
    for (let attempt = 0; attempt < 5; attempt++) {
      expect(await anonymous.startRefused()).toEqual(tooMany("too_many_turns", 2));
    }
    const turnId = turnIdOf(open[0] as SseStream);
    open.push(await anonymous.follow(turnId));
    expect(await anonymous.followRefused(turnId)).toEqual(tooMany("too_many_streams", 3));
  });

  it("answers an oversized body with 413 and Connection: close, then closes without a reset while the client still sends", async () => {
    const declaredBytes = 2 * 1024 * 1024;
    const firstPartBytes = 256 * 1024;
    const socket = net.connect({ port: server.port, host: "127.0.0.1", allowHalfOpen: true });
    let received = "";
    let serverEnded = false;
    let socketError: Error | undefined;
    socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
    socket.on("end", () => (serverEnded = true));
    socket.on("error", (error) => (socketError = error));
    const closed = new Promise<boolean>((resolve) => socket.on("close", resolve));
    try {
      await new Promise<void>((resolve) => socket.once("connect", resolve));
      socket.write(
        "POST /api/sessions/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n" +
          `Content-Type: application/json\r\nContent-Length: ${declaredBytes}\r\n\r\n`,
      );
      socket.write(Buffer.alloc(firstPartBytes, "x"));
      const response = await eventually(() => {
        const [head, body] = received.split("\r\n\r\n");
        if (!head || body === undefined) throw new Error(`no full response yet: ${received}`);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1]);
        if (body.length < length) throw new Error("body not complete yet");
        return { head, body: body.slice(0, length) };
      }, 15_000);
      expect(response.head).toMatch(/^HTTP\/1\.1 413 /);
      expect(response.head).toMatch(/\r\nconnection: close\r\n/i);
      expect(JSON.parse(response.body)).toMatchObject({ code: "body_too_large", limit: 65536 });
      // the server closes its side by itself...
      await eventually(() => expect(serverEnded).toBe(true), 15_000);
      // ...and reads what the client still sends, well past any short drain window, without a reset
      const chunk = Buffer.alloc(64 * 1024, "x");
      for (let sent = firstPartBytes; sent < declaredBytes; sent += chunk.length) {
        socket.write(chunk);
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
      socket.end();
      const hadError = await closed;
      expect(socketError).toBeUndefined();
      expect(hadError).toBe(false);
    } finally {
      socket.destroy();
    }
  });

  it("gives every one of many concurrent keep-alive clients its 413, none a reset", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 100 });
    const body = Buffer.alloc(1024 * 1024, "x");
    const send = (chunked: boolean) =>
      new Promise<string>((resolve) => {
        const request = http.request(
          {
            host: "127.0.0.1",
            port: server.port,
            path: "/api/sessions/stream",
            method: "POST",
            agent,
            headers: {
              "content-type": "application/json",
              ...(chunked ? {} : { "content-length": body.length }),
            },
          },
          (response) => {
            let text = "";
            response.on("data", (chunk: Buffer) => (text += chunk.toString()));
            response.on("end", () => {
              const code = (JSON.parse(text) as { code?: string }).code;
              resolve(`${response.statusCode} ${response.headers.connection} ${code}`);
            });
            response.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
          },
        );
        request.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
        request.end(body);
      });
    try {
      const outcomes: string[] = [];
      for (let round = 0; round < 3; round++) {
        outcomes.push(
          ...(await Promise.all(Array.from({ length: 50 }, (_, index) => send(index % 5 === 0)))),
        );
      }
      const tally = Object.fromEntries(
        [...new Set(outcomes)].map((outcome) => [
          outcome,
          outcomes.filter((item) => item === outcome).length,
        ]),
      );
      expect(tally).toEqual({ "413 close body_too_large": 150 });
    } finally {
      agent.destroy();
    }
  });

  it("refuses a body nested 5,000 levels deep with 400 invalid_input, and keeps serving", async () => {
    const deep = "[".repeat(5_000) + "]".repeat(5_000);
    for (const [path, body] of [
      ["/api/sessions/stream", `{"message":"hi","sessionId":${deep}}`],
      ["/api/turns/turn_1/continue", `{"pauseId":${deep}}`],
    ] as const) {
      const response = await fetch(`${server.baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      expect(response.status, path).toBe(400);
      expect(await response.json(), path).toMatchObject({
        code: "invalid_input",
        limit: 64,
        error: expect.stringContaining("64 levels"),
      });
    }
    expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
  });
});

describe("HISTORY_CACHE_MB", () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startServer({ env: { HISTORY_CACHE_MB: "1" } });
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
  });

  const gauge = async (name: string) => {
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    const line = text.split("\n").find((candidate) => candidate.startsWith(`${name} `));
    return Number(line?.split(" ")[1]);
  };

  it("bounds the history idle sessions hold in memory; a dropped one reads back whole", async () => {
    // each session stores its 200 kB message and the echo of it: 0.4 MB a session, 4 MB in all
    const message = "m".repeat(200_000);
    const sessionIds: string[] = [];
    for (let index = 0; index < 10; index++) {
      const stream = await SseStream.start(server.baseUrl, { message });
      await stream.untilEnd();
      sessionIds.push(sessionIdOf(stream));
    }
    expect(await gauge("reins_history_cached_characters")).toBeLessThanOrEqual(1024 * 1024);
    expect(await gauge("reins_history_cached_sessions")).toBeLessThan(10);
    const history = (await (
      await fetch(`${server.baseUrl}/api/sessions/${sessionIds[0]}/history`)
    ).json()) as {
      blocks: { kind: string; role: string; text?: string }[];
    };
    expect(history.blocks.map((block) => [block.kind, block.role, block.text?.length])).toEqual([
      ["text", "user", 200_000],
      ["text", "assistant", expect.any(Number)],
    ]);
    expect(history.blocks[1]?.text).toContain(message);
  });
});
