/**
 * Stream tokens (docs/http-api.md#post-apiturnsidstream-token, EventSource): a browser's EventSource cannot
 * send an Authorization header, so the owner of a turn trades its bearer token for a short-lived token that
 * opens only `GET /api/turns/:id/events?token=…` of that one turn. A token is `<id>.<secret>`, both parts
 * random; only the secret's SHA-256 digest is kept (in memory, with the turn, the principal and the expiry),
 * and the presented secret is compared with a constant-time comparison. A token may open the turn's stream
 * again until it expires (an EventSource reconnects with the same URL); a stream it opened runs on past the
 * expiry. Tokens never reach a log line or an error message.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { unauthorized, type AuthVariables } from "./auth.js";
import { HttpError, RETRY_AFTER_SECONDS } from "./http-error.js";

/** How long a token opens its turn's stream when the client asks for nothing shorter. */
export const DEFAULT_STREAM_TOKEN_TTL_SECONDS = 60;
/** The longest lifetime a client may ask for: a token sits in a URL, so it should not live long. */
export const MAX_STREAM_TOKEN_TTL_SECONDS = 300;
/** Live tokens one principal may hold at once (they expire within MAX_STREAM_TOKEN_TTL_SECONDS). */
export const MAX_LIVE_STREAM_TOKENS_PER_PRINCIPAL = 256;

const ID_BYTES = 12;
const SECRET_BYTES = 32;
/** The only request a stream token opens; the turn id is the path's. */
const EVENTS_PATH = /^\/api\/turns\/([A-Za-z0-9_-]{1,128})\/events$/;

export type IssuedStreamToken = { token: string; expiresAt: number };

export type StreamTokenDeps = {
  now?: () => number;
  randomBytes?: (size: number) => Buffer;
};

type Grant = { turnId: string; principal: string | null; secretDigest: Buffer; expiresAt: number };

const digest = (secret: string) => createHash("sha256").update(secret).digest();

export class StreamTokens {
  /** By token id, in issue order (tokens of one lifetime also expire in that order). */
  private readonly grants = new Map<string, Grant>();
  private readonly liveByPrincipal = new Map<string | null, number>();
  private readonly now: () => number;
  private readonly random: (size: number) => Buffer;

  constructor(deps: StreamTokenDeps = {}) {
    this.now = deps.now ?? Date.now;
    this.random = deps.randomBytes ?? randomBytes;
  }

  /**
   * A token that opens `turnId`'s event stream for `ttlSeconds`; the caller has already checked that
   * `principal` owns the turn. 429 when the principal already holds the maximum of live tokens.
   */
  issue(
    turnId: string,
    principal: string | null,
    ttlSeconds = DEFAULT_STREAM_TOKEN_TTL_SECONDS,
  ): IssuedStreamToken {
    this.sweep();
    // tokens of other lifetimes may hide expired ones behind a live one: look at all before refusing
    if ((this.liveByPrincipal.get(principal) ?? 0) >= MAX_LIVE_STREAM_TOKENS_PER_PRINCIPAL) this.sweep(true);
    const live = this.liveByPrincipal.get(principal) ?? 0;
    if (live >= MAX_LIVE_STREAM_TOKENS_PER_PRINCIPAL) {
      throw new HttpError(
        429,
        "too_many_stream_tokens",
        `Too many live stream tokens: at most ${MAX_LIVE_STREAM_TOKENS_PER_PRINCIPAL} per principal; ` +
          "reuse one (it opens its turn's stream until it expires) or retry later",
        { limit: MAX_LIVE_STREAM_TOKENS_PER_PRINCIPAL, retryAfterSeconds: RETRY_AFTER_SECONDS },
        { "Retry-After": String(RETRY_AFTER_SECONDS) },
      );
    }
    const id = this.random(ID_BYTES).toString("base64url");
    const secret = this.random(SECRET_BYTES).toString("base64url");
    const expiresAt = this.now() + ttlSeconds * 1000;
    this.grants.set(id, { turnId, principal, secretDigest: digest(secret), expiresAt });
    this.liveByPrincipal.set(principal, live + 1);
    return { token: `${id}.${secret}`, expiresAt };
  }

  /**
   * The principal `token` stands for, when it is live and was issued for `turnId`; otherwise null
   * (unknown, malformed, expired, or another turn's: one answer for all).
   */
  principalFor(token: string, turnId: string): { principal: string | null } | null {
    this.sweep();
    const [id, secret, extra] = token.split(".");
    if (!id || !secret || extra !== undefined) return null;
    const grant = this.grants.get(id);
    // digests have one length, so the comparison takes the same time whatever the secret was
    const presented = digest(secret);
    const expected = grant?.secretDigest ?? Buffer.alloc(presented.length);
    const secretMatches = timingSafeEqual(presented, expected);
    if (!grant || !secretMatches || grant.turnId !== turnId || grant.expiresAt <= this.now()) return null;
    return { principal: grant.principal };
  }

  /** Live tokens held (expired ones not yet swept included until the next call). */
  get size(): number {
    return this.grants.size;
  }

  /** Forgets expired tokens, oldest first, stopping at the first live one unless `all`. */
  private sweep(all = false): void {
    const now = this.now();
    for (const [id, grant] of this.grants) {
      if (grant.expiresAt > now) {
        if (all) continue;
        break;
      }
      this.grants.delete(id);
      const remaining = (this.liveByPrincipal.get(grant.principal) ?? 1) - 1;
      if (remaining > 0) this.liveByPrincipal.set(grant.principal, remaining);
      else this.liveByPrincipal.delete(grant.principal);
    }
  }
}

/**
 * Auth for /api with stream tokens: `GET` or `HEAD` `/api/turns/:id/events?token=…` without an
 * Authorization header is let in as the token's principal when the token is live and was issued for
 * that turn, and refused with 401 otherwise; every other request goes to `bearer`. With auth off
 * (`enabled` false) a `token` is ignored and everything goes to `bearer`.
 */
export function streamTokenAuth(
  tokens: StreamTokens,
  enabled: boolean,
  bearer: MiddlewareHandler<{ Variables: AuthVariables }>,
): MiddlewareHandler<{ Variables: AuthVariables }> {
  return async (context, next) => {
    const token = context.req.query("token");
    const turnId = EVENTS_PATH.exec(context.req.path)?.[1];
    const byToken =
      enabled &&
      token !== undefined &&
      turnId !== undefined &&
      (context.req.method === "GET" || context.req.method === "HEAD") &&
      context.req.header("authorization") === undefined;
    if (!byToken) return bearer(context, next);
    const grant = tokens.principalFor(token, turnId);
    // the same answer for an unknown, expired or other turn's token; the token itself is never echoed
    if (!grant) throw unauthorized("Invalid or expired stream token", "invalid_token");
    context.set("principal", grant.principal);
    return next();
  };
}
