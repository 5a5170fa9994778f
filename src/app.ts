/**
 * `buildApp(deps)`: the Hono application — no framing of any response; CORS, bearer auth, the body
 * limit and the JSON nesting limit on /api; the API routes, health and metrics, the OpenAPI document,
 * the web page, 405 with `Allow` for a known path asked with the wrong method (404 for an unknown one),
 * and one error handler that turns client mistakes into 4xx JSON and everything else into a bare 500.
 * No module-level state: every dependency comes in through `deps`.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { cors } from "hono/cors";
import { HTTPException } from "hono/http-exception";
import type { Logger } from "pino";
import type { Config } from "./config/schema.js";
import type { HistoryStore } from "./history/store.js";
import { bearerAuth, unauthorized } from "./http/auth.js";
import { apiBodyLimit } from "./http/body-limit.js";
import { frameGuard } from "./http/frame-guard.js";
import { HttpError, toHttpError } from "./http/http-error.js";
import { allowedMethodsOf } from "./http/method-not-allowed.js";
import { apiRoutes, type ApiEnv } from "./http/routes.js";
import { StreamTokens, streamTokenAuth } from "./http/stream-tokens.js";
import { jsonDepthGuard } from "./http/validation.js";
import { webPageRoutes } from "./http/web-page.js";
import { MAX_JSON_DEPTH } from "./json-depth.js";
import type { McpServerInfo } from "./mcp/index.js";
import type { Metrics } from "./observability/metrics.js";
import type { TurnManager } from "./turns/manager.js";

export type AppDeps = {
  manager: TurnManager;
  store: HistoryStore;
  config: Config;
  logger: Logger;
  metrics: Metrics;
  /** The configured MCP servers, for `GET /api/mcp/servers`. */
  mcp?: { list(): McpServerInfo[] };
};

const VERSION = "0.1.0";

export function buildApp(deps: AppDeps): OpenAPIHono<ApiEnv> {
  const app = new OpenAPIHono<ApiEnv>();
  const { server, auth } = deps.config;

  app.use("*", frameGuard());
  if (server.corsOrigins.length > 0) {
    const anyOrigin = server.corsOrigins.includes("*");
    app.use(
      "/api/*",
      cors({
        origin: (origin) => (anyOrigin || server.corsOrigins.includes(origin) ? origin : null),
        allowHeaders: ["Authorization", "Content-Type", "Last-Event-ID"],
        allowMethods: ["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
        // what a cross-origin page needs to act on a refusal: when to retry, how to authenticate, which methods
        exposeHeaders: ["Retry-After", "WWW-Authenticate", "Allow"],
        maxAge: 600,
      }),
    );
  }
  // one turn's stream may also be opened with a stream token (EventSource cannot send Authorization)
  const streamTokens = new StreamTokens();
  app.use("/api/*", streamTokenAuth(streamTokens, auth.tokens.length > 0, bearerAuth(auth.tokens)));
  app.use("/api/*", apiBodyLimit(server.bodyLimitBytes));
  app.use("/api/*", jsonDepthGuard(MAX_JSON_DEPTH));
  app.route("/api", apiRoutes({ ...deps, streamTokens }));

  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "reins",
      version: VERSION,
      description:
        "HTTP/SSE turn-orchestration server for LLM agents. The contract, in the repository: " +
        "docs/http-api.md (routes), docs/events.md (SSE events), docs/semantics.md (semantics).",
    },
    security: auth.tokens.length > 0 ? [{ bearer: [] }] : [],
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });

  app.get("/healthz", (context) => context.json({ status: "ok" }));
  app.get("/readyz", (context) => {
    if (!deps.store.isReachable()) {
      return context.json(
        { status: "unavailable", error: "database unreachable", code: "db_unreachable" },
        503,
      );
    }
    if (!deps.store.acceptsWrites()) {
      const error = "database refuses writes (a full disk or an I/O error); they are retried";
      return context.json({ status: "unavailable", error, code: "store_unavailable" }, 503);
    }
    return context.json({ status: "ready" });
  });
  app.get("/metrics", async (context) =>
    context.body(await deps.metrics.render(), 200, { "Content-Type": deps.metrics.contentType }),
  );
  app.route("/", webPageRoutes());

  const allowedMethods = allowedMethodsOf(app.routes);
  app.notFound((context) => {
    const { method, path } = context.req;
    const allowed = allowedMethods(path);
    if (allowed.length === 0) {
      return context.json({ error: `No route for ${method} ${path}`, code: "route_not_found" }, 404);
    }
    const allow = { Allow: allowed.join(", ") };
    if (method === "OPTIONS") return context.body(null, 204, allow);
    return context.json(
      {
        error: `Method ${method} is not allowed on ${path}; it accepts ${allowed.join(", ")}`,
        code: "method_not_allowed",
        allowed,
      },
      405,
      allow,
    );
  });
  app.onError((error, context) => {
    const httpError = toHttpError(error) ?? fromHttpException(error);
    if (httpError) {
      return context.json(
        { error: httpError.message, code: httpError.code, ...httpError.details },
        httpError.status,
        httpError.headers,
      );
    }
    deps.logger.error({ err: error, path: context.req.path }, "unhandled error");
    return context.json(
      { error: "Internal server error; the server's log has the details", code: "internal_error" },
      500,
    );
  });
  return app;
}

/** Hono's own exceptions (media-type gate, malformed JSON) in the API's error format. */
function fromHttpException(error: unknown): HttpError | undefined {
  if (!(error instanceof HTTPException)) return undefined;
  if (error.status === 415) {
    return new HttpError(415, "unsupported_media_type", "Content-Type must be application/json");
  }
  if (error.status === 400) {
    return new HttpError(400, "invalid_json", `Request body is not valid JSON (${error.message})`);
  }
  if (error.status === 401) return unauthorized(error.message);
  return undefined;
}
