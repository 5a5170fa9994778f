/**
 * HTTP and metrics conventions that existing clients rely on, in-process (`buildApp(runtime).request`):
 * 405 with `Allow` for a known path asked with the wrong method (404 for an unknown path), the
 * `WWW-Authenticate: Bearer` challenge of RFC 6750 on every 401, and Node process metrics under the
 * names Node dashboards expect.
 */
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { parseConfig } from "../../src/config/load.js";
import { createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";

const TOKEN = "alice-token-1234";
const runtimes: Runtime[] = [];

function app(raw: Record<string, unknown> = {}, options: { processMetrics?: boolean } = {}) {
  const { config } = parseConfig({ logLevel: "silent", ...raw });
  const runtime = createRuntime(config, {
    store: createMemoryHistoryStore(),
    logger: pino({ level: "silent" }),
    processMetrics: options.processMetrics,
  });
  runtimes.push(runtime);
  return buildApp(runtime);
}

afterEach(async () => {
  for (const runtime of runtimes.splice(0)) {
    await runtime.manager.abortAll("shutdown", 1_000);
    runtime.store.close();
  }
});

const CANDIDATE_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/** Every route of the OpenAPI document: its path with parameters filled in, and its declared methods. */
async function documentedPaths(application: ReturnType<typeof app>) {
  const document = (await (await application.request("/openapi.json")).json()) as {
    paths: Record<string, Record<string, unknown>>;
  };
  const routes = Object.entries(document.paths).map(([template, operations]) => ({
    template,
    path: template.replace(/\{[^}]+\}/g, "x1"),
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`),
    methods: Object.keys(operations).map((method) => method.toUpperCase()),
  }));
  // A path may match more than one route (`/api/sessions/stream` is also `/api/sessions/{id}`): it
  // allows the methods of all of them.
  return routes.map((route) => ({
    ...route,
    methods: [
      ...new Set(routes.filter((other) => other.pattern.test(route.path)).flatMap((other) => other.methods)),
    ],
  }));
}

/** What `Allow` must say for a path declaring `methods`: HEAD with GET, OPTIONS always, in a fixed order. */
const expectedAllow = (methods: string[]) =>
  ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    .filter(
      (method) =>
        methods.includes(method) || (method === "HEAD" && methods.includes("GET")) || method === "OPTIONS",
    )
    .join(", ");

describe("405 Method Not Allowed", () => {
  it("answers every undeclared method of every OpenAPI route with 405 and the declared methods in Allow", async () => {
    const application = app();
    const routes = await documentedPaths(application);
    expect(routes.length).toBeGreaterThanOrEqual(10);
    let checked = 0;
    for (const route of routes) {
      for (const method of CANDIDATE_METHODS.filter((candidate) => !route.methods.includes(candidate))) {
        const response = await application.request(route.path, { method });
        const label = `${method} ${route.template}`;
        expect(response.status, label).toBe(405);
        expect(response.headers.get("allow"), label).toBe(expectedAllow(route.methods));
        const body = (await response.json()) as { code: string; error: string; allowed: string[] };
        expect(body.code, label).toBe("method_not_allowed");
        expect(body.error, label).toContain(method);
        expect(body.allowed.join(", "), label).toBe(expectedAllow(route.methods));
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(40);
  });

  it.each([
    { method: "POST", path: "/healthz", allow: "GET, HEAD, OPTIONS" },
    { method: "DELETE", path: "/metrics", allow: "GET, HEAD, OPTIONS" },
    { method: "PUT", path: "/openapi.json", allow: "GET, HEAD, OPTIONS" },
    { method: "POST", path: "/", allow: "GET, HEAD, OPTIONS" },
    { method: "GET", path: "/api/turns/turn_1/abort", allow: "POST, OPTIONS" },
    { method: "PUT", path: "/api/sessions/stream", allow: "GET, HEAD, POST, PATCH, DELETE, OPTIONS" },
  ])("$method $path → 405, Allow: $allow", async ({ method, path, allow }) => {
    const response = await app().request(path, { method });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe(allow);
  });

  it("answers OPTIONS on a known path with 204 and Allow", async () => {
    const response = await app().request("/api/sessions/ses_1/step-mode", { method: "OPTIONS" });
    expect(response.status).toBe(204);
    expect(response.headers.get("allow")).toBe("POST, OPTIONS");
  });

  it.each([
    { method: "GET", path: "/api/nothing" },
    { method: "DELETE", path: "/api/nothing" },
    { method: "GET", path: "/api/turns/turn_1/abort/more" },
    { method: "POST", path: "/api/turns/active/" },
    { method: "OPTIONS", path: "/no-such-page.js" },
  ])("leaves the unknown path $method $path at 404 without Allow", async ({ method, path }) => {
    const response = await app().request(path, { method });
    expect(response.status).toBe(404);
    expect(response.headers.get("allow")).toBeNull();
    expect(await response.json()).toMatchObject({ code: "route_not_found" });
  });

  it("still asks for the token first when auth is on: the wrong method without a token is 401", async () => {
    const response = await app({ auth: { tokens: [{ principal: "alice", token: TOKEN }] } }).request(
      "/api/turns/active",
      { method: "DELETE" },
    );
    expect(response.status).toBe(401);
    const authorized = await app({ auth: { tokens: [{ principal: "alice", token: TOKEN }] } }).request(
      "/api/turns/active",
      { method: "DELETE", headers: { Authorization: `Bearer ${TOKEN}` } },
    );
    expect(authorized.status).toBe(405);
    expect(authorized.headers.get("allow")).toBe("GET, HEAD, OPTIONS");
  });
});

describe("401 WWW-Authenticate (RFC 6750)", () => {
  const REALM_ONLY = 'Bearer realm="reins"';
  const INVALID_TOKEN = 'Bearer realm="reins", error="invalid_token"';

  it.each([
    { name: "no Authorization header", header: undefined, challenge: REALM_ONLY },
    { name: "another scheme", header: "Basic YWxpY2U6c2VjcmV0", challenge: REALM_ONLY },
    { name: "the Bearer scheme without a token", header: "Bearer ", challenge: REALM_ONLY },
    { name: "a wrong token", header: "Bearer not-the-token-1234", challenge: INVALID_TOKEN },
    { name: "a token with a space in it", header: `Bearer ${TOKEN} extra`, challenge: INVALID_TOKEN },
  ])("$name → 401 with $challenge", async ({ header, challenge }) => {
    const response = await app({ auth: { tokens: [{ principal: "alice", token: TOKEN }] } }).request(
      "/api/turns/active",
      { headers: header === undefined ? {} : { Authorization: header } },
    );
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe(challenge);
    expect(await response.json()).toMatchObject({ code: "unauthorized" });
  });

  it("sends no challenge with the right token", async () => {
    const response = await app({ auth: { tokens: [{ principal: "alice", token: TOKEN }] } }).request(
      "/api/turns/active",
      { headers: { Authorization: `Bearer ${TOKEN}` } },
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("www-authenticate")).toBeNull();
  });

  it("lets a cross-origin page read the challenge, Allow and Retry-After", async () => {
    const response = await app({
      server: { corsOrigins: ["https://chat.example"] },
      auth: { tokens: [{ principal: "alice", token: TOKEN }] },
    }).request("/api/turns/active", { headers: { Origin: "https://chat.example" } });
    expect(response.status).toBe(401);
    const exposed = (response.headers.get("access-control-expose-headers") ?? "").toLowerCase();
    for (const header of ["www-authenticate", "allow", "retry-after"]) expect(exposed).toContain(header);
  });
});

describe("process metrics", () => {
  const metricNames = (text: string) =>
    [...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1] ?? "").filter(Boolean);

  it("names Node process metrics as Node dashboards expect, and keeps reins_ for reins' own", async () => {
    const response = await app({}, { processMetrics: true }).request("/metrics");
    expect(response.status).toBe(200);
    const text = await response.text();
    const names = metricNames(text);
    for (const expected of [
      "process_cpu_seconds_total",
      "process_start_time_seconds",
      "process_resident_memory_bytes",
      "nodejs_eventloop_lag_seconds",
      "nodejs_heap_size_used_bytes",
      "nodejs_version_info",
      "reins_tool_calls_total",
      "reins_turns_total",
      "reins_active_turns",
    ]) {
      expect(names, expected).toContain(expected);
    }
    expect(text).not.toContain("reins_process_");
    expect(names.filter((name) => !/^(reins|process|nodejs)_/.test(name))).toEqual([]);
    expect(names.filter((name) => /process_.*process_/.test(name))).toEqual([]);
  });
});
