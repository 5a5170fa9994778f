/**
 * Which methods a path accepts, answered from the routes the application actually registered (the API
 * routes come from the declarations of `route-definitions.ts`, the same ones that make the OpenAPI
 * document), so a request with the wrong method on a known path can get `405` with an `Allow` header
 * instead of a 404. Paths are matched by Hono's own router, with Hono's own path syntax.
 */
import { TrieRouter } from "hono/router/trie-router";

/** A registered route as `app.routes` lists it; middleware is registered with method `ALL`. */
export type RegisteredRoute = { method: string; path: string };

/** `allowedMethods(path)`: the methods `path` accepts, in `Allow` order; empty for an unknown path. */
export type AllowedMethods = (path: string) => readonly string[];

/** Always accepted on a known path: `HEAD` wherever `GET` is (Hono answers it), `OPTIONS` (405's sibling). */
const IMPLIED_METHODS = { GET: ["HEAD"], ANY: ["OPTIONS"] } as const;

const METHOD_ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

const byMethodOrder = (left: string, right: string) => rank(left) - rank(right) || left.localeCompare(right);
const rank = (method: string) => {
  const index = METHOD_ORDER.indexOf(method);
  return index === -1 ? METHOD_ORDER.length : index;
};

/**
 * Builds the lookup from `routes` (read once: call it after every route is registered). Middleware
 * (method `ALL`) matches every path and says nothing about methods, so it is left out.
 */
export function allowedMethodsOf(routes: readonly RegisteredRoute[]): AllowedMethods {
  // Every route is added under "ALL" so that one match, for any method, returns all routes of the path;
  // the handler stored is the route's own method.
  const router = new TrieRouter<string>();
  for (const route of routes) {
    if (route.method !== "ALL") router.add("ALL", route.path, route.method.toUpperCase());
  }
  return (path) => {
    const matched = new Set(router.match("GET", path)[0].map(([method]) => method));
    if (matched.size === 0) return [];
    if (matched.has("GET")) for (const implied of IMPLIED_METHODS.GET) matched.add(implied);
    for (const implied of IMPLIED_METHODS.ANY) matched.add(implied);
    return [...matched].sort(byMethodOrder);
  };
}
