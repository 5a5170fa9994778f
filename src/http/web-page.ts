/**
 * Serves the built-in webchat page (`src/web/`, copied to `dist/web/` by the build) at `/`. Only the
 * listed files are served — no directory access — and each is read once, at start-up.
 */
import { existsSync, readFileSync } from "node:fs";
import { Hono } from "hono";

const WEB_DIRECTORY = new URL("../web/", import.meta.url);

const FILES: Record<string, { file: string; type: string }> = {
  "/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/styles.css": { file: "styles.css", type: "text/css; charset=utf-8" },
};

export function webPageRoutes(): Hono {
  const web = new Hono();
  for (const [path, { file, type }] of Object.entries(FILES)) {
    const url = new URL(file, WEB_DIRECTORY);
    if (!existsSync(url)) continue;
    const body = readFileSync(url);
    web.get(path, (context) =>
      context.body(body, 200, {
        "Content-Type": type,
        // the page is small and changes with the server; revalidate rather than serve a stale copy
        "Cache-Control": "no-cache",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy":
          "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'",
      }),
    );
  }
  return web;
}
