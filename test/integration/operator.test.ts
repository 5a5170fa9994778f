/**
 * The operator surface over the real server: step mode paused and continued over HTTP, bearer auth
 * with ownership (another principal's things are 404), 401 on every /api route without a token (a
 * table built from /openapi.json, so a new route cannot slip through), CORS, and the refusal to listen
 * on a non-loopback host without tokens.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import { runServerToExit, startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, sessionIdOf, turnIdOf } from "../helpers/sse.js";

const ALICE = "alice-token-0001";
const BOB = "bob-token-000002";

const ofType = <T extends TurnEvent["type"]>(events: TurnEvent[], type: T) =>
  events.filter((event): event is Extract<TurnEvent, { type: T }> => event.type === type);

describe("step mode", () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startServer({ env: { STEP_PAUSE_TIMEOUT_MS: "60000" } });
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
  });

  const post = (path: string, body: unknown) =>
    fetch(`${server.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("pauses after inference and after tools, and continues pause by pause", async () => {
    const stream = await SseStream.start(server.baseUrl, {
      message: '/tool echo {"text":"one"}\n/then\n/tool echo {"text":"two"}\n/then\ndone',
      stepMode: true,
    });
    await stream.next((event) => event.type === "turn_start");
    const turnId = turnIdOf(stream);
    const phases: string[] = [];
    for (let pause = 0; pause < 4; pause++) {
      const event = await stream.next(
        (candidate) => candidate.type === "debugger.pause" && !phases.includes(`${candidate.seq}`),
      );
      if (event.type !== "debugger.pause") throw new Error("not a pause");
      phases.push(`${event.seq}`);
      const active = (await (await fetch(`${server.baseUrl}/api/turns/active`)).json()) as {
        turns: { turnId: string; paused: boolean; pause: { pauseId: string; phase: string } | null }[];
      };
      const listed = active.turns.find((turn) => turn.turnId === turnId);
      expect(listed).toMatchObject({ paused: true, pause: { pauseId: event.pauseId, phase: event.phase } });
      // nothing moves while paused
      const before = stream.events.length;
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(stream.events.length).toBe(before);
      expect((await post(`/api/turns/${turnId}/continue`, { pauseId: "pause_wrong" })).status).toBe(404);
      expect((await post(`/api/turns/${turnId}/continue`, { pauseId: event.pauseId })).status).toBe(200);
    }
    const events = await stream.untilEnd();
    const pauses = ofType(events, "debugger.pause");
    expect(pauses.map((pause) => pause.phase)).toEqual([
      "after_inference",
      "after_tools",
      "after_inference",
      "after_tools",
    ]);
    expect(pauses[0]?.summary).toEqual({
      calls: [expect.objectContaining({ toolName: "echo", input: { text: "one" } })],
    });
    expect(pauses[1]?.summary).toEqual({
      results: [expect.objectContaining({ toolName: "echo", status: "complete", result: "one" })],
    });
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
  });

  it("a call shown at an after_inference pause can be cancelled there: it never starts, the others run", async () => {
    const stream = await SseStream.start(server.baseUrl, {
      message: '/tool echo {"text":"keep"}\n/tool echo {"text":"drop"}',
      stepMode: true,
    });
    const pause = await stream.next((event) => event.type === "debugger.pause");
    if (pause.type !== "debugger.pause") throw new Error("not a pause");
    const turnId = turnIdOf(stream);
    const [kept, dropped] = (pause.summary as { calls: { toolId: string }[] }).calls;
    expect((await post(`/api/turns/${turnId}/tools/${dropped?.toolId}/abort`, {})).status).toBe(200);
    expect((await post(`/api/turns/${turnId}/continue`, { pauseId: pause.pauseId })).status).toBe(200);
    const after = await stream.next(
      (event) => event.type === "debugger.pause" && event.phase === "after_tools",
    );
    if (after.type !== "debugger.pause") throw new Error("not a pause");
    expect((await post(`/api/turns/${turnId}/continue`, { pauseId: after.pauseId })).status).toBe(200);

    const events = await stream.untilEnd();
    const started = ofType(events, "tool_start").map((event) => event.toolId);
    expect(started).toEqual([kept?.toolId]);
    const results = ofType(events, "tool_result");
    expect(results.find((event) => event.toolId === kept?.toolId)).toMatchObject({ status: "complete" });
    expect(results.find((event) => event.toolId === dropped?.toolId)).toMatchObject({
      status: "cancelled",
      result: "[CANCELLED] Tool cancelled by user.",
    });
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
  });

  it("switching the session's step mode off releases the pause at once", async () => {
    const first = await SseStream.start(server.baseUrl, { message: "hello" });
    await first.untilEnd();
    const sessionId = sessionIdOf(first);
    expect((await post(`/api/sessions/${sessionId}/step-mode`, { enabled: true })).status).toBe(200);
    const stream = await SseStream.start(server.baseUrl, { message: '/tool echo {"text":"x"}', sessionId });
    await stream.next((event) => event.type === "debugger.pause");
    expect((await post(`/api/sessions/${sessionId}/step-mode`, { enabled: false })).status).toBe(200);
    const events = await stream.untilEnd();
    expect(ofType(events, "debugger.pause")).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
  });

  it("an abort releases a paused turn", async () => {
    const stream = await SseStream.start(server.baseUrl, {
      message: '/tool echo {"text":"x"}',
      stepMode: true,
    });
    await stream.next((event) => event.type === "debugger.pause");
    const turnId = turnIdOf(stream);
    await fetch(`${server.baseUrl}/api/turns/${turnId}/abort`, { method: "POST" });
    const events = await stream.untilEnd();
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "user" });
    const active = (await (await fetch(`${server.baseUrl}/api/turns/active`)).json()) as {
      turns: { turnId: string }[];
    };
    expect(active.turns.map((turn) => turn.turnId)).not.toContain(turnId);
  });
});

describe("auth and ownership", () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startServer({
      env: {
        AUTH_TOKENS: `alice:${ALICE},bob:${BOB}`,
        STEP_PAUSE_TIMEOUT_MS: "60000",
        CORS_ORIGINS: "https://chat.example",
      },
    });
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
  });

  const as = (token: string | null, init: RequestInit = {}): RequestInit => ({
    ...init,
    headers: {
      ...(init.headers as Record<string, string>),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
  });
  const start = (token: string, body: Record<string, unknown>) =>
    SseStream.open(
      `${server.baseUrl}/api/sessions/stream`,
      as(token, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );

  it("answers 401 on every /api route of the OpenAPI document without a valid token", async () => {
    const document = (await (await fetch(`${server.baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const routes = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => ({
        method: method.toUpperCase(),
        path: path.replace(/\{[^}]+\}/g, "x_1"),
      })),
    );
    expect(routes.map((route) => `${route.method} ${route.path}`)).toEqual(
      expect.arrayContaining([
        "POST /api/sessions/stream",
        "GET /api/turns/active",
        "POST /api/turns/x_1/abort",
        "POST /api/turns/x_1/tools/x_1/abort",
        "POST /api/turns/x_1/continue",
        "GET /api/turns/x_1/events",
        "GET /api/turns/x_1/trace",
        "GET /api/sessions/x_1/history",
      ]),
    );
    for (const route of routes) {
      for (const token of [null, "wrong-token-123"]) {
        const init: RequestInit = as(token, { method: route.method });
        if (route.method === "POST") {
          init.body = "{}";
          init.headers = { ...(init.headers as Record<string, string>), "content-type": "application/json" };
        }
        const response = await fetch(`${server.baseUrl}${route.path}`, init);
        expect(response.status, `${route.method} ${route.path} with ${token ?? "no token"}`).toBe(401);
        expect(await response.json()).toMatchObject({ code: "unauthorized" });
      }
    }
  });

  it("keeps each principal to its own sessions, turns and pauses (others get 404)", async () => {
    const stream = await start(ALICE, { message: '/tool echo {"text":"mine"}', stepMode: true });
    const pause = await stream.next((event) => event.type === "debugger.pause");
    const turnId = turnIdOf(stream);
    const sessionId = sessionIdOf(stream);
    const pauseId = pause.type === "debugger.pause" ? pause.pauseId : "";
    const json = { "content-type": "application/json" };

    const bobSees = await (await fetch(`${server.baseUrl}/api/turns/active`, as(BOB))).json();
    expect(bobSees).toEqual({ turns: [], zombies: [] });
    const aliceSees = (await (await fetch(`${server.baseUrl}/api/turns/active`, as(ALICE))).json()) as {
      turns: { turnId: string }[];
    };
    expect(aliceSees.turns.map((turn) => turn.turnId)).toEqual([turnId]);

    const bobTries = [
      fetch(
        `${server.baseUrl}/api/turns/${turnId}/continue`,
        as(BOB, { method: "POST", headers: json, body: JSON.stringify({ pauseId }) }),
      ),
      fetch(`${server.baseUrl}/api/turns/${turnId}/abort`, as(BOB, { method: "POST" })),
      fetch(`${server.baseUrl}/api/sessions/${sessionId}/history`, as(BOB)),
      fetch(`${server.baseUrl}/api/turns/${turnId}/events`, as(BOB)),
      fetch(`${server.baseUrl}/api/turns/${turnId}/trace`, as(BOB)),
      fetch(
        `${server.baseUrl}/api/sessions/${sessionId}/step-mode`,
        as(BOB, { method: "POST", headers: json, body: '{"enabled":false}' }),
      ),
      fetch(
        `${server.baseUrl}/api/sessions/stream`,
        as(BOB, { method: "POST", headers: json, body: JSON.stringify({ message: "hi", sessionId }) }),
      ),
    ];
    const unknown = await fetch(
      `${server.baseUrl}/api/turns/turn_unknown/abort`,
      as(BOB, { method: "POST" }),
    );
    for (const response of await Promise.all(bobTries)) {
      expect(response.status).toBe(404);
      // indistinguishable from something that does not exist
      expect(Object.keys((await response.json()) as object).sort()).toEqual(["code", "error"]);
    }
    expect(unknown.status).toBe(404);

    const resumed = await fetch(
      `${server.baseUrl}/api/turns/${turnId}/continue`,
      as(ALICE, { method: "POST", headers: json, body: JSON.stringify({ pauseId }) }),
    );
    expect(resumed.status).toBe(200);
    await stream.next((event) => event.type === "debugger.pause" && event.phase === "after_tools");
    const second = stream.events.filter((event) => event.type === "debugger.pause").at(-1);
    await fetch(
      `${server.baseUrl}/api/turns/${turnId}/continue`,
      as(ALICE, {
        method: "POST",
        headers: json,
        body: JSON.stringify({ pauseId: second?.type === "debugger.pause" ? second.pauseId : "" }),
      }),
    );
    expect((await stream.untilEnd()).at(-1)).toMatchObject({ type: "turn_complete" });
    expect((await fetch(`${server.baseUrl}/api/sessions/${sessionId}/history`, as(ALICE))).status).toBe(200);
  });

  it("leaves health, metrics, the page and the OpenAPI document open, and allows only listed CORS origins", async () => {
    for (const path of ["/healthz", "/readyz", "/metrics", "/openapi.json"]) {
      expect((await fetch(`${server.baseUrl}${path}`)).status, path).toBe(200);
    }
    const preflight = (origin: string) =>
      fetch(`${server.baseUrl}/api/turns/active`, {
        method: "OPTIONS",
        headers: {
          origin,
          "access-control-request-method": "GET",
          "access-control-request-headers": "authorization",
        },
      });
    const allowed = await preflight("https://chat.example");
    expect(allowed.headers.get("access-control-allow-origin")).toBe("https://chat.example");
    expect(allowed.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("authorization");
    const refused = await preflight("https://evil.example");
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("lets a page on a listed origin rename and delete a session (PATCH and DELETE pass the preflight)", async () => {
    const created = await fetch(
      `${server.baseUrl}/api/sessions`,
      as(ALICE, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }),
    );
    const { sessionId } = (await created.json()) as { sessionId: string };
    const url = `${server.baseUrl}/api/sessions/${sessionId}`;
    for (const method of ["PATCH", "DELETE"]) {
      const preflight = await fetch(url, {
        method: "OPTIONS",
        headers: {
          origin: "https://chat.example",
          "access-control-request-method": method,
          "access-control-request-headers": "authorization,content-type",
        },
      });
      expect(preflight.headers.get("access-control-allow-methods")?.split(","), method).toContain(method);
    }
    const origin = { origin: "https://chat.example", "content-type": "application/json" };
    const renamed = await fetch(
      url,
      as(ALICE, { method: "PATCH", headers: origin, body: '{"title":"Renamed"}' }),
    );
    expect(renamed.status).toBe(200);
    expect(renamed.headers.get("access-control-allow-origin")).toBe("https://chat.example");
    const deleted = await fetch(url, as(ALICE, { method: "DELETE", headers: origin }));
    expect(deleted.status).toBe(200);
    expect(deleted.headers.get("access-control-allow-origin")).toBe("https://chat.example");
  });

  it("streams a cross-origin turn with the CORS headers and the frame headers, each once", async () => {
    const stream = await SseStream.open(
      `${server.baseUrl}/api/sessions/stream`,
      as(ALICE, {
        method: "POST",
        headers: { "content-type": "application/json", origin: "https://chat.example" },
        body: JSON.stringify({ message: "hello" }),
      }),
    );
    const { headers } = stream.response;
    expect(headers.get("access-control-allow-origin")).toBe("https://chat.example");
    expect(headers.get("x-frame-options")).toBe("DENY");
    expect(headers.get("content-security-policy")).toBe("frame-ancestors 'none'");
    expect(headers.get("content-type")).toBe("text/event-stream");
    expect((await stream.untilEnd()).at(-1)?.type).toBe("turn_complete");
  });
});

describe("exposure", () => {
  it("refuses to start on a non-loopback host with no tokens, naming the fix", async () => {
    const { code, stderr } = await runServerToExit({ HOST: "0.0.0.0", DATA_DIR: "/tmp/reins-never-used" });
    expect(code).toBe(1);
    expect(stderr).toContain("server.host (HOST)");
    expect(stderr).toContain("AUTH_TOKENS");
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});
