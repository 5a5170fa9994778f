/**
 * fast-check arbitraries for canonical histories as they occur after aborts, crashes, retries and
 * provider switches: random interleavings of user text, assistant text, thinking (signed, unsigned or
 * redacted, from several providers and models), tool calls and results — results before or after their calls,
 * scattered, duplicated, orphaned, real or synthetic — reused and empty provider ids, native-looking
 * and empty canonical ids, a repeated call block, invalid tool names, blank texts, calls with no result.
 */
import fc from "fast-check";
import type { HistoryBlock, ToolResponseStatus } from "../../src/history/model.js";

export const SESSION_ID = "ses_property";
export const THINKING_PROVIDERS = ["anthropic", "openai", "kimi", undefined] as const;
export const THINKING_MODELS = ["claude-a", "claude-b", undefined] as const;
/** The model property tests render Anthropic requests for. */
export const RENDER_MODEL = "claude-a";

/** Signatures name their issuer, so a check can tell which provider and model signed them. */
export function signatureFor(
  provider: string | undefined,
  model: string | undefined,
  serial: number,
): string {
  return `sig:${provider ?? "?"}:${model ?? "?"}:${serial}`;
}
export function acceptsSignaturesOf(provider: string, model: string): (signature: string) => boolean {
  const prefix = `sig:${provider}:${model}:`;
  return (signature) => signature.startsWith(prefix);
}
/** A redacted block's data names its issuer the same way. */
export function redactedDataFor(
  provider: string | undefined,
  model: string | undefined,
  serial: number,
): string {
  return `redacted:${provider ?? "?"}:${model ?? "?"}:${serial}`;
}
export function acceptsRedactedOf(provider: string, model: string): (data: string) => boolean {
  const prefix = `redacted:${provider}:${model}:`;
  return (data) => data.startsWith(prefix);
}

const STATUSES: readonly ToolResponseStatus[] = ["complete", "error", "cancelled", "timeout", "interrupted"];
const TOOL_NAMES = ["echo", "read_file", "sleep", "bad name!", "", "a.b", "x".repeat(70)] as const;
/** Canonical ids that already look native to some provider, and the empty id (each used at most once). */
const SPECIAL_CALL_IDS = ["", "toolu_native01", "abcdefghi", "call_native", "functions.echo:0"] as const;
/** Provider ids: none, empty, Kimi's reused one, native-looking ones, and canonical ids of other calls. */
const PROVIDER_IDS = [
  undefined,
  "",
  "functions.read_file:0",
  "toolu_01ABC",
  "call_abc",
  "abc123XYZ",
  "call_1",
  "call_2",
] as const;

type ResultSpec = { status: ToolResponseStatus; blank: boolean; displacement: number | null };
type CallSpec = { idKind: number; providerId: number; name: string; results: ResultSpec[] };
/** `redacted`: a redacted block (no text, no signature) instead of a text one. */
type ThinkingSpec = { provider: number; model: number; signed: boolean; redacted: boolean; text: string };
type StepSpec = {
  thinking: ThinkingSpec | null;
  texts: string[];
  calls: CallSpec[];
  /** Assistant text recorded after the calls but before their results. */
  textBeforeResults: string | null;
};
type TurnSpec = { user: string; steps: StepSpec[] };
type OrphanSpec = { status: ToolResponseStatus; displacement: number };
type HistorySpec = { turns: TurnSpec[]; orphans: OrphanSpec[] };

const textArbitrary = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom("", " ", "\n\t ") },
  { weight: 5, arbitrary: fc.string({ minLength: 1, maxLength: 8 }).map((text) => `text ${text}`) },
);

const resultArbitrary: fc.Arbitrary<ResultSpec> = fc.record({
  status: fc.constantFrom(...STATUSES),
  blank: fc.nat({ max: 9 }).map((value) => value === 0),
  displacement: fc.option(fc.nat(), { freq: 3 }),
});

