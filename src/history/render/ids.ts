/**
 * Tool-call id projection (docs/semantics.md#transcript-integrity point 4): the id each provider sees for a
 * canonical call.
 *
 * - OpenAI (`call`), Anthropic (`toolu`), Mistral (`mistral-9`): an id the provider accepts — the
 *   provider's own `providerCallId`, else the canonical id — is kept as it is when no earlier call took
 *   it. Accepted means the provider's documented rule (docs/providers.md): OpenAI at most 40 characters
 *   (printable ASCII, no spaces, to stay on the safe side), Anthropic `^[a-zA-Z0-9_-]+$`, Mistral
 *   exactly 9 of `[A-Za-z0-9]`. Every other call gets an id derived from a hash of its canonical id
 *   (`call_…`, `toolu_…`, 9 characters), re-salted until it is free. Kept ids are reserved before any
 *   id is generated, so a generated id never collides with a kept one.
 * - Kimi `functions.<name>:<index>`, the index counted over every call of the history: unique by
 *   construction, and the model reads the function name back from it (docs/providers.md).
 *
 * Deterministic (no randomness, no clock), injective within one projection (the empty id included),
 * O(n) with one map of held ids. Incremental: `IdProjector.project` takes calls in batches as a history grows and
 * gives each call the id a single projection of the whole history would give it — or reports that an
 * appended call takes an id already generated for an earlier one, which only a full projection can
 * settle.
 */
import type { IdFormat } from "./profiles.js";
import { TOOL_NAME_PATTERN } from "./profiles.js";
import { createToolNameSanitizer } from "./tool-names.js";

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

/** A call the projector writes its id into. */
export type ProjectionTarget = {
  readonly callId: string;
  readonly providerCallId: string | undefined;
  readonly name: string;
  /** Where the facts about the call's ids are kept between projections (undefined: nowhere). */
  readonly idFacts: IdFacts | undefined;
  projectedId: string;
  idKept: boolean;
};

/** The formats whose ids are kept or generated one call at a time (Kimi's are counted). */
export type CallIdFormat = Exclude<IdFormat, "kimi-functions">;

/**
 * What a call's ids are to each format, which no other call changes: whether the format accepts its
 * provider's id and its canonical id, and the id generated for it before any re-salting. Kept in the
 * memo of the call block's input (call-input.ts), so that a block rendered again, for a later turn or
 * after a fallback, is not tested and hashed again — as fields of that one object, read while the
 * block is at hand: an object per format cost two more cache misses a call in a large history.
 */
export type IdFacts = {
  /** The ids the facts are about: facts about other ids are forgotten. */
  factsCallId: string;
  factsProviderCallId: string | undefined;
  /**
   * For each format, `ID_FACTS_BITS` bits from bit `ID_FACTS_BITS × slot`: tested, provider id
   * accepted, canonical id accepted.
   */
  idAcceptance: number;
  /** The id generated for each format's slot, once the call needed one. */
  generatedIds: (string | undefined)[] | undefined;
};

const ID_FACTS_SLOTS: Readonly<Record<CallIdFormat, number>> = { call: 0, toolu: 1, "mistral-9": 2 };
const ID_FACTS_BITS = 3;
const ID_FACTS_MASK = (1 << ID_FACTS_BITS) - 1;
const TESTED = 1;
const PROVIDER_ACCEPTED = 2;
const CANONICAL_ACCEPTED = 4;

/** Which call holds each projected id. */
export type IdHolders = {
  /** `asking` is the call the id is looked up for (a hint: its own canonical id is the usual case). */
  holderOf(projectedId: string, asking: ProjectionTarget): ProjectionTarget | undefined;
  hold(projectedId: string, call: ProjectionTarget): void;
};

/** `IdHolders` in a map of their own. */
export function idHolderMap(): IdHolders {
  const holders = new Map<string, ProjectionTarget>();
  return {
    holderOf: (projectedId) => holders.get(projectedId),
    hold: (projectedId, call) => void holders.set(projectedId, call),
  };
}

export const OPENAI_MAX_ID_LENGTH = 40;
const GENERATED_SUFFIX_LENGTH = 24;
const MISTRAL_ID_LENGTH = 9;
const ALPHANUMERIC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const ALPHANUMERIC_CODES = Array.from(ALPHANUMERIC, (character) => character.charCodeAt(0));

