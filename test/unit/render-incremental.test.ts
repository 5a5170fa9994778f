/**
 * Incremental rendering (docs/transcripts.md): a `TranscriptCache` renders each session's history on
 * top of its previous render and must give exactly what a fresh render gives — messages, thinking,
 * diagnostics, ids and counts — for every history grown at its end, whatever the history holds; it
 * renders only what was added when the history grew as sessions grow (every earlier call closed), and
 * renders from scratch when it did not. Diagnostics are read after later renders, so each request's
 * lazily built diagnostics must still describe its own history.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { HistoryBlock, ToolResponseStatus } from "../../src/history/model.js";
import {
  CHARACTERS_PER_TOKEN,
  PROFILE_NAMES,
  TranscriptCache,
  applyBudget,
  estimateMessageTokens,
  estimateTranscriptTokens,
  getProfile,
  omittedTurnsSummary,
  renderProviderRequest,
  renderTranscript,
  toAnthropicRequestMessages,
  toOpenAIChatMessages,
  type ProfileName,
  type ProviderRequestMessages,
  type RenderOptions,
  type RenderedMessage,
} from "../../src/history/render/index.js";
import { renderBudgetOf, transcriptSettings } from "../../src/history/render/render.js";
import { providerRequestOf, requestInstructions } from "../../src/history/render/request.js";
import { STRETCH_BLOCKS, TranscriptState } from "../../src/history/render/transcript-state.js";
import {
  RENDER_MODEL,
  call,
  history,
  historyArbitrary,
  result,
  say,
  signatureFor,
  think,
  user,
} from "../support/history-arbitraries.js";

const RUNS = 150;
const SESSION = "ses_incremental";

function expectSameRequest(cached: ProviderRequestMessages, fresh: ProviderRequestMessages): void {
  expect(cached.format).toBe(fresh.format);
  expect(cached.messages).toEqual(fresh.messages);
  expect(cached.thinking).toBe(fresh.thinking);
  expect(cached.counts).toEqual(fresh.counts);
}

/** Diagnostics and ids are built on first access: read them only after every render is done. */
function expectSameDetails(cached: ProviderRequestMessages, fresh: ProviderRequestMessages): void {
  expect(cached.diagnostics).toEqual(fresh.diagnostics);
  expect(cached.ids).toEqual(fresh.ids);
  const { diagnostics, counts } = cached;
  expect(counts.emittedCalls).toBe(diagnostics.emittedCalls.length);
  expect(counts.syntheticResults).toBe(diagnostics.syntheticResults.length);
  expect(counts.dedupe).toBe(diagnostics.dedupe.length);
  expect(counts.duplicateCalls).toBe(diagnostics.duplicateCalls.length);
  expect(counts.orphanResults).toBe(diagnostics.orphanResults.length);
  expect(counts.calls).toBe(diagnostics.callIdsSeen.length);
  expect(counts.droppedTurns).toBe(diagnostics.budget.droppedTurns);
}

/**
 * Renders each prefix through one cache and fresh, then compares (details last). Every other cached
 * request is released once compared, as an engine releases a sent one, so that the next render reuses
 * its array; a request not released must still be what it was when the session has grown on.
 */
function renderGrowing(
  prefixes: readonly (readonly HistoryBlock[])[],
  profile: ProfileName,
  options: RenderOptions,
  cache = new TranscriptCache(),
): TranscriptCache {
  const pairs = prefixes.map((prefix, index) => {
    const cached = cache.renderProviderRequest(SESSION, prefix, profile, options);
    const fresh = renderProviderRequest(prefix, profile, options);
    expectSameRequest(cached, fresh);
    const released = index % 2 === 0;
    if (released) cached.release();
    return [cached, fresh, released] as const;
  });
  for (const [cached, fresh, released] of pairs) {
    if (!released) expect(cached.messages).toEqual(fresh.messages);
    expectSameDetails(cached, fresh);
  }
  return cache;
}