const callArbitrary: fc.Arbitrary<CallSpec> = fc.record({
  idKind: fc.nat({ max: 19 }),
  providerId: fc.nat({ max: PROVIDER_IDS.length - 1 }),
  name: fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom("echo", "read_file", "sleep") },
    { weight: 1, arbitrary: fc.constantFrom(...TOOL_NAMES) },
  ),
  results: fc.array(resultArbitrary, { maxLength: 3 }),
});

/** Index 0 (Anthropic, `RENDER_MODEL`, signed) is favoured so that kept thinking is common too. */
function favourFirst(max: number): fc.Arbitrary<number> {
  return fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat({ max }) });
}

const thinkingArbitrary: fc.Arbitrary<ThinkingSpec> = fc.record({
  provider: favourFirst(THINKING_PROVIDERS.length - 1),
  model: favourFirst(THINKING_MODELS.length - 1),
  signed: fc.nat({ max: 3 }).map((value) => value > 0),
  redacted: fc.nat({ max: 4 }).map((value) => value === 0),
  text: fc.string({ maxLength: 8 }),
});

const stepArbitrary: fc.Arbitrary<StepSpec> = fc.record({
  thinking: fc.option(thinkingArbitrary, { freq: 2 }),
  texts: fc.array(textArbitrary, { maxLength: 2 }),
  calls: fc.array(callArbitrary, { maxLength: 3 }),
  textBeforeResults: fc.option(textArbitrary, { freq: 4 }),
});

const turnArbitrary: fc.Arbitrary<TurnSpec> = fc.record({
  user: textArbitrary,
  steps: fc.array(stepArbitrary, { maxLength: 3 }),
});

export type HistoryArbitraryOptions = { maxTurns?: number };

/** Arbitrary canonical histories (blocks in position order, as a store returns them). */
export function historyArbitrary(options: HistoryArbitraryOptions = {}): fc.Arbitrary<HistoryBlock[]> {
  return fc
    .record({
      turns: fc.array(turnArbitrary, { minLength: 1, maxLength: options.maxTurns ?? 5 }),
      orphans: fc.array(fc.record({ status: fc.constantFrom(...STATUSES), displacement: fc.nat() }), {
        maxLength: 2,
      }),
    })
    .map(buildHistory);
}

type Draft = { block: DraftBlock; turnId: string };
type DraftBlock =
  | { kind: "text"; role: "user" | "assistant"; text: string }
  | {
      kind: "thinking";
      role: "assistant";
      text: string;
      signature?: string;
      redacted?: string;
      provider?: string;
      model?: string;
    }
  | {
      kind: "tool_call";
      role: "assistant";
      callId: string;
      providerCallId?: string;
      name: string;
      input: Record<string, unknown>;
    }
  | {
      kind: "tool_response";
      role: "tool";
      callId: string;
      name: string;
      status: ToolResponseStatus;
      result: string;
      isError: boolean;
    };

