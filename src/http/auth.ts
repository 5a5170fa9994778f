/**
 * Bearer-token auth (docs/http-api.md#auth-and-ownership): with tokens configured, every /api request needs
 * `Authorization: Bearer <token>`, and the token's principal is put on the context. Tokens are
 * compared through their SHA-256 digests with a constant-time comparison. Every 401 carries a
 * `WWW-Authenticate: Bearer` challenge (RFC 6750). With no tokens configured
 * the principal is null and every session is visible (the server then only listens on loopback
 * unless AUTH_DISABLED=true).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { HttpError } from "./http-error.js";

export type AuthVariables = { principal: string | null };

type Credential = { principal: string; digest: Buffer };

const MALFORMED_HEADER = 'Malformed Authorization header: expected "Bearer <token>"';

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
    if (header === "") throw unauthorized("Missing bearer token");
    // another scheme is no attempt at a bearer token: RFC 6750 §3.1 gives it no error code
    if (!/^Bearer(\s|$)/i.test(header)) throw unauthorized(MALFORMED_HEADER);
    const token = header.slice("Bearer".length).trim();
    if (token === "") throw unauthorized("Missing bearer token");
    if (/\s/.test(token)) throw unauthorized(MALFORMED_HEADER, "invalid_token");
    const presented = digest(token);
    // Compare against every credential so timing does not reveal which (if any) matched.
    let principal: string | null = null;
    for (const credential of credentials) {
      if (timingSafeEqual(presented, credential.digest)) principal = credential.principal;
    }
    if (principal === null) throw unauthorized("Invalid bearer token", "invalid_token");
    context.set("principal", principal);
    return next();
  };
}

/** The realm named in every `WWW-Authenticate` challenge. */
export const AUTH_REALM = "reins";

/**
 * 401 with its challenge (RFC 6750 §3): `Bearer realm="reins"`, plus `error="invalid_token"` when a
 * bearer token was presented but is not one of ours.
 */
export function unauthorized(message: string, error?: "invalid_token"): HttpError {
  const challenge = `Bearer realm="${AUTH_REALM}"` + (error ? `, error="${error}"` : "");
  return new HttpError(401, "unauthorized", message, {}, { "WWW-Authenticate": challenge });
}

/** Whether `principal` may see something owned by `owner` (everything, when auth is off). */
export function canAccess(principal: string | null, owner: string | null): boolean {
  return principal === null || principal === owner;
}