/** Prefix lengths: the given cut points (any block boundary) and the whole history, increasing. */
function prefixesAt(blocks: readonly HistoryBlock[], cuts: readonly number[]): HistoryBlock[][] {
  const lengths = [...new Set([...cuts.map((cut) => cut % (blocks.length + 1)), blocks.length])];
  return lengths.sort((left, right) => left - right).map((length) => blocks.slice(0, length));
}

/** Prefixes ending before each user text: the history as it stands when each turn starts. */
function turnPrefixes(blocks: readonly HistoryBlock[]): HistoryBlock[][] {
  const prefixes: HistoryBlock[][] = [];
  blocks.forEach((block, index) => {
    if (index > 0 && block.kind === "text" && block.role === "user") prefixes.push(blocks.slice(0, index));
  });
  prefixes.push([...blocks]);
  return prefixes;
}

/** An agent's instructions, or none. */
const systemArbitrary = fc.option(fc.constantFrom("", "Answer in one word.", "Be brief."), {
  nil: undefined,
});

const optionsArbitrary: fc.Arbitrary<RenderOptions> = fc.record({
  thinking: fc.boolean(),
  model: fc.constant(RENDER_MODEL),
  budgetTokens: fc.option(fc.integer({ min: 1, max: 200 }), { nil: undefined }),
  system: systemArbitrary,
});

/**
 * The request built the plain way: the adapter applied to the whole transcript `renderTranscript` gives,
 * after a `system` message with the instructions in the OpenAI formats (Anthropic's go in `system`).
 */
function adaptedTranscript(blocks: readonly HistoryBlock[], profile: ProfileName, options: RenderOptions) {
  const { messages } = renderTranscript(blocks, profile, options);
  if (getProfile(profile).format === "anthropic-messages") return toAnthropicRequestMessages(messages);
  const system = options.system ? [{ role: "system", content: options.system }] : [];
  return [...system, ...toOpenAIChatMessages(messages, getProfile(profile))];
}

describe("provider messages built from committed messages", () => {
  it.each(PROFILE_NAMES)(
    "%s: equal the adapter applied to the rendered transcript, cut by a budget or not, whatever instructions each render has",
    (profile) => {
      fc.assert(
        fc.property(
          historyArbitrary({ maxTurns: 6 }),
          fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
          optionsArbitrary,
          fc.array(systemArbitrary, { minLength: 1, maxLength: 4 }),
          (blocks, cuts, drawn, systems) => {
            const cache = new TranscriptCache();
            const earlier: { messages: unknown; expected: unknown }[] = [];
            for (const [index, prefix] of prefixesAt(blocks, cuts).entries()) {
              // one cached state, rendered with other instructions (or none) each time
              const options = { ...drawn, system: systems[index % systems.length] };
              const expected = adaptedTranscript(prefix, profile, options);
              expect(renderProviderRequest(prefix, profile, options).messages).toEqual(expected);
              const request = cache.renderProviderRequest(SESSION, prefix, profile, options);
              expect(request.messages).toEqual(expected);
              const system = request.format === "anthropic-messages" ? request.system : undefined;
              expect(system).toBe(
                request.format === "anthropic-messages" && options.system ? options.system : undefined,
              );
              earlier.push({ messages: request.messages, expected });
            }
            // a request shares nothing the cache changes later: each still holds its own messages
            for (const { messages, expected } of earlier) expect(messages).toEqual(expected);
          },
        ),
        { numRuns: RUNS },
      );
    },
  );
});

