/**
 * Tool-call id projection (DESIGN.md §5.6 point 4): the id each provider sees for a canonical call.
 *
 * - OpenAI `call_…` (at most 40 characters), Anthropic `toolu_…` of `[a-zA-Z0-9_-]`, Mistral exactly
 *   9 of `[A-Za-z0-9]`: a native-looking id (the provider's own `providerCallId`, else the canonical
 *   id) is kept when no earlier call took it; every other call gets an id derived from a hash of its
 *   canonical id, re-salted until it is free. Native ids are reserved before any id is generated, so a
 *   generated id never collides with a kept one.
 * - Kimi `functions.<name>:<index>`, the index counted over every call of the history: unique by
 *   construction, and the model reads the function name back from it (PROVIDERS.md).
 *
 * Deterministic (no randomness, no clock), injective within one projection (the empty id included),
 * O(n) with one Set and two Maps.
 */
import type { IdFormat } from "./profiles.js";
import { TOOL_NAME_PATTERN } from "./profiles.js";
import { sanitizeToolName } from "./tool-names.js";

export type ProjectableCall = {
  callId: string;
  providerCallId?: string;
  /** The name the provider sees; Kimi ids embed it. */
  name: string;
};

export type IdProjection = {
  /** canonical call id → projected id */
  toProjected: Map<string, string>;
  /** projected id → canonical call id */
  toCanonical: Map<string, string>;
  /** How many calls kept a native id and how many got a generated one. */
  kept: number;
  generated: number;
};

export const OPENAI_MAX_ID_LENGTH = 40;
const GENERATED_SUFFIX_LENGTH = 24;
const MISTRAL_ID_LENGTH = 9;
const ALPHANUMERIC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** What a well-formed projected id looks like, per format. */
export const ID_PATTERNS: Readonly<Record<IdFormat, RegExp>> = {
  call: /^call_[A-Za-z0-9_-]{1,35}$/,
  toolu: /^toolu_[A-Za-z0-9_-]+$/,
  "mistral-9": /^[A-Za-z0-9]{9}$/,
  "kimi-functions": /^functions\.[A-Za-z0-9_-]{1,64}:(0|[1-9][0-9]*)$/,
};

export function isWellFormedId(id: string, format: IdFormat): boolean {
  return ID_PATTERNS[format].test(id);
}

/**
 * Projects the ids of `calls` (distinct canonical ids, in transcript order; later repeats of a
 * canonical id are ignored) into `format`.
 */
export function projectCallIds(calls: readonly ProjectableCall[], format: IdFormat): IdProjection {
  const toProjected = new Map<string, string>();
  const toCanonical = new Map<string, string>();
  if (format === "kimi-functions") {
    for (const call of calls) {
      if (toProjected.has(call.callId)) continue;
      const name = sanitizeToolName(call.name, TOOL_NAME_PATTERN);
      const id = `functions.${name}:${toProjected.size}`;
      toProjected.set(call.callId, id);
      toCanonical.set(id, call.callId);
    }
    return { toProjected, toCanonical, kept: 0, generated: toProjected.size };
  }

  // Phase 1: reserve native-looking ids, first come first served.
  const pattern = ID_PATTERNS[format];
  const pending: string[] = [];
  for (const call of calls) {
    if (toProjected.has(call.callId)) continue;
    const native = [call.providerCallId, call.callId].find(
      (candidate): candidate is string =>
        candidate !== undefined && pattern.test(candidate) && !toCanonical.has(candidate),
    );
    if (native === undefined) {
      pending.push(call.callId);
      // Mark as seen so a repeated canonical id is neither reserved nor generated twice.
      toProjected.set(call.callId, "");
      continue;
    }
    toProjected.set(call.callId, native);
    toCanonical.set(native, call.callId);
  }
  const kept = toCanonical.size;

  // Phase 2: generate the rest, avoiding every reserved id.
  for (const callId of pending) {
    let salt = 0;
    let id = generateId(callId, salt, format);
    while (toCanonical.has(id)) id = generateId(callId, ++salt, format);
    toProjected.set(callId, id);
    toCanonical.set(id, callId);
  }
  return { toProjected, toCanonical, kept, generated: pending.length };
}

function generateId(callId: string, salt: number, format: Exclude<IdFormat, "kimi-functions">): string {
  const next = pseudoRandom(hash32(callId, salt));
  const length = format === "mistral-9" ? MISTRAL_ID_LENGTH : GENERATED_SUFFIX_LENGTH;
  let suffix = "";
  for (let index = 0; index < length; index++) suffix += ALPHANUMERIC[next() % ALPHANUMERIC.length];
  if (format === "call") return `call_${suffix}`;
  if (format === "toolu") return `toolu_${suffix}`;
  return suffix;
}

/** A 32-bit string hash (murmur-style mixing); the salt re-rolls it on a collision. */
function hash32(text: string, salt: number): number {
  let hash = (0x811c9dc5 ^ Math.imul(salt + 1, 0x9e3779b1)) >>> 0;
  for (let index = 0; index < text.length; index++) {
    hash = Math.imul(hash ^ text.charCodeAt(index), 0x5bd1e995);
    hash ^= hash >>> 15;
  }
  hash = Math.imul(hash ^ text.length, 0x85ebca6b);
  hash ^= hash >>> 13;
  return hash >>> 0;
}

/** mulberry32: a small deterministic generator, so each suffix character draws fresh bits. */
function pseudoRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return (value ^ (value >>> 14)) >>> 0;
  };
}