function buildHistory(spec: HistorySpec): HistoryBlock[] {
  const drafts: Draft[] = [];
  const floating: { draft: Draft; displacement: number }[] = [];
  const usedIds: string[] = [];
  let fresh = 0;
  let serial = 0;

  const callId = (kind: number): string => {
    if (kind < SPECIAL_CALL_IDS.length) {
      const special = SPECIAL_CALL_IDS[kind]!;
      if (!usedIds.includes(special)) return special;
    } else if (kind === SPECIAL_CALL_IDS.length && usedIds.length > 0) {
      // A second call block with an earlier canonical id: the renderer must not duplicate the call.
      return usedIds[usedIds.length - 1]!;
    }
    fresh += 1;
    return `call_${fresh}`;
  };

  spec.turns.forEach((turn, turnIndex) => {
    const turnId = `turn_${turnIndex}`;
    drafts.push({ turnId, block: { kind: "text", role: "user", text: turn.user } });
    for (const step of turn.steps) {
      if (step.thinking) {
        const provider = THINKING_PROVIDERS[step.thinking.provider];
        const model = THINKING_MODELS[step.thinking.model];
        serial += 1;
        const sealed = step.thinking.redacted
          ? { text: "", redacted: redactedDataFor(provider, model, serial) }
          : {
              text: step.thinking.text,
              ...(step.thinking.signed ? { signature: signatureFor(provider, model, serial) } : {}),
            };
        drafts.push({
          turnId,
          block: {
            kind: "thinking",
            role: "assistant",
            ...sealed,
            ...(provider === undefined ? {} : { provider }),
            ...(model === undefined ? {} : { model }),
          },
        });
      }
      for (const text of step.texts)
        drafts.push({ turnId, block: { kind: "text", role: "assistant", text } });
      const responses: Draft[] = [];
      for (const call of step.calls) {
        const id = callId(call.idKind);
        usedIds.push(id);
        const providerCallId = PROVIDER_IDS[call.providerId];
        drafts.push({
          turnId,
          block: {
            kind: "tool_call",
            role: "assistant",
            callId: id,
            ...(providerCallId === undefined ? {} : { providerCallId }),
            name: call.name,
            input: { n: serial++ },
          },
        });
        for (const result of call.results) {
          serial += 1;
          const draft: Draft = {
            turnId,
            block: {
              kind: "tool_response",
              role: "tool",
              callId: id,
              name: call.name,
              status: result.status,
              result: result.blank ? " " : `${result.status} #${serial}`,
              isError: result.status !== "complete",
            },
          };
          if (result.displacement === null) responses.push(draft);
          else floating.push({ draft, displacement: result.displacement });
        }
      }
      if (step.textBeforeResults !== null) {
        drafts.push({ turnId, block: { kind: "text", role: "assistant", text: step.textBeforeResults } });
      }
      drafts.push(...responses);
    }
  });
  spec.orphans.forEach((orphan, index) => {
    serial += 1;
    floating.push({
      displacement: orphan.displacement,
      draft: {
        turnId: "turn_orphan",
        block: {
          kind: "tool_response",
          role: "tool",
          callId: `orphan_${index}`,
          name: "echo",
          status: orphan.status,
          result: `orphan #${serial}`,
          isError: orphan.status !== "complete",
        },
      },
    });
  });
  for (const { draft, displacement } of floating) drafts.splice(displacement % (drafts.length + 1), 0, draft);

  return drafts.map(
    ({ block, turnId }, position) =>
      ({ ...block, sessionId: SESSION_ID, turnId, position, createdAt: position }) as HistoryBlock,
  );
}

// ---------------------------------------------------------------------------------------------------
// Builders for example-based tests: `history(user("hi"), call("c1", "echo"), result("c1", "ok"))`.

type Content = DraftBlock;

export function user(text: string): Content {
  return { kind: "text", role: "user", text };
}
export function say(text: string): Content {
  return { kind: "text", role: "assistant", text };
}
export function think(
  text: string,
  extra: { signature?: string; provider?: string; model?: string } = {},
): Content {
  return { kind: "thinking", role: "assistant", text, ...extra };
}
/** A redacted thinking block: no text, the provider's opaque `data`. */
export function redacted(data: string, origin: { provider?: string; model?: string } = {}): Content {
  return { kind: "thinking", role: "assistant", text: "", redacted: data, ...origin };
}
export function call(
  callId: string,
  name = "echo",
  extra: { providerCallId?: string; input?: Record<string, unknown> } = {},
): Content {
  return {
    kind: "tool_call",
    role: "assistant",
    callId,
    name,
    input: extra.input ?? { text: callId },
    ...(extra.providerCallId === undefined ? {} : { providerCallId: extra.providerCallId }),
  };
}
export function result(
  callId: string,
  text: string,
  status: ToolResponseStatus = "complete",
  name = "echo",
): Content {
  return {
    kind: "tool_response",
    role: "tool",
    callId,
    name,
    status,
    result: text,
    isError: status !== "complete",
  };
}

/** Blocks in order, positions 0, 1, 2, …; a new turn id starts at each user text. */
export function history(...contents: Content[]): HistoryBlock[] {
  let turn = -1;
  return contents.map((content, position) => {
    if (content.kind === "text" && content.role === "user") turn += 1;
    return {
      ...content,
      sessionId: SESSION_ID,
      turnId: `turn_${Math.max(turn, 0)}`,
      position,
      createdAt: position,
    } as HistoryBlock;
  });
}
