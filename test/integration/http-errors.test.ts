/** Bad input over the real server: every mistake is a 4xx JSON error naming what is wrong. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type ServerHandle } from "../helpers/server.js";

describe("bad input over HTTP", () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startServer({ env: { BODY_LIMIT_BYTES: "4096" } });
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
  });

  const post = (path: string, body: string, contentType: string | null = "application/json") =>
    fetch(`${server.baseUrl}${path}`, {
      method: "POST",
      headers: contentType === null ? {} : { "content-type": contentType },
      body,
    });

  it.each([
    [
      "malformed JSON",
      () => post("/api/sessions/stream", '{"message": "hi"'),
      400,
      "invalid_json",
      /not valid JSON/,
    ],
    [
      "wrong content type",
      () => post("/api/sessions/stream", '{"message":"hi"}', "text/plain"),
      415,
      "unsupported_media_type",
      /application\/json/,
    ],
    [
      "no content type",
      () => post("/api/sessions/stream", '{"message":"hi"}', null),
      415,
      "unsupported_media_type",
      /application\/json/,
    ],
    [
      "oversized body",
      () => post("/api/sessions/stream", JSON.stringify({ message: "x".repeat(10_000) })),
      413,
      "body_too_large",
      /4096 bytes/,
    ],
    ["missing message", () => post("/api/sessions/stream", "{}"), 400, "invalid_request", /body\.message/],
    ["non-object body", () => post("/api/sessions/stream", "[1,2]"), 400, "invalid_request", /body/],
    [
      "unknown field",
      () => post("/api/sessions/stream", '{"message":"hi","colour":"red"}'),
      400,
      "invalid_request",
      /colour/,
    ],
    [
      "unknown session",
      () => post("/api/sessions/stream", '{"message":"hi","sessionId":"ses_nope"}'),
      404,
      "session_not_found",
      /ses_nope/,
    ],
    [
      "bad Last-Event-ID",
      () => fetch(`${server.baseUrl}/api/turns/turn_x/events`, { headers: { "Last-Event-ID": "abc" } }),
      400,
      "invalid_request",
      /last-event-id/,
    ],
    [
      "unknown turn events",
      () => fetch(`${server.baseUrl}/api/turns/turn_x/events`),
      404,
      "turn_not_found",
      /turn_x/,
    ],
    [
      "unknown session history",
      () => fetch(`${server.baseUrl}/api/sessions/ses_x/history`),
      404,
      "session_not_found",
      /ses_x/,
    ],
    ["unknown route", () => fetch(`${server.baseUrl}/api/nothing`), 404, "route_not_found", /\/api\/nothing/],
  ])("%s", async (_name, send, status, code, message) => {
    const response = await send();
    expect(response.status).toBe(status);
    expect(response.headers.get("content-type")).toMatch(/application\/json/);
    const body = (await response.json()) as { error: string; code: string };
    expect(body.code).toBe(code);
    expect(body.error).toMatch(message);
    expect(JSON.stringify(body)).not.toMatch(/\n\s+at /);
  });

  it("still serves turns after all that", async () => {
    const response = await post("/api/sessions/stream", '{"message":"ok"}');
    expect(response.status).toBe(200);
    expect(await response.text()).toContain("event: turn_complete");
  });

  it("reports health and readiness", async () => {
    expect(await (await fetch(`${server.baseUrl}/healthz`)).json()).toEqual({ status: "ok" });
    expect(await (await fetch(`${server.baseUrl}/readyz`)).json()).toEqual({ status: "ready" });
  });
});
