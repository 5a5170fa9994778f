/**
 * What a browser's EventSource needs from `GET /api/turns/:id/events`
 * (docs/events.md#replay-and-reconnection), over the real server on a real socket: every stream opens with
 * `retry:`; a client that already holds the whole of an ended turn gets 204 (which stops an EventSource's
 * reconnect loop) while one that is behind gets the rest and the close; and, with AUTH_TOKENS set, a
 * short-lived stream token (one turn, owner only) opens the stream without an Authorization header, and never
 * shows up in the server's log. The token store's expiry and limits are also checked with an injected clock.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import {
  DEFAULT_STREAM_TOKEN_TTL_SECONDS,
  MAX_LIVE_STREAM_TOKENS_PER_PRINCIPAL,
  StreamTokens,
} from "../../src/http/stream-tokens.js";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { eventually } from "../helpers/eventually.js";
import { SseStream, turnIdOf } from "../helpers/sse.js";

const RETRY_FIELD = "retry: 2000\n\n";
const ALICE = "alice-token-0001";
const BOB = "bob-token-000002";

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** Runs a turn to its end; returns its id and its events. */
async function runTurn(baseUrl: string, message: string, headers: Record<string, string> = {}) {
  const stream = await SseStream.open(`${baseUrl}/api/sessions/stream`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ message }),
  });
  const events = await stream.untilEnd();
  return { turnId: turnIdOf(stream), events, raw: stream.raw.join("") };
}

const lastSeqOf = (events: TurnEvent[]) => events.at(-1)?.seq ?? 0;

describe("GET /api/turns/:id/events for an EventSource", () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startServer({ env: { STEP_PAUSE_TIMEOUT_MS: "60000" } });
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
  });

  it("answers 204 once the client has the ended turn's last event, and sends the rest before that", async () => {
    const turn = await runTurn(server.baseUrl, '/tool echo {"text":"one"}\n/then\ndone');
    expect(turn.raw.startsWith(RETRY_FIELD)).toBe(true);
    const lastSeq = lastSeqOf(turn.events);
    expect(turn.events.at(-1)?.type).toBe("turn_complete");
    const eventsUrl = `${server.baseUrl}/api/turns/${turn.turnId}/events`;

    for (const [label, init, url] of [
      ["Last-Event-ID = last seq", { headers: { "last-event-id": String(lastSeq) } }, eventsUrl],
      ["Last-Event-ID past it", { headers: { "last-event-id": String(lastSeq + 5) } }, eventsUrl],
      ["?lastEventId = last seq", {}, `${eventsUrl}?lastEventId=${lastSeq}`],
    ] as const) {
      const response = await fetch(url, init);
      expect(response.status, label).toBe(204);
      expect(await response.text(), label).toBe("");
    }

    // one event behind: exactly the rest, then the server closes the stream
    const behind = await SseStream.open(eventsUrl, { headers: { "last-event-id": String(lastSeq - 2) } });
    const rest = await behind.untilEnd();
    expect(behind.response.status).toBe(200);
    expect(behind.raw.join("").startsWith(RETRY_FIELD)).toBe(true);
    expect(rest.map((event) => event.seq)).toEqual([lastSeq - 1, lastSeq]);
    expect(rest).toEqual(turn.events.slice(-2));

    // from the start: the whole log
    const all = await SseStream.open(eventsUrl);
    expect(await all.untilEnd()).toEqual(turn.events);
  });

  it("keeps a running turn's stream open even when the client is at its latest event", async () => {
    const started = await SseStream.start(server.baseUrl, {
      message: '/tool echo {"text":"x"}\n/then\ndone',
      stepMode: true,
    });
    const pause = await started.next((event) => event.type === "debugger.pause");
    const turnId = turnIdOf(started);
    const follower = await SseStream.open(`${server.baseUrl}/api/turns/${turnId}/events`, {
      headers: { "last-event-id": String(pause.seq) },
    });
    expect(follower.response.status).toBe(200);
    expect(follower.isEnded).toBe(false);
    await fetch(`${server.baseUrl}/api/turns/${turnId}/abort`, { method: "POST" });
    const events = await follower.untilEnd();
    expect(follower.raw.join("").startsWith(RETRY_FIELD)).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "user" });
    expect(events.every((event) => event.seq > pause.seq)).toBe(true);
    await started.untilEnd();
  });
});

