/**
 * HTTP validation and error mapping in-process (`buildApp(runtime).request`, docs/http-api.md): every
 * client mistake is a 4xx JSON body with `error` and `code` and no stack trace.
 */
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { parseConfig } from "../../src/config/load.js";
import { createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import type { HistoryStore } from "../../src/history/store.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";

const BODY_LIMIT_BYTES = 512;

let runtime: Runtime;
let app: ReturnType<typeof buildApp>;

beforeEach(() => {
  const { config } = parseConfig({ logLevel: "silent", server: { bodyLimitBytes: BODY_LIMIT_BYTES } });
  runtime = createRuntime(config, { store: createMemoryHistoryStore(), logger: pino({ level: "silent" }) });
  app = buildApp(runtime);
});
afterEach(async () => {
  await runtime.manager.abortAll("shutdown", 1_000);
  runtime.store.close();
});

const json = { "Content-Type": "application/json" };

type Case = {
  name: string;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  status: number;
  code: string;
  /** Text the error message must contain (a field path, a limit, a name). */
  mentions?: string;
};

const startTurn = (body: unknown, headers: Record<string, string> = json) => ({
  method: "POST",
  path: "/api/sessions/stream",
  headers,
  body: typeof body === "string" ? body : JSON.stringify(body),
});

/** A JSON value of `depth` nested arrays. */
const nestedArrays = (depth: number): string => "[".repeat(depth) + "]".repeat(depth);

const cases: Case[] = [
  {
    name: "wrong content type",
    ...startTurn({ message: "hi" }, { "Content-Type": "text/plain" }),
    status: 415,
    code: "unsupported_media_type",
    mentions: "application/json",
  },
  {
    name: "no content type",
    ...startTurn({ message: "hi" }, {}),
    status: 415,
    code: "unsupported_media_type",
  },
  { name: "malformed JSON", ...startTurn('{"message": "hi"'), status: 400, code: "invalid_json" },
  { name: "empty body", ...startTurn(""), status: 400, code: "invalid_json" },
  {
    name: "missing message",
    ...startTurn({}),
    status: 400,
    code: "invalid_request",
    mentions: "body.message",
  },
  {
    name: "empty message",
    ...startTurn({ message: "" }),
    status: 400,
    code: "invalid_request",
    mentions: "body.message",
  },
  {
    name: "message of white space only",
    ...startTurn({ message: " \n\t " }),
    status: 400,
    code: "invalid_request",
    mentions: "must not be only white space",
  },
  {
    name: "message of the wrong type",
    ...startTurn({ message: 42 }),
    status: 400,
    code: "invalid_request",
    mentions: "body.message",
  },
  { name: "a JSON array body", ...startTurn([]), status: 400, code: "invalid_request", mentions: "body" },
  {
    name: "unknown body key",
    ...startTurn({ message: "hi", temperature: 2 }),
    status: 400,
    code: "invalid_request",
    mentions: "temperature",
  },
  {
    name: "stepMode of the wrong type",
    ...startTurn({ message: "hi", stepMode: "yes" }),
    status: 400,
    code: "invalid_request",
    mentions: "body.stepMode",
  },
  {
    name: "bad sessionId characters",
    ...startTurn({ message: "hi", sessionId: "../etc/passwd" }),
    status: 400,
    code: "invalid_request",
    mentions: "body.sessionId",
  },
  {
    name: "unknown sessionId",
    ...startTurn({ message: "hi", sessionId: "ses_missing" }),
    status: 404,
    code: "session_not_found",
    mentions: "ses_missing",
  },
  {
    name: "unknown provider",
    ...startTurn({ message: "hi", provider: "gpt-17" }),
    status: 400,
    code: "unknown_provider",
    mentions: "gpt-17",
  },
  {
    name: "oversized body",
    ...startTurn({ message: "x".repeat(BODY_LIMIT_BYTES) }),
    status: 413,
    code: "body_too_large",
    mentions: String(BODY_LIMIT_BYTES),
  },
  {
    // the body object is level 1: 64 arrays inside it make 65
    name: "JSON nested 65 levels deep",
    ...startTurn(`{"message":"hi","sessionId":${nestedArrays(64)}}`),
    status: 400,
    code: "invalid_input",
    mentions: "deeper than 64 levels",
  },
  {
    name: "JSON nested 64 levels deep (within the limit: the schema answers)",
    ...startTurn(`{"message":"hi","sessionId":${nestedArrays(63)}}`),
    status: 400,
    code: "invalid_request",
    mentions: "body.sessionId",
  },
  {
    name: "JSON nested 65 levels deep on continue",
    method: "POST",
    path: "/api/turns/turn_1/continue",
    headers: json,
    body: `{"pauseId":${nestedArrays(64)}}`,
    status: 400,
    code: "invalid_input",
    mentions: "64",
  },
  {
    name: "bad Last-Event-ID",
    path: "/api/turns/turn_1/events",
    headers: { "Last-Event-ID": "abc" },
    status: 400,
    code: "invalid_request",
    mentions: "last-event-id",
  },
  {
    name: "negative Last-Event-ID",
    path: "/api/turns/turn_1/events",
    headers: { "Last-Event-ID": "-1" },
    status: 400,
    code: "invalid_request",
    mentions: "last-event-id",
  },
  {
    name: "events of an unknown turn",
    path: "/api/turns/turn_missing/events",
    status: 404,
    code: "turn_not_found",
  },
  { name: "unknown route", path: "/api/nothing/here", status: 404, code: "route_not_found" },
  {
    name: "wrong method",
    method: "DELETE",
    path: "/api/turns/active",
    status: 405,
    code: "method_not_allowed",
  },
  {
    name: "unknown query key on the active list",
    path: "/api/turns/active?verbose=1",
    status: 400,
    code: "invalid_request",
    mentions: "verbose",
  },
  // routes that take no query refuse one too, before looking anything up
  ...(
    [
      ["POST", "/api/turns/turn_nope/abort?force=1"],
      ["POST", "/api/turns/turn_nope/tools/call_nope/abort?force=1"],
      ["DELETE", "/api/sessions/ses_nope?force=1"],
      ["POST", "/api/chat/chat_nope/stop?force=1"],
      ["GET", "/api/chat/chat_nope/stream?force=1"],
    ] as const
  ).map(([method, path]) => ({
    name: `unknown query key on ${method} ${path.split("?")[0]}`,
    method,
    path,
    status: 400,
    code: "invalid_request",
    mentions: "force",
  })),
  // routes that take no body refuse one with a field, or one that is not JSON, before looking anything up
  ...(
    [
      ["POST", "/api/turns/turn_nope/abort"],
      ["POST", "/api/turns/turn_nope/tools/call_nope/abort"],
      ["DELETE", "/api/sessions/ses_nope"],
      ["POST", "/api/chat/chat_nope/stop"],
    ] as const
  ).flatMap(([method, path]): Case[] => [
    {
      name: `a body field on ${method} ${path}`,
      method,
      path,
      headers: json,
      body: JSON.stringify({ dryRun: true }),
      status: 400,
      code: "invalid_request",
      mentions: "dryRun",
    },
    {
      name: `malformed JSON on ${method} ${path}`,
      method,
      path,
      headers: json,
      body: '{"dryRun": true',
      status: 400,
      code: "invalid_json",
    },
    {
      name: `a text body on ${method} ${path}`,
      method,
      path,
      headers: { "Content-Type": "text/plain" },
      body: "please do not",
      status: 415,
      code: "unsupported_media_type",
    },
  ]),
  {
    name: "an empty JSON object is no body at all",
    method: "POST",
    path: "/api/turns/turn_missing/abort",
    headers: json,
    body: "{}",
    status: 404,
    code: "turn_not_found",
  },
  {
    name: "unknown query key on a new turn",
    ...startTurn({ message: "hi" }),
    path: "/api/sessions/stream?stream=1",
    status: 400,
    code: "invalid_request",
    mentions: "stream",
  },
  {
    name: "abort of an unknown turn",
    method: "POST",
    path: "/api/turns/turn_missing/abort",
    status: 404,
    code: "turn_not_found",
  },
  {
    name: "abort with a bad turn id",
    method: "POST",
    path: "/api/turns/bad%20id/abort",
    status: 400,
    code: "invalid_request",
    mentions: "params.id",
  },
  {
    name: "history of an unknown session",
    path: "/api/sessions/ses_missing/history",
    status: 404,
    code: "session_not_found",
  },
  {
    name: "history with a bad session id",
    path: "/api/sessions/bad$id/history",
    status: 400,
    code: "invalid_request",
    mentions: "params.id",
  },
];

describe("HTTP client errors", () => {
  it.each(cases)("$name → $status $code", async (testCase) => {
    const response = await app.request(testCase.path, {
      method: testCase.method ?? "GET",
      headers: testCase.headers,
      body: testCase.body,
    });
    expect(response.status).toBe(testCase.status);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const text = await response.text();
    expect(text).not.toMatch(/\n\s*at /);
    const body = JSON.parse(text) as Record<string, unknown>;
    expect(body.code).toBe(testCase.code);
    expect(typeof body.error).toBe("string");
    expect(body.error).not.toBe("");
    if (testCase.mentions) expect(String(body.error)).toContain(testCase.mentions);
    // a rejected request starts nothing
    expect(runtime.manager.activeCount()).toBe(0);
    expect(runtime.store.listTurns()).toEqual([]);
  });

  it("closes the connection with a 413", async () => {
    const response = await app.request(
      "/api/sessions/stream",
      startTurnInit({ message: "x".repeat(BODY_LIMIT_BYTES) }),
    );
    expect(response.status).toBe(413);
    expect(response.headers.get("connection")).toBe("close");
    expect(await response.json()).toMatchObject({ code: "body_too_large", limit: BODY_LIMIT_BYTES });
  });

  it("answers an abort of an unknown turn with exactly the documented message", async () => {
    const response = await app.request("/api/turns/turn_missing/abort", { method: "POST" });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      error: "Turn not found or already completed",
      code: "turn_not_found",
    });
  });

  it("refuses an abort of a turn that has already completed", async () => {
    const response = await app.request("/api/sessions/stream", startTurnInit({ message: "hi" }));
    await response.text();
    const [turn] = runtime.store.listTurns();
    expect(turn?.status).toBe("completed");

    const abort = await app.request(`/api/turns/${turn?.id}/abort`, { method: "POST" });
    expect(abort.status).toBe(404);
    expect(await abort.json()).toEqual({
      error: "Turn not found or already completed",
      code: "turn_not_found",
    });
  });

  it("accepts a valid request (the cases above fail for their stated reason)", async () => {
    const response = await app.request(
      "/api/sessions/stream",
      startTurnInit({ message: "hi", agentId: "agent-1", provider: "scripted", stepMode: false }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const text = await response.text();
    expect(text).toMatch(/^retry: 2000\n\nid: 1\nevent: turn_start\n/);
    expect(text).toMatch(/event: turn_complete\n/);
  });

  it("honours a valid Last-Event-ID by replaying only the later events", async () => {
    const message = '/tool echo {"text":"a"}\n/then\none two';
    await (await app.request("/api/sessions/stream", startTurnInit({ message }))).text();
    const [turn] = runtime.store.listTurns();
    const all = runtime.store.listEvents(turn?.id ?? "");
    expect(all.length).toBeGreaterThan(3);

    const response = await app.request(`/api/turns/${turn?.id}/events`, {
      headers: { "Last-Event-ID": "2" },
    });
    expect(response.status).toBe(200);
    const ids = [...(await response.text()).matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));
    expect(ids).toEqual(all.slice(2).map((event) => event.seq));
  });

  it("accepts a JSON content type with a charset and a +json subtype", async () => {
    for (const contentType of ["application/json; charset=utf-8", "application/merge-patch+json"]) {
      const response = await app.request("/api/sessions/stream", {
        method: "POST",
        headers: { "Content-Type": contentType },
        body: JSON.stringify({ message: "hi" }),
      });
      expect(response.status, contentType).toBe(200);
      await response.text();
    }
  });
});