/** Ids each provider accepts (kept as they are); everything the projector generates matches too. */
export const ID_PATTERNS: Readonly<Record<IdFormat, RegExp>> = {
  call: /^[!-~]{1,40}$/,
  toolu: /^[A-Za-z0-9_-]+$/,
  "mistral-9": /^[A-Za-z0-9]{9}$/,
  "kimi-functions": /^functions\.[A-Za-z0-9_-]{1,64}:(0|[1-9][0-9]*)$/,
};

export function isWellFormedId(id: string, format: IdFormat): boolean {
  return ID_PATTERNS[format].test(id);
}

/**
 * Projects ids batch by batch, in transcript order. `project(calls, from)` assigns `projectedId` to each
 * call of the batch: first every accepted native id of the batch is reserved, then the rest are generated —
 * exactly what one projection of all calls so far would assign, as long as no call of the batch wants
 * an id generated for an earlier call. Then `project` returns false and the projector must not be used
 * again: only a projection from scratch can give those calls their ids. The two phases can also be run
 * apart — `reserveNative` for each call of the batch as it is met, then `generate` — so that a caller
 * scanning blocks tests each native id while its block is at hand.
 */
export class IdProjector {
  private readonly pattern: RegExp;
  /** Where this format's facts go in a call's `IdFacts` (-1: Kimi, which keeps none). */
  private readonly factsSlot: number;
  private readonly sanitize = createToolNameSanitizer(TOOL_NAME_PATTERN);
  private lastKimiName: string | undefined;
  private lastKimiPrefix = "";
  private projectedCount = 0;
  kept = 0;
  generated = 0;

  /** `holders` is not used for Kimi, whose ids are unique by construction. */
  constructor(
    readonly format: IdFormat,
    private readonly holders: IdHolders = idHolderMap(),
  ) {
    this.pattern = ID_PATTERNS[format];
    this.factsSlot = format === "kimi-functions" ? -1 : ID_FACTS_SLOTS[format];
  }

  /** Projects `calls[from..]`, the calls first seen since the previous batch. */
  project(calls: readonly ProjectionTarget[], from = 0): boolean {
    for (let index = from; index < calls.length; index++) {
      if (!this.reserveNative(calls[index]!)) return false;
    }
    this.generate(calls, from);
    return true;
  }

  /**
   * Phase 1 for one call of the batch, in transcript order: its native id, first come first served.
   * False when that id was already generated for a call of an earlier batch.
   */
  reserveNative(call: ProjectionTarget): boolean {
    call.idKept = false;
    const format = this.format;
    if (format === "kimi-functions") return true;
    const accepted = this.acceptanceOf(call);
    let native = accepted & PROVIDER_ACCEPTED ? this.freeNative(call.providerCallId!, call) : undefined;
    if (native === undefined && accepted & CANONICAL_ACCEPTED) native = this.freeNative(call.callId, call);
    if (native === null) return false;
    if (native === undefined) {
      // Drawn now, while the canonical id is at hand; `generate` re-salts it if it is taken.
      call.projectedId = this.firstGeneratedId(call, format);
      return true;
    }
    call.projectedId = native;
    call.idKept = true;
    this.holders.hold(native, call);
    this.kept++;
    return true;
  }

  /** Phase 2, once every call of the batch `calls[from..]` went through phase 1: the other ids. */
  generate(calls: readonly ProjectionTarget[], from: number): void {
    if (this.format === "kimi-functions") {
      for (let index = from; index < calls.length; index++) {
        const call = calls[index]!;
        call.projectedId = this.kimiPrefix(call.name) + this.projectedCount++;
        this.generated++;
      }
      return;
    }
    for (let index = from; index < calls.length; index++) {
      const call = calls[index]!;
      if (call.idKept) continue;
      let salt = 0;
      let id = call.projectedId;
      while (this.holders.holderOf(id, call) !== undefined) {
        id = generateId(call.callId, ++salt, this.format);
      }
      call.projectedId = id;
      this.holders.hold(id, call);
      this.generated++;
    }
    this.projectedCount += calls.length - from;
  }

  /** `functions.<name>:`, made once for each run of calls to the same tool. */
  private kimiPrefix(name: string): string {
    if (name !== this.lastKimiName) {
      this.lastKimiName = name;
      this.lastKimiPrefix = `functions.${this.sanitize(name)}:`;
    }
    return this.lastKimiPrefix;
  }