describe("stream tokens with AUTH_TOKENS set", () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startServer({
      env: { AUTH_TOKENS: `alice:${ALICE},bob:${BOB}`, LOG_LEVEL: "trace", STEP_PAUSE_TIMEOUT_MS: "60000" },
    });
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
  });

  const issued: string[] = [];
  const mint = async (turnId: string, principalToken: string, body?: unknown) => {
    const response = await fetch(`${server.baseUrl}/api/turns/${turnId}/stream-token`, {
      method: "POST",
      headers: {
        ...bearer(principalToken),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const payload = (await response.json()) as { token: string; expiresAt: number; code?: string };
    if (response.status === 200) issued.push(payload.token);
    return { response, payload };
  };
  const eventsUrl = (turnId: string, query: string) =>
    `${server.baseUrl}/api/turns/${turnId}/events?${query}`;

  it("gives the owner a token that opens that turn's stream without an Authorization header", async () => {
    const turn = await runTurn(server.baseUrl, "hello", bearer(ALICE));
    const before = Date.now();
    const { response, payload } = await mint(turn.turnId, ALICE);
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(Object.keys(payload).sort()).toEqual(["expiresAt", "token"]);
    expect(payload.token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(payload.expiresAt).toBeGreaterThanOrEqual(before + DEFAULT_STREAM_TOKEN_TTL_SECONDS * 1000);

    const stream = await SseStream.open(eventsUrl(turn.turnId, `token=${payload.token}`));
    expect(await stream.untilEnd()).toEqual(turn.events);
    expect(stream.raw.join("").startsWith(RETRY_FIELD)).toBe(true);
    // what the EventSource sends when it reconnects after the end: 204, so it stops
    const again = await fetch(eventsUrl(turn.turnId, `token=${payload.token}`), {
      headers: { "last-event-id": String(lastSeqOf(turn.events)) },
    });
    expect(again.status).toBe(204);
    // HEAD with the token answers as the GET would (docs/events.md), with no stream
    const head = await fetch(eventsUrl(turn.turnId, `token=${payload.token}`), { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toMatch(/^text\/event-stream/);
    // without the token, the same requests are refused
    expect((await fetch(`${server.baseUrl}/api/turns/${turn.turnId}/events`)).status).toBe(401);
    const url = `${server.baseUrl}/api/turns/${turn.turnId}/events`;
    expect((await fetch(url, { method: "HEAD" })).status).toBe(401);
  });

  it("opens a running turn's stream live with the token", async () => {
    const started = await SseStream.open(`${server.baseUrl}/api/sessions/stream`, {
      method: "POST",
      headers: { "content-type": "application/json", ...bearer(ALICE) },
      body: JSON.stringify({ message: '/tool echo {"text":"x"}\n/then\ndone', stepMode: true }),
    });
    await started.next((event) => event.type === "debugger.pause");
    const turnId = turnIdOf(started);
    const { payload } = await mint(turnId, ALICE);
    const follower = await SseStream.open(eventsUrl(turnId, `token=${payload.token}`));
    await follower.next((event) => event.type === "debugger.pause");
    expect(follower.isEnded).toBe(false);
    await fetch(`${server.baseUrl}/api/turns/${turnId}/abort`, { method: "POST", headers: bearer(ALICE) });
    expect((await follower.untilEnd()).at(-1)).toMatchObject({ type: "turn_abort" });
    await started.untilEnd();
  });

  it("gives another principal the 404 of an unknown turn, and nobody a token without a bearer token", async () => {
    const turn = await runTurn(server.baseUrl, "hello", bearer(ALICE));
    const bobs = await mint(turn.turnId, BOB);
    const unknown = await mint("turn_does_not_exist", BOB);
    expect(bobs.response.status).toBe(404);
    expect(bobs.payload).toEqual({ ...unknown.payload, error: expect.any(String) });
    expect(bobs.payload.code).toBe("turn_not_found");
    const anonymous = await fetch(`${server.baseUrl}/api/turns/${turn.turnId}/stream-token`, {
      method: "POST",
    });
    expect(anonymous.status).toBe(401);
  });

  it("refuses a token on another turn, another route, tampered, or with a bearer-less guess (401)", async () => {
    const turnA = await runTurn(server.baseUrl, "hello", bearer(ALICE));
    const turnB = await runTurn(server.baseUrl, "hello", bearer(ALICE));
    const { payload } = await mint(turnA.turnId, ALICE);
    const [id, secret] = payload.token.split(".") as [string, string];
    const tampered = `${id}.${secret.slice(0, -1)}${secret.endsWith("A") ? "B" : "A"}`;
    const refused = [
      eventsUrl(turnB.turnId, `token=${payload.token}`),
      eventsUrl(turnA.turnId, `token=${tampered}`),
      eventsUrl(turnA.turnId, `token=${id}`),
      eventsUrl(turnA.turnId, "token=not-a-token"),
      `${server.baseUrl}/api/turns/${turnA.turnId}/trace?token=${payload.token}`,
    ];
    for (const url of refused) {
      const response = await fetch(url);
      const text = await response.text();
      expect(response.status, url).toBe(401);
      expect(JSON.parse(text), url).toMatchObject({ code: "unauthorized" });
      expect(text, url).not.toContain(secret);
    }
    // a bad lastEventId next to a good token: the 400 names the field, not the token
    const invalid = await fetch(eventsUrl(turnA.turnId, `token=${payload.token}&lastEventId=abc`));
    const invalidText = await invalid.text();
    expect(invalid.status).toBe(400);
    expect(invalidText).toContain("query.lastEventId");
    expect(invalidText).not.toContain(secret);
  });

  it("refuses an expired token (401), and a lifetime out of range (400 naming ttlSeconds)", async () => {
    const turn = await runTurn(server.baseUrl, "hello", bearer(ALICE));
    const { response, payload } = await mint(turn.turnId, ALICE, { ttlSeconds: 1 });
    expect(response.status).toBe(200);
    // the server's clock is this machine's: wait until the token is past its expiry
    await new Promise((resolve) => setTimeout(resolve, Math.max(payload.expiresAt - Date.now(), 0) + 250));
    const expired = await fetch(eventsUrl(turn.turnId, `token=${payload.token}`));
    expect(expired.status).toBe(401);
    expect(await expired.json()).toMatchObject({
      code: "unauthorized",
      error: "Invalid or expired stream token",
    });

    for (const ttlSeconds of [0, 301, 1.5]) {
      const outOfRange = await mint(turn.turnId, ALICE, { ttlSeconds });
      expect(outOfRange.response.status, String(ttlSeconds)).toBe(400);
      expect(JSON.stringify(outOfRange.payload)).toContain("body.ttlSeconds");
    }
  });

  it("never writes a token to the server's log", async () => {
    expect(issued.length).toBeGreaterThanOrEqual(4);
    // the log is captured and does speak of every token it issued (its lines are batched: wait for them)
    const log = await eventually(() => {
      const lines = server.logs().join("\n");
      expect(lines.split('"msg":"stream token issued"').length - 1).toBeGreaterThanOrEqual(issued.length);
      return lines;
    });
    for (const token of issued) {
      const [id, secret] = token.split(".") as [string, string];
      expect(log).not.toContain(id);
      expect(log).not.toContain(secret);
    }
  });
});

describe("StreamTokens (injected clock)", () => {
  const bytes = (() => {
    let counter = 0;
    return (size: number) => Buffer.alloc(size, ++counter);
  })();

  it("opens only its turn, until its expiry and not at it", () => {
    let now = 1_000_000;
    const tokens = new StreamTokens({ now: () => now });
    const { token, expiresAt } = tokens.issue("turn_a", "alice", 60);
    expect(expiresAt).toBe(1_060_000);
    expect(tokens.principalFor(token, "turn_a")).toEqual({ principal: "alice" });
    expect(tokens.principalFor(token, "turn_b")).toBeNull();
    now = expiresAt - 1;
    expect(tokens.principalFor(token, "turn_a")).toEqual({ principal: "alice" });
    now = expiresAt;
    expect(tokens.principalFor(token, "turn_a")).toBeNull();
    // and it is forgotten
    expect(tokens.size).toBe(0);
  });

  it("tells tokens apart: an id with another token's secret opens nothing", () => {
    const tokens = new StreamTokens({ randomBytes: bytes });
    const first = tokens.issue("turn_a", "alice");
    const second = tokens.issue("turn_a", "alice");
    expect(first.token).not.toBe(second.token);
    const [firstId] = first.token.split(".") as [string];
    const [, secondSecret] = second.token.split(".") as [string, string];
    expect(tokens.principalFor(`${firstId}.${secondSecret}`, "turn_a")).toBeNull();
    expect(tokens.principalFor(`${first.token}.extra`, "turn_a")).toBeNull();
    expect(tokens.principalFor(first.token, "turn_a")).toEqual({ principal: "alice" });
  });

  it("refuses a principal's token beyond the live maximum until some expire (429)", () => {
    let now = 0;
    const tokens = new StreamTokens({ now: () => now });
    for (let index = 0; index < MAX_LIVE_STREAM_TOKENS_PER_PRINCIPAL; index++)
      tokens.issue("turn_a", "alice", 10);
    expect(() => tokens.issue("turn_a", "alice", 10)).toThrow(
      expect.objectContaining({ status: 429, code: "too_many_stream_tokens" }),
    );
    // another principal is not affected
    expect(() => tokens.issue("turn_b", "bob", 10)).not.toThrow();
    now = 10_000;
    expect(() => tokens.issue("turn_a", "alice", 10)).not.toThrow();
    expect(tokens.size).toBe(1);
  });
});
