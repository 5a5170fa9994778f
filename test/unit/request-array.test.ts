/**
 * A request's message array, reused by the session's next render once the request is released (sent):
 * the render an inference pays appends what the session added instead of copying every committed
 * message again (src/history/render/request-array.ts). A request not released never changes; one
 * released late, or twice, never frees an array handed out since; the engines release each request
 * once it is sent, so a session's inferences share one array and every body on the wire is still the
 * fresh render.
 */
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { HistoryBlock } from "../../src/history/model.js";
import {
  PROFILE_NAMES,
  TranscriptCache,
  renderProviderRequest,
  type ProfileName,
  type ProviderRequestMessages,
  type RenderOptions,
} from "../../src/history/render/index.js";
import { AnthropicEngine } from "../../src/providers/anthropic.js";
import type { ModelEngine } from "../../src/providers/engine.js";
import { OpenAICompatibleEngine } from "../../src/providers/openai-compatible.js";
import { FakeProvider } from "../support/fake-providers.js";
import { call, history, result, say, user } from "../support/history-arbitraries.js";

const SESSION = "ses_request_array";
const OPTIONS: RenderOptions = { system: "Answer briefly." };

/** `turns` turns of a question, a call and its result, and an answer; then `extra`. */
function session(turns: number, ...extra: Parameters<typeof history>): HistoryBlock[] {
  const contents: Parameters<typeof history> = [];
  for (let turn = 0; turn < turns; turn++) {
    contents.push(user(`question ${turn}`), say("Looking."), call(`c${turn}`, "read_file"));
    contents.push(result(`c${turn}`, `body ${turn}`, "complete", "read_file"), say(`answer ${turn}`));
  }
  return history(...contents, ...extra);
}

function render(cache: TranscriptCache, blocks: readonly HistoryBlock[], profile: ProfileName) {
  return cache.renderProviderRequest(SESSION, blocks, profile, OPTIONS);
}

function fresh(blocks: readonly HistoryBlock[], profile: ProfileName) {
  return renderProviderRequest(blocks, profile, OPTIONS).messages;
}

describe("a request's message array", () => {
  it.each(PROFILE_NAMES)("%s: carries the session's next request once released", (profile) => {
    const cache = new TranscriptCache();
    const first = render(cache, session(3), profile);
    first.release();
    const grown = session(4);
    const second = render(cache, grown, profile);
    expect(second.messages).toBe(first.messages);
    expect(second.messages).toEqual(fresh(grown, profile));
  });

  it.each(PROFILE_NAMES)("%s: is never changed by later renders until it is released", (profile) => {
    const cache = new TranscriptCache();
    const held = render(cache, session(3), profile);
    const sent = structuredClone(held.messages);
    const next = render(cache, session(4), profile);
    next.release();
    render(cache, session(5), profile);
    expect(next.messages).not.toBe(held.messages);
    expect(held.messages).toEqual(sent);
  });

  it.each(PROFILE_NAMES)(
    "%s: released late, does not free the array of a request rendered since",
    (profile) => {
      const cache = new TranscriptCache();
      const late = render(cache, session(3), profile);
      const held = render(cache, session(4), profile);
      const sent = structuredClone(held.messages);
      late.release();
      const next = render(cache, session(5), profile);
      expect(next.messages).not.toBe(held.messages);
      expect(held.messages).toEqual(sent);
      expect(next.messages).toEqual(fresh(session(5), profile));
    },
  );

  it.each(PROFILE_NAMES)(
    "%s: released twice, does not free the array of the request that took it over",
    (profile) => {
      const cache = new TranscriptCache();
      const first = render(cache, session(3), profile);
      first.release();
      const held = render(cache, session(4), profile);
      expect(held.messages).toBe(first.messages);
      const sent = structuredClone(held.messages);
      first.release();
      const next = render(cache, session(5), profile);
      expect(next.messages).not.toBe(held.messages);
      expect(held.messages).toEqual(sent);
      expect(next.messages).toEqual(fresh(session(5), profile));
    },
  );

  it.each(PROFILE_NAMES)(
    "%s: a reused array drops what only the previous request had: its own tail, and its instructions",
    (profile) => {
      // A turn ends on its results and the next question follows them (Anthropic joins it to their user
      // message), then the next render has other instructions.
      const blocks = session(2, user("question 2"), say("Looking."), call("c2", "read_file"));
      blocks.push(...history(result("c2", "body 2", "complete", "read_file"), user("and then?"), say("So.")));
      blocks.forEach((block, index) => Object.assign(block, { position: index, createdAt: index }));
      const cache = new TranscriptCache();
      const ended = render(cache, blocks.slice(0, -2), profile);
      ended.release();
      const joined = render(cache, blocks.slice(0, -1), profile);
      expect(joined.messages).toBe(ended.messages);
      expect(joined.messages).toEqual(fresh(blocks.slice(0, -1), profile));
      joined.release();
      const other = { system: "Be thorough." };
      const next = cache.renderProviderRequest(SESSION, blocks, profile, other);
      // Anthropic's instructions go in \`system\`; an OpenAI format's lead the array, built anew
      if (profile === "anthropic") expect(next.messages).toBe(joined.messages);
      else expect(next.messages).not.toBe(joined.messages);
      expect(next.messages).toEqual(renderProviderRequest(blocks, profile, other).messages);
      expect(cache.stats.fallbacks).toBe(0);
    },
  );
});