  /**
   * Which of the call's ids this format accepts (`PROVIDER_ACCEPTED`, `CANONICAL_ACCEPTED`): the kept
   * facts when they are about its ids, else tested now and kept. Facts about other ids are forgotten.
   */
  private acceptanceOf(call: ProjectionTarget): number {
    const facts = call.idFacts;
    const shift = this.factsSlot * ID_FACTS_BITS;
    if (facts !== undefined) {
      if (facts.factsCallId === call.callId && facts.factsProviderCallId === call.providerCallId) {
        const kept = (facts.idAcceptance >>> shift) & ID_FACTS_MASK;
        if ((kept & TESTED) !== 0) return kept;
      } else {
        facts.factsCallId = call.callId;
        facts.factsProviderCallId = call.providerCallId;
        facts.idAcceptance = 0;
        facts.generatedIds = undefined;
      }
    }
    const { callId, providerCallId } = call;
    let accepted = TESTED;
    if (providerCallId !== undefined && this.pattern.test(providerCallId)) accepted |= PROVIDER_ACCEPTED;
    if (this.pattern.test(callId)) accepted |= CANONICAL_ACCEPTED;
    if (facts !== undefined) facts.idAcceptance |= accepted << shift;
    return accepted;
  }

  /** The call's generated id before any re-salting (kept in its facts, which `acceptanceOf` checked). */
  private firstGeneratedId(call: ProjectionTarget, format: CallIdFormat): string {
    const facts = call.idFacts;
    const kept = facts?.generatedIds?.[this.factsSlot];
    if (kept !== undefined) return kept;
    const generated = generateId(call.callId, 0, format);
    if (facts !== undefined) {
      facts.generatedIds ??= [undefined, undefined, undefined];
      facts.generatedIds[this.factsSlot] = generated;
    }
    return generated;
  }

  /**
   * `candidate`, an id the provider accepts, when no call holds it; undefined when a kept id already
   * holds it; null when an id generated for an earlier call holds it — a whole-history projection
   * reserves native ids before generating any, so that call's id would change.
   */
  private freeNative(candidate: string, call: ProjectionTarget): string | undefined | null {
    const holder = this.holders.holderOf(candidate, call);
    if (holder === undefined) return candidate;
    return holder.idKept ? undefined : null;
  }
}

/**
 * Projects the ids of `calls` (distinct canonical ids, in transcript order; later repeats of a
 * canonical id are ignored) into `format`.
 */
export function projectCallIds(calls: readonly ProjectableCall[], format: IdFormat): IdProjection {
  const targets = new Map<string, ProjectionTarget>();
  for (const call of calls) {
    if (targets.has(call.callId)) continue;
    targets.set(call.callId, {
      callId: call.callId,
      providerCallId: call.providerCallId,
      name: call.name,
      idFacts: undefined,
      projectedId: "",
      idKept: false,
    });
  }
  const projector = new IdProjector(format);
  projector.project([...targets.values()]);
  const toProjected = new Map<string, string>();
  const toCanonical = new Map<string, string>();
  for (const target of targets.values()) {
    toProjected.set(target.callId, target.projectedId);
    toCanonical.set(target.projectedId, target.callId);
  }
  return { toProjected, toCanonical, kept: projector.kept, generated: projector.generated };
}

const CALL_PREFIX_CODES = Array.from("call_", (character) => character.charCodeAt(0));
const TOOLU_PREFIX_CODES = Array.from("toolu_", (character) => character.charCodeAt(0));

/** A generated id's character codes, prefix filled in; `generateId` fills in the rest. */
type IdCodes = { codes: number[]; prefixLength: number };

/** One array per format, reused by every id (each is made into a string before `generateId` returns). */
const GENERATED_CODES: Readonly<Record<CallIdFormat, IdCodes>> = {
  call: idCodes(CALL_PREFIX_CODES, GENERATED_SUFFIX_LENGTH),
  toolu: idCodes(TOOLU_PREFIX_CODES, GENERATED_SUFFIX_LENGTH),
  "mistral-9": idCodes([], MISTRAL_ID_LENGTH),
};

function idCodes(prefix: readonly number[], suffixLength: number): IdCodes {
  return { codes: [...prefix, ...new Array<number>(suffixLength).fill(0)], prefixLength: prefix.length };
}

function generateId(callId: string, salt: number, format: CallIdFormat): string {
  const { codes, prefixLength } = GENERATED_CODES[format];
  // mulberry32 seeded with the hash: a small deterministic generator, fresh bits for each character.
  let state = hash32(callId, salt);
  for (let index = prefixLength; index < codes.length; index++) {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    codes[index] = ALPHANUMERIC_CODES[((value ^ (value >>> 14)) >>> 0) % ALPHANUMERIC_CODES.length]!;
  }
  return String.fromCharCode.apply(null, codes);
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
