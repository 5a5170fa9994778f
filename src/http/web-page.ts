/**
 * Serves the built-in webchat page (`src/web/`, copied to `dist/web/` by the build): `/` is
 * index.html, and every other file of the folder is served by its name (`/operator.html` is the
 * operator view). Only files of the listed types directly in the folder are served (no directory
 * access, no dot-files), each read once at start-up. The page's two libraries are served from
 * node_modules by an explicit allow-list (`/vendor/marked.js`, `/vendor/dompurify.js`: their ES module
 * builds), so the CSP keeps `script-src 'self'` and nothing else of node_modules is reachable.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, extname, join } from "node:path";
import { Hono } from "hono";

const WEB_DIRECTORY = new URL("../web/", import.meta.url);

/** Resolves packages the way Node does from here, so a hoisted node_modules is found too. */
const resolvePackage = createRequire(import.meta.url).resolve;

/**
 * The only files of node_modules the page may load: URL path → a package and its ES module build, a
 * file beside the entry Node resolves for the package.
 */
const VENDOR_FILES: Record<string, { packageName: string; fileName: string }> = {
  "/vendor/marked.js": { packageName: "marked", fileName: "marked.esm.js" },
  "/vendor/dompurify.js": { packageName: "dompurify", fileName: "purify.es.mjs" },
};

/** A vendor build without its trailing `sourceMappingURL` comment (the maps are not served). */
function readVendorFile(packageName: string, fileName: string): Buffer | null {
  let entry: string;
  try {
    entry = resolvePackage(packageName);
  } catch {
    return null;
  }
  const file = join(dirname(entry), fileName);
  if (!existsSync(file)) return null;
  const text = readFileSync(file, "utf8").replace(/\n\/\/# sourceMappingURL=\S+\s*$/, "\n");
  return Buffer.from(text, "utf8");
}

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};

const HEADERS = {
  // the page is small and changes with the server; revalidate rather than serve a stale copy
  "Cache-Control": "no-cache",
  "X-Content-Type-Options": "nosniff",
  // `frame-ancestors 'none'` and `X-Frame-Options` are added to every response by frameGuard (app.ts)
  "Content-Security-Policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'",
};

export function webPageRoutes(): Hono {
  const web = new Hono();
  if (!existsSync(WEB_DIRECTORY)) return web;
  for (const file of readdirSync(WEB_DIRECTORY)) {
    const type = CONTENT_TYPES[extname(file)];
    if (!type || file.startsWith(".")) continue;
    const body = readFileSync(new URL(file, WEB_DIRECTORY));
    const serve = () => new Response(body, { status: 200, headers: { "Content-Type": type, ...HEADERS } });
    web.get(`/${file}`, serve);
    if (file === "index.html") web.get("/", serve);
  }
  for (const [path, { packageName, fileName }] of Object.entries(VENDOR_FILES)) {
    const body = readVendorFile(packageName, fileName);
    if (!body) continue; // not installed (`npm ci` installs both)
    web.get(
      path,
      () =>
        new Response(body, { status: 200, headers: { "Content-Type": CONTENT_TYPES[".js"]!, ...HEADERS } }),
    );
  }
  return web;
}