/** The budget rule applied the plain way: drop the oldest turn until the rest and the summary fit. */
function droppedTurnsOneByOne(messages: readonly RenderedMessage[], budgetTokens: number): number {
  const costs = messages.map(estimateMessageTokens);
  const total = costs.reduce((sum, cost) => sum + cost, 0);
  const starts = messages.flatMap((message, index) =>
    index === 0 || message.role === "user" ? [index] : [],
  );
  if (total <= budgetTokens || starts.length < 2) return 0;
  let remaining = total;
  let calls = 0;
  for (let turn = 0; turn < starts.length - 1; turn++) {
    for (let index = starts[turn]!; index < starts[turn + 1]!; index++) {
      remaining -= costs[index]!;
      const message = messages[index]!;
      if (message.role === "assistant")
        calls += message.content.filter((part) => part.type === "tool_call").length;
    }
    const firstKept = messages[starts[turn + 1]!] as { text: string };
    const text = `${omittedTurnsSummary(turn + 1, calls)}\n\n${firstKept.text}`;
    if (
      remaining - costs[starts[turn + 1]!]! + Math.ceil(text.length / CHARACTERS_PER_TOKEN) <=
      budgetTokens
    ) {
      return turn + 1;
    }
  }
  return starts.length - 1;
}

describe("the context budget", () => {
  it("drops exactly the turns that dropping the oldest one at a time would", () => {
    fc.assert(
      fc.property(
        historyArbitrary({ maxTurns: 8 }),
        fc.integer({ min: 1, max: 400 }),
        (blocks, budgetTokens) => {
          const { messages } = renderTranscript(blocks, "openai", { budgetTokens: Number.POSITIVE_INFINITY });
          const outcome = applyBudget(messages, budgetTokens);
          expect(outcome.droppedTurns).toBe(droppedTurnsOneByOne(messages, budgetTokens));
          expect(outcome.renderedTokens).toBe(estimateTranscriptTokens(outcome.messages));
          const cut = renderTranscript(blocks, "openai", { budgetTokens });
          expect(cut.diagnostics.budget.droppedTurns).toBe(outcome.droppedTurns);
        },
      ),
      { numRuns: RUNS * 4 },
    );
  });
});

describe("incremental rendering equals a fresh render", () => {
  it.each(PROFILE_NAMES)(
    "%s: for any history grown block by block at random points, with or without a budget",
    (profile) => {
      fc.assert(
        fc.property(
          historyArbitrary(),
          fc.array(fc.nat(), { minLength: 1, maxLength: 8 }),
          optionsArbitrary,
          (blocks, cuts, options) => {
            renderGrowing(prefixesAt(blocks, cuts), profile, options);
          },
        ),
        { numRuns: RUNS },
      );
    },
  );

  it.each(PROFILE_NAMES)(
    "%s: for any history grown turn by turn, its blocks read anew each time",
    (profile) => {
      fc.assert(
        fc.property(historyArbitrary({ maxTurns: 6 }), optionsArbitrary, (blocks, options) => {
          // A store that reads rows again hands out equal blocks that are new objects.
          renderGrowing(
            turnPrefixes(blocks).map((prefix) => structuredClone(prefix)),
            profile,
            options,
          );
        }),
        { numRuns: RUNS },
      );
    },
  );
});

// Histories as a session grows them: each inference's calls answered right after it (once, or a late
// duplicate at once), renders at each inference and each user message.
type StepSpec = {
  thinking: boolean;
  text: boolean;
  calls: { status: ToolResponseStatus; duplicate: boolean }[];
};
const stepArbitrary: fc.Arbitrary<StepSpec> = fc.record({
  thinking: fc.boolean(),
  text: fc.boolean(),
  calls: fc.array(
    fc.record({
      status: fc.constantFrom<ToolResponseStatus>("complete", "error", "cancelled", "timeout", "interrupted"),
      duplicate: fc.boolean(),
    }),
    { maxLength: 3 },
  ),
});
type SessionTurn = { steps: StepSpec[]; answer: boolean };
const sessionArbitrary: fc.Arbitrary<SessionTurn[]> = fc.array(
  fc.record({ steps: fc.array(stepArbitrary, { maxLength: 3 }), answer: fc.boolean() }),
  {
    minLength: 1,
    maxLength: 6,
  },
);