function startTurnInit(body: unknown): RequestInit {
  return { method: "POST", headers: json, body: JSON.stringify(body) };
}

describe("health endpoints", () => {
  it("reports liveness and readiness", async () => {
    const health = await app.request("/healthz");
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
    const ready = await app.request("/readyz");
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready" });
  });

  it("answers a failure that is not the client's with 500 internal_error, and nothing of the failure", async () => {
    runtime.store.listSessions = () => {
      throw new Error("disk on fire at /var/lib/reins/secret.db");
    };
    const response = await app.request("/api/sessions");
    expect(response.status).toBe(500);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({
      error: "Internal server error; the server's log has the details",
      code: "internal_error",
    });
    expect(text).not.toContain("disk on fire");
    expect(text).not.toContain("at ");
  });

  it("reports not ready once the database is closed, while staying alive", async () => {
    runtime.store.close();
    const ready = await app.request("/readyz");
    expect(ready.status).toBe(503);
    const body = (await ready.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ code: "db_unreachable" });
    expect(typeof body.error).toBe("string");
    expect((await app.request("/healthz")).status).toBe(200);
  });
});

describe("framing", () => {
  it("serves the page with its own policy plus frame-ancestors 'none' and X-Frame-Options DENY", async () => {
    const page = await app.request("/");
    expect(page.status).toBe(200);
    const policy = page.headers.get("content-security-policy") ?? "";
    expect(policy).toContain("default-src 'self'");
    expect(policy).toContain("connect-src 'self'");
    expect(policy.split(";").map((directive) => directive.trim())).toContain("frame-ancestors 'none'");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
  });

  it.each(["/api/turns/active", "/healthz", "/openapi.json", "/nothing/here"])(
    "forbids framing %s as well",
    async (path) => {
      const response = await app.request(path);
      expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
    },
  );

  // event streams are made with the frame headers (frameGuard passes them as they are)
  it.each([
    ["a turn's event stream", "/api/sessions/stream", { message: "hi" }],
    [
      "an AI SDK chat stream",
      "/api/chat",
      {
        id: "chat-framing",
        trigger: "submit-message",
        messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }],
      },
    ],
  ])("forbids framing %s, with one policy", async (_name, path, body) => {
    const response = await app.request(path, { method: "POST", headers: json, body: JSON.stringify(body) });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(response.headers.get("content-security-policy")).toBe("frame-ancestors 'none'");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    await response.text();
  });
});