describe("an engine's requests", () => {
  let fake: FakeProvider | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await fake?.close();
    fake = undefined;
  });

  function engineFor(profile: ProfileName, baseUrl: string, transcripts: TranscriptCache): ModelEngine {
    const logger = pino({ level: "silent" });
    if (profile === "anthropic") {
      return new AnthropicEngine({
        apiKey: "sk-test",
        baseUrl,
        model: "claude-test",
        maxTokens: 1024,
        thinkingBudgetTokens: 0,
        transcripts,
        logger,
      });
    }
    return new OpenAICompatibleEngine({
      profile,
      apiKey: "sk-test",
      baseUrl,
      model: "model-test",
      transcripts,
      logger,
    });
  }

  it.each(PROFILE_NAMES)(
    "%s: a session's inferences share one message array, and each body sent is the fresh render",
    async (profile) => {
      fake = await FakeProvider.start(profile);
      fake.enqueue({ kind: "text", text: "one" }, { kind: "text", text: "two" });
      const transcripts = new TranscriptCache();
      const rendered: ProviderRequestMessages[] = [];
      const renderSpy = vi.spyOn(transcripts, "renderProviderRequest");
      renderSpy.mockImplementation((...args) => {
        const request = TranscriptCache.prototype.renderProviderRequest.apply(transcripts, args);
        rendered.push(request);
        return request;
      });
      const engine = engineFor(profile, fake.baseUrl, transcripts);
      const model = profile === "anthropic" ? "claude-test" : "model-test";
      const histories = [session(3), session(4)];
      for (const blocks of histories) {
        const request = {
          turnId: "turn_1",
          sessionId: SESSION,
          model,
          history: blocks,
          // the tool the history's calls used: Anthropic refuses tool blocks in a request without tools
          tools: [{ name: "read_file", description: "Reads a file.", inputSchema: { type: "object" } }],
          ...OPTIONS,
        };
        for await (const _event of engine.stream(request, new AbortController().signal)) {
          // the reply's text; the request is what is checked
        }
      }
      expect(rendered[1]!.messages).toBe(rendered[0]!.messages);
      expect(fake.accepted.map((request) => request.body.messages)).toEqual(
        histories.map((blocks) => JSON.parse(JSON.stringify(fresh(blocks, profile))) as unknown),
      );
    },
  );
});