/** The history after each inference and at each new user message, in order. */
function sessionPrefixes(turns: readonly SessionTurn[]): HistoryBlock[][] {
  const contents: Parameters<typeof history> = [];
  const cuts: number[] = [];
  let callCount = 0;
  turns.forEach((turn, turnIndex) => {
    contents.push(user(`turn ${turnIndex}`));
    cuts.push(contents.length);
    for (const step of turn.steps) {
      if (step.thinking) {
        contents.push(
          think("pondering", {
            signature: signatureFor("anthropic", RENDER_MODEL, callCount),
            provider: "anthropic",
            model: RENDER_MODEL,
          }),
        );
      }
      if (step.text) contents.push(say(`step of turn ${turnIndex}`));
      const ids = step.calls.map(() => `call_${++callCount}`);
      ids.forEach((id) => contents.push(call(id, "read_file", { providerCallId: "functions.read_file:0" })));
      step.calls.forEach(({ status, duplicate }, index) => {
        contents.push(result(ids[index]!, `${status} ${ids[index]}`, status, "read_file"));
        if (duplicate) contents.push(result(ids[index]!, "a late duplicate", "cancelled", "read_file"));
      });
      cuts.push(contents.length);
    }
    if (turn.answer) contents.push(say(`answer ${turnIndex}`));
  });
  const blocks = history(...contents);
  return [...new Set(cuts)].map((cut) => blocks.slice(0, cut));
}

describe("a session growing as sessions do", () => {
  it.each(PROFILE_NAMES)("%s: every render after the first reuses the previous one", (profile) => {
    fc.assert(
      fc.property(sessionArbitrary, fc.boolean(), (turns, thinking) => {
        const prefixes = sessionPrefixes(turns);
        const cache = renderGrowing(prefixes, profile, { thinking, model: RENDER_MODEL });
        expect(cache.stats).toEqual({ hits: prefixes.length - 1, misses: 1, fallbacks: 0, evictions: 0 });
      }),
      { numRuns: RUNS },
    );
  });
});