describe("turn routes of someone else's turn and of an unknown turn", () => {
  const ALICE = { Authorization: "Bearer alice-token-1234" };
  const BOB = { Authorization: "Bearer bob-token-5678" };
  let storeCalls: string[] = [];
  let authRuntime: Runtime;
  let authApp: ReturnType<typeof buildApp>;

  beforeEach(() => {
    const { config } = parseConfig({
      logLevel: "silent",
      auth: {
        tokens: [
          { principal: "alice", token: "alice-token-1234" },
          { principal: "bob", token: "bob-token-5678" },
        ],
      },
    });
    const store = createMemoryHistoryStore();
    // every store method the server calls, by name, in order
    const recording = new Proxy(store, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          storeCalls.push(String(property));
          return (value as (...parameters: unknown[]) => unknown).apply(target, args);
        };
      },
    }) satisfies HistoryStore;
    authRuntime = createRuntime(config, { store: recording, logger: pino({ level: "silent" }) });
    authApp = buildApp(authRuntime);
  });
  afterEach(async () => {
    await authRuntime.manager.abortAll("shutdown", 1_000);
    authRuntime.store.close();
  });

  const routes = (turnId: string) => [
    { method: "POST", path: `/api/turns/${turnId}/abort` },
    { method: "POST", path: `/api/turns/${turnId}/tools/call_1/abort` },
    { method: "POST", path: `/api/turns/${turnId}/continue`, body: '{"pauseId":"pause_1"}' },
    { method: "GET", path: `/api/turns/${turnId}/events` },
    { method: "GET", path: `/api/turns/${turnId}/trace` },
  ];

  it("answers the same and looks up the same things for both", async () => {
    const started = await authApp.request("/api/sessions/stream", {
      method: "POST",
      headers: { ...json, ...ALICE },
      body: JSON.stringify({ message: "hi" }),
    });
    await started.text();
    const [aliceTurn] = authRuntime.store.listTurns();
    const aliceTurnId = aliceTurn?.id ?? "";
    const unknownTurnId = "turn_unknown";

    const bobAsks = async (route: { method: string; path: string; body?: string }) => {
      storeCalls = [];
      const response = await authApp.request(route.path, {
        method: route.method,
        headers: { ...json, ...BOB },
        body: route.body,
      });
      return { status: response.status, body: await response.text(), lookups: storeCalls };
    };
    for (const [index, route] of routes(aliceTurnId).entries()) {
      const theirs = await bobAsks(route);
      const unknown = await bobAsks(routes(unknownTurnId)[index] ?? route);
      expect(theirs.status, route.path).toBe(404);
      expect(unknown.status, route.path).toBe(404);
      expect(theirs.body.replaceAll(aliceTurnId, "<id>"), route.path).toBe(
        unknown.body.replaceAll(unknownTurnId, "<id>"),
      );
      expect(theirs.lookups, route.path).toEqual(unknown.lookups);
      expect(theirs.lookups, route.path).toEqual(expect.arrayContaining(["getTurn", "sessionOwner"]));
    }
    // and alice does see her turn
    const trace = await authApp.request(`/api/turns/${aliceTurnId}/trace`, { headers: ALICE });
    expect(trace.status).toBe(200);
  });
});
