/**
 * `buildApp(deps)`: the Hono application — API routes, health endpoints, body limit, and one error
 * handler that turns client mistakes into 4xx JSON and everything else into a bare 500. No
 * module-level state: every dependency comes in through `deps`.
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Logger } from "pino";
import type { Config } from "./config/schema.js";
import type { HistoryStore } from "./history/store.js";
import { HttpError, toHttpError } from "./http/http-error.js";
import { apiRoutes } from "./http/routes.js";
import { webPageRoutes } from "./http/web-page.js";
import type { Metrics } from "./observability/metrics.js";
import type { TurnManager } from "./turns/manager.js";

export type AppDeps = {
  manager: TurnManager;
  store: HistoryStore;
  config: Config;
  logger: Logger;
  metrics: Metrics;
};

export function buildApp(deps: AppDeps): Hono {
  const app = new Hono();
  const limit = deps.config.server.bodyLimitBytes;

  app.use(
    "/api/*",
    bodyLimit({
      maxSize: limit,
      onError: () => {
        throw new HttpError(413, "body_too_large", `Request body exceeds the limit of ${limit} bytes`, {
          limit,
        });
      },
    }),
  );
  app.route("/api", apiRoutes(deps));
  app.route("/", webPageRoutes());

  app.get("/healthz", (context) => context.json({ status: "ok" }));
  app.get("/readyz", (context) =>
    deps.store.isReachable()
      ? context.json({ status: "ready" })
      : context.json({ status: "unavailable", error: "database unreachable", code: "db_unreachable" }, 503),
  );

  app.get("/metrics", async (context) =>
    context.body(await deps.metrics.render(), 200, { "Content-Type": deps.metrics.contentType }),
  );

  app.notFound((context) =>
    context.json(
      { error: `No route for ${context.req.method} ${context.req.path}`, code: "route_not_found" },
      404,
    ),
  );
  app.onError((error, context) => {
    const httpError = toHttpError(error);
    if (httpError) {
      return context.json(
        { error: httpError.message, code: httpError.code, ...httpError.details },
        httpError.status,
      );
    }
    deps.logger.error({ err: error, path: context.req.path }, "unhandled error");
    return context.json({ error: "Internal server error", code: "internal" }, 500);
  });
  return app;
}
