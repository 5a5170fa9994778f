/**
 * Bearer-token auth (DESIGN.md §7): with tokens configured, every /api request needs
 * `Authorization: Bearer <token>`, and the token's principal is put on the context. Tokens are
 * compared through their SHA-256 digests with a constant-time comparison. With no tokens configured
 * the principal is null and every session is visible (the server then only listens on loopback
 * unless AUTH_DISABLED=true).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { HttpError } from "./http-error.js";

export type AuthVariables = { principal: string | null };

type Credential = { principal: string; digest: Buffer };

const digest = (token: string) => createHash("sha256").update(token).digest();

export function bearerAuth(tokens: readonly { principal: string; token: string }[]): MiddlewareHandler<{
  Variables: AuthVariables;
}> {
  const credentials: Credential[] = tokens.map(({ principal, token }) => ({
    principal,
    digest: digest(token),
  }));
  return async (context, next) => {
    if (credentials.length === 0) {
      context.set("principal", null);
      return next();
    }
    const header = context.req.header("authorization") ?? "";
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1])
      throw unauthorized(header === "" ? "Missing bearer token" : "Malformed Authorization header");
    const presented = digest(match[1]);
    // Compare against every credential so timing does not reveal which (if any) matched.
    let principal: string | null = null;
    for (const credential of credentials) {
      if (timingSafeEqual(presented, credential.digest)) principal = credential.principal;
    }
    if (principal === null) throw unauthorized("Invalid bearer token");
    context.set("principal", principal);
    return next();
  };
}

function unauthorized(message: string): HttpError {
  return new HttpError(401, "unauthorized", message);
}

/** Whether `principal` may see something owned by `owner` (everything, when auth is off). */
export function canAccess(principal: string | null, owner: string | null): boolean {
  return principal === null || principal === owner;
}