/** A history whose element reads are counted. */
function watched(blocks: readonly HistoryBlock[]): { history: readonly HistoryBlock[]; read: Set<number> } {
  const read = new Set<number>();
  const history = new Proxy(blocks, {
    get(target, key, receiver) {
      if (typeof key === "string" && /^\d+$/.test(key)) read.add(Number(key));
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  return { history, read };
}

/** Turns of five blocks: a question, a call and its result, an answer (a chat: two blocks, no call). */
function longSession(turns: number, kind: "tools" | "chat" = "tools"): HistoryBlock[] {
  const contents: Parameters<typeof history> = [];
  for (let turn = 0; turn < turns; turn++) {
    contents.push(user(`question ${turn}`));
    if (kind === "tools") {
      contents.push(say("Looking."), call(`c${turn}`, "read_file"));
      contents.push(result(`c${turn}`, `body ${turn}`, "complete", "read_file"));
    }
    contents.push(say(`answer ${turn}`));
  }
  return history(...contents);
}

describe("TranscriptCache", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it.each(
    PROFILE_NAMES.flatMap((profile) => [[profile, "tools", 5] as const, [profile, "chat", 2] as const]),
  )(
    "%s: one more turn of a long session (%s) reads only the blocks it added and the last one rendered",
    (profile, kind, turnBlocks) => {
      const blocks = longSession(400, kind);
      const before = blocks.slice(0, blocks.length - turnBlocks);
      const cache = new TranscriptCache();
      cache.renderProviderRequest(SESSION, before, profile);

      const { history: grown, read } = watched(blocks);
      const request = cache.renderProviderRequest(SESSION, grown, profile);

      expect(request.messages).toEqual(renderProviderRequest(blocks, profile).messages);
      // The previous render ended on an answer that a following block could still extend (and, in a
      // chat, the question before it): those are walked again with the new turn, nothing earlier.
      expect(Math.min(...read)).toBeGreaterThanOrEqual(before.length - 2);
      expect(read.size).toBeLessThanOrEqual(turnBlocks + 2);
      expect(cache.stats.hits).toBe(1);
    },
  );

  it("serializes each call's input once per block object, however often it is rendered", () => {
    const blocks = longSession(20);
    renderProviderRequest(blocks, "openai");
    const stringify = vi.spyOn(JSON, "stringify");
    renderProviderRequest(blocks, "openai");
    renderProviderRequest(blocks, "mistral");
    expect(stringify).not.toHaveBeenCalled();
  });

  it("renders from scratch when a late complete result replaces an error already rendered", () => {
    const first = history(user("go"), call("c1", "read_file"), result("c1", "ENOENT", "error", "read_file"));
    const later = history(
      user("go"),
      call("c1", "read_file"),
      result("c1", "ENOENT", "error", "read_file"),
      result("c1", "the file body", "complete", "read_file"),
      user("and?"),
    );
    const cache = new TranscriptCache();
    expect(JSON.stringify(cache.renderProviderRequest(SESSION, first, "openai").messages)).toContain(
      "ENOENT",
    );
    const request = cache.renderProviderRequest(SESSION, later, "openai");
    expect(request.messages).toEqual(renderProviderRequest(later, "openai").messages);
    expect(JSON.stringify(request.messages)).toContain("the file body");
    expect(JSON.stringify(request.messages)).not.toContain("ENOENT");
    expect(cache.stats).toMatchObject({ hits: 0, fallbacks: 1 });
  });

  it("renders from scratch when a new call takes an id generated earlier for another call", () => {
    // Mistral ids are 9 characters: "c 1" gets a generated one, which a later provider id then names.
    const start = history(user("go"), call("c 1"), result("c 1", "ok"));
    const generated = renderProviderRequest(start, "mistral").ids.toProjected.get("c 1")!;
    const grown = history(
      user("go"),
      call("c 1"),
      result("c 1", "ok"),
      call("c 2", "echo", { providerCallId: generated }),
      result("c 2", "ok"),
    );
    const cache = new TranscriptCache();
    cache.renderProviderRequest(SESSION, start, "mistral");
    const request = cache.renderProviderRequest(SESSION, grown, "mistral");
    expect(request.messages).toEqual(renderProviderRequest(grown, "mistral").messages);
    expect(request.ids.toProjected.get("c 2")).toBe(generated);
    expect(request.ids.toProjected.get("c 1")).not.toBe(generated);
    expect(cache.stats.fallbacks).toBe(1);
  });

  it("renders from scratch when the history is not the one rendered before, or shrank", () => {
    const cache = new TranscriptCache();
    const one = longSession(3);
    const other = history(user("something else"), say("entirely"), user("new"));
    const longerOther = history(user("another"), say("history"), user("that"), say("is longer"), user("?"));
    cache.renderProviderRequest(SESSION, other, "anthropic");
    for (const next of [longerOther, one, other.slice(0, 1)]) {
      expect(cache.renderProviderRequest(SESSION, next, "anthropic").messages).toEqual(
        renderProviderRequest(next, "anthropic").messages,
      );
    }
    expect(cache.stats).toMatchObject({ hits: 0, misses: 1, fallbacks: 3 });
  });

  it("renders blocks appended out of position order sorted, and does not keep that render", () => {
    const blocks = longSession(2);
    const shuffled = [...blocks.slice(0, 6), blocks[7]!, blocks[6]!, ...blocks.slice(8)];
    const cache = new TranscriptCache();
    cache.renderProviderRequest(SESSION, blocks.slice(0, 6), "openai");
    const request = cache.renderProviderRequest(SESSION, shuffled, "openai");
    expect(request.messages).toEqual(renderProviderRequest(blocks, "openai").messages);
    expect(request.diagnostics.reordered).toBe(true);
    expect(cache.size).toBe(0);
  });

  it("keeps one entry per session, profile, thinking setting and model, and drops the least recent beyond its bound", () => {
    const cache = new TranscriptCache({ maxSessions: 2 });
    const blocks = longSession(2);
    cache.renderProviderRequest("a", blocks, "openai");
    cache.renderProviderRequest("b", blocks, "openai");
    cache.renderProviderRequest("a", blocks, "openai");
    cache.renderProviderRequest("c", blocks, "openai");
    expect(cache.size).toBe(2);
    expect(cache.stats).toEqual({ hits: 1, misses: 3, fallbacks: 0, evictions: 1 });
    cache.renderProviderRequest("a", blocks, "openai");
    cache.renderProviderRequest("b", blocks, "openai");
    expect(cache.stats).toMatchObject({ hits: 2, misses: 4 });
    cache.renderProviderRequest("b", blocks, "kimi");
    cache.renderProviderRequest("b", blocks, "kimi", { model: "other" });
    expect(cache.stats).toMatchObject({ hits: 2, misses: 6 });
    expect(() => new TranscriptCache({ maxSessions: 0 })).toThrow(/maxSessions must be a positive integer/);
  });

  it("applies the context budget on top of the cached turns as a fresh render does", () => {
    const blocks = longSession(60);
    const cache = new TranscriptCache();
    for (let turns = 10; turns <= 60; turns += 10) {
      const prefix = blocks.slice(0, turns * 5);
      const cached = cache.renderProviderRequest(SESSION, prefix, "mistral", { budgetTokens: 150 });
      const fresh = renderProviderRequest(prefix, "mistral", { budgetTokens: 150 });
      expect(cached.messages).toEqual(fresh.messages);
      expect(cached.diagnostics.budget).toEqual(fresh.diagnostics.budget);
      expect(cached.diagnostics.budget.droppedTurns).toBeGreaterThan(0);
    }
    expect(cache.stats.hits).toBe(5);
  });
});

describe("a render walked in stretches", () => {
  /** The request a new state renders when it indexes and assembles `stretchBlocks` blocks at a time. */
  function stretchedRequest(
    blocks: readonly HistoryBlock[],
    profile: ProfileName,
    options: RenderOptions,
    stretchBlocks: number,
  ) {
    const settings = transcriptSettings(getProfile(profile), options, true);
    const state = new TranscriptState(settings, false, stretchBlocks);
    const instructions = requestInstructions(settings.profile, options.system);
    const rendering = state.render(blocks, renderBudgetOf(settings.profile, options), instructions.leading);
    return {
      failure: state.failure,
      request: rendering && providerRequestOf(rendering, settings, instructions),
    };
  }

  it.each(PROFILE_NAMES)(
    "%s: gives what one walk gives, or reports the result that answered an earlier stretch's call",
    (profile) => {
      fc.assert(
        fc.property(
          historyArbitrary({ maxTurns: 6 }),
          fc.integer({ min: 1, max: 8 }),
          optionsArbitrary,
          (blocks, stretchBlocks, options) => {
            const whole = stretchedRequest(blocks, profile, options, Number.POSITIVE_INFINITY).request!;
            const { failure, request } = stretchedRequest(blocks, profile, options, stretchBlocks);
            if (request === null) {
              expect(failure).toBe("conflict");
              return;
            }
            expectSameRequest(request, whole);
            expectSameDetails(request, whole);
          },
        ),
        { numRuns: RUNS },
      );
    },
  );

  it("renders a long history whose late result answers a call of an earlier stretch as one walk does", () => {
    const contents = [user("start"), call("c_early", "echo"), result("c_early", "failed", "error")];
    while (contents.length < STRETCH_BLOCKS + 10) {
      contents.push(user(`turn ${contents.length}`), say("ok"));
    }
    // Recorded turns later: it must still win over the error, which only a walk in one stretch sees.
    contents.push(result("c_early", "the real output"));
    const blocks = history(...contents);
    for (const profile of PROFILE_NAMES) {
      expect(stretchedRequest(blocks, profile, {}, STRETCH_BLOCKS).failure).toBe("conflict");
      const rendered = renderProviderRequest(blocks, profile);
      const whole = stretchedRequest(blocks, profile, {}, Number.POSITIVE_INFINITY).request!;
      expectSameRequest(rendered, whole);
      expectSameDetails(rendered, whole);
      expect(rendered.diagnostics.emittedResults[0]).toMatchObject({
        canonicalId: "c_early",
        status: "complete",
      });
      expect(rendered.diagnostics.dedupe).toHaveLength(1);
    }
  });
});
