/**
 * The transcript renderer on concrete histories (docs/semantics.md#transcript-integrity): pairing, placement,
 * dedupe, thinking, id projection, provider shape quirks, the context budget and the adapters' exact request
 * shapes.
 */
import { describe, expect, it } from "vitest";
import {
  CONTINUE_TEXT,
  EMPTY_RESULT_TEXT,
  NO_REPLY_BRIDGE_TEXT,
  estimateMessageTokens,
  getProfile,
  renderProviderRequest,
  renderTranscript,
  TranscriptCache,
  toAnthropicRequestMessages,
  toOpenAIChatMessages,
  type RenderedMessage,
} from "../../src/history/render/index.js";
import { call, history, redacted, result, say, think, user } from "../support/history-arbitraries.js";
import { checkProviderMessages, rejectionMessage } from "../support/provider-rules.js";

const MODEL = "claude-test";
const signed = (text: string, signature = "sig-1") =>
  think(text, { signature, provider: "anthropic", model: MODEL });

/** A history whose answered message has no signed thinking: Anthropic's request must turn thinking off. */
function answeredWithoutSignedThinking() {
  return history(
    user("first"),
    signed("old thoughts"),
    say("Answer."),
    user("second"),
    say("Calling."),
    call("c1"),
    result("c1", "ok"),
  );
}

/** Roles and, for tool results, the canonical ids they answer: a compact picture of a transcript. */
function outline(messages: readonly RenderedMessage[]): string[] {
  return messages.map((message) => {
    if (message.role === "user") return `user: ${message.text}`;
    if (message.role === "tool_results") {
      return `results: ${message.results.map((entry) => `${entry.canonicalId}=${entry.content}`).join(", ")}`;
    }
    const parts = message.content.map((part) => {
      if (part.type === "tool_call") return `call ${part.canonicalId}`;
      return part.type === "redacted_thinking" ? `redacted ${part.data}` : `${part.type} ${part.text}`;
    });
    return `assistant: ${parts.join(" | ")}`;
  });
}

describe("pairing and placement", () => {
  it("places a result recorded before its call right after the calling assistant message", () => {
    const rendered = renderTranscript(
      history(
        user("read it"),
        result("c1", "file body"),
        say("Reading."),
        call("c1", "read_file"),
        say("Done."),
      ),
      "openai",
    );
    expect(outline(rendered.messages)).toEqual([
      "user: read it",
      "assistant: text Reading. | call c1",
      "results: c1=file body",
      "assistant: text Done.",
    ]);
    expect(rendered.diagnostics.resultsBeforeCall).toEqual([{ callId: "c1", position: 1 }]);
  });

  it("gathers scattered results into one results message in call order, and moves text found in between after it", () => {
    const rendered = renderTranscript(
      history(
        user("go"),
        call("c1"),
        call("c2"),
        result("c2", "two"),
        say("still waiting"),
        user("hurry up"),
        result("c1", "one"),
      ),
      "openai",
    );
    expect(outline(rendered.messages)).toEqual([
      "user: go",
      "assistant: call c1 | call c2",
      "results: c1=one, c2=two",
      "assistant: text still waiting",
      "user: hurry up",
    ]);
    expect(rendered.diagnostics.movedBlocks).toEqual([
      { position: 4, kind: "text", role: "assistant" },
      { position: 5, kind: "text", role: "user" },
    ]);
  });

  it("answers a call with no recorded result with a synthetic [INTERRUPTED] error result", () => {
    const rendered = renderTranscript(
      history(user("go"), call("c1", "sleep"), user("are you there?")),
      "anthropic",
    );
    const results = rendered.messages[2];
    expect(results).toMatchObject({
      role: "tool_results",
      results: [{ canonicalId: "c1", isError: true, status: "interrupted", synthetic: true }],
    });
    expect(results?.role === "tool_results" && results.results[0]?.content).toMatch(
      /^\[INTERRUPTED\] Tool "sleep" /,
    );
    expect(rendered.diagnostics.syntheticResults).toEqual([
      {
        callId: "c1",
        projectedId: rendered.ids.toProjected.get("c1"),
        name: "sleep",
        reason: "no_result_recorded",
      },
    ]);
  });

  it("drops a result whose call is nowhere in the history", () => {
    const rendered = renderTranscript(history(user("hi"), result("ghost", "boo"), say("hello")), "openai");
    expect(outline(rendered.messages)).toEqual(["user: hi", "assistant: text hello"]);
    expect(rendered.diagnostics.orphanResults).toEqual([{ callId: "ghost", positions: [1] }]);
  });

  it("renders a call recorded twice under one canonical id once", () => {
    const rendered = renderTranscript(
      history(user("go"), call("c1"), result("c1", "ok"), call("c1"), say("done")),
      "openai",
    );
    expect(outline(rendered.messages)).toEqual([
      "user: go",
      "assistant: call c1",
      "results: c1=ok",
      "assistant: text done",
    ]);
    expect(rendered.diagnostics.duplicateCalls).toEqual([{ callId: "c1", position: 3 }]);
  });

  it("sorts blocks handed over out of position order", () => {
    const blocks = history(user("go"), call("c1"), result("c1", "ok"));
    const rendered = renderTranscript([blocks[2]!, blocks[0]!, blocks[1]!], "openai");
    expect(outline(rendered.messages)).toEqual(["user: go", "assistant: call c1", "results: c1=ok"]);
    expect(rendered.diagnostics.reordered).toBe(true);
  });
});

describe("duplicate results", () => {
  it("keeps a real result over a synthetic one recorded before it", () => {
    const rendered = renderTranscript(
      history(
        user("go"),
        call("c1"),
        result("c1", "[CANCELLED] Turn aborted by user.", "cancelled"),
        result("c1", "real"),
      ),
      "openai",
    );
    expect(outline(rendered.messages)[2]).toBe("results: c1=real");
    expect(rendered.diagnostics.dedupe).toEqual([
      {
        callId: "c1",
        keptPosition: 3,
        keptStatus: "complete",
        droppedPosition: 2,
        droppedStatus: "cancelled",
        reason: "real_beats_synthetic",
      },
    ]);
  });

  // Changed on purpose: "the first real one wins" used to keep c1's error over its later success.
  it("keeps a complete result over an earlier error, and the first synthetic one when there is no real one", () => {
    const rendered = renderTranscript(
      history(
        user("go"),
        call("c1"),
        call("c2"),
        result("c1", "first", "error"),
        result("c1", "second"),
        result("c2", "[TIMEOUT] a", "timeout"),
        result("c2", "[CANCELLED] b", "cancelled"),
      ),
      "openai",
    );
    expect(outline(rendered.messages)[2]).toBe("results: c1=second, c2=[TIMEOUT] a");
    expect(rendered.diagnostics.dedupe).toEqual([
      {
        callId: "c1",
        keptPosition: 4,
        keptStatus: "complete",
        droppedPosition: 3,
        droppedStatus: "error",
        reason: "complete_beats_error",
      },
      {
        callId: "c2",
        keptPosition: 5,
        keptStatus: "timeout",
        droppedPosition: 6,
        droppedStatus: "cancelled",
        reason: "first_synthetic_wins",
      },
    ]);
  });

  it.each(["anthropic", "openai", "kimi", "mistral"] as const)(
    "%s: a complete result wins over an earlier error and an earlier synthetic one, and later ones never replace it",
    (profile) => {
      const request = renderProviderRequest(
        history(
          user("go"),
          call("c1", "read_file"),
          result("c1", "[TIMEOUT] Tool read_file timed out.", "timeout", "read_file"),
          result("c1", "ENOENT on the first try", "error", "read_file"),
          result("c1", "the file body", "complete", "read_file"),
          result("c1", "a second error", "error", "read_file"),
          result("c1", "[CANCELLED] late", "cancelled", "read_file"),
          result("c1", "a later success", "complete", "read_file"),
        ),
        profile,
      );
      const sent = JSON.stringify(request.messages);
      expect(sent).toContain("the file body");
      for (const lost of ["ENOENT", "TIMEOUT", "a second error", "CANCELLED", "a later success"]) {
        expect(sent).not.toContain(lost);
      }
      expect(request.diagnostics.emittedResults).toEqual([
        { canonicalId: "c1", projectedId: expect.any(String), status: "complete", synthetic: false },
      ]);
      expect(request.diagnostics.dedupe.map((decision) => decision.reason)).toEqual([
        "real_beats_synthetic",
        "complete_beats_error",
        "first_real_wins",
        "first_real_wins",
        "first_real_wins",
      ]);
      expect(request.counts.dedupe).toBe(5);
    },
  );
});

describe("thinking", () => {
  const turn = (thinking: ReturnType<typeof think>) =>
    history(user("go"), thinking, say("Let me look."), call("c1"), result("c1", "ok"));

  it("Anthropic: keeps its own signed thinking first in its message when thinking is on", () => {
    const request = renderProviderRequest(turn(signed("pondering")), "anthropic", {
      thinking: true,
      model: MODEL,
    });
    expect(request.thinking).toBe(true);
    expect(request.messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "thinking", thinking: "pondering", signature: "sig-1" },
        { type: "text", text: "Let me look." },
        { type: "tool_use", id: request.ids.toProjected.get("c1"), name: "echo", input: { text: "c1" } },
      ],
    });
  });

  it.each([
    ["another provider", think("x", { signature: "s", provider: "kimi", model: MODEL }), "other_provider"],
    [
      "another model",
      think("x", { signature: "s", provider: "anthropic", model: "claude-other" }),
      "other_model",
    ],
    ["no signature", think("x", { provider: "anthropic", model: MODEL }), "no_signature"],
  ] as const)("Anthropic: drops thinking from %s", (_label, block, reason) => {
    const rendered = renderTranscript(history(user("go"), block, say("Hi.")), "anthropic", {
      thinking: true,
      model: MODEL,
    });
    expect(outline(rendered.messages)).toEqual(["user: go", "assistant: text Hi."]);
    expect(rendered.diagnostics.droppedThinking).toEqual([{ position: 1, reason }]);
  });

  it("Anthropic: drops all thinking when thinking is off", () => {
    const request = renderProviderRequest(turn(signed("pondering")), "anthropic", {
      thinking: false,
      model: MODEL,
    });
    expect(JSON.stringify(request.messages)).not.toContain("pondering");
    expect(request.diagnostics.droppedThinking).toEqual([{ position: 1, reason: "thinking_disabled" }]);
  });

  it("Anthropic: turns thinking off for the request when the answered message has no signed thinking", () => {
    const request = renderProviderRequest(answeredWithoutSignedThinking(), "anthropic", {
      thinking: true,
      model: MODEL,
    });
    expect(request.thinking).toBe(false);
    expect(request.diagnostics.thinking).toMatchObject({ requested: true, effective: false });
    expect(JSON.stringify(request.messages)).not.toContain("old thoughts");
    expect(checkProviderMessages("anthropic", request.messages, { thinking: request.thinking })).toBeNull();
  });

  it("Kimi: sends thinking as reasoning_content on messages with tool calls, and an empty one where none was recorded", () => {
    const blocks = history(
      user("go"),
      think("why not", { provider: "kimi" }),
      call("c1"),
      result("c1", "ok"),
      think("plain musing", { provider: "kimi" }),
      say("Next."),
      call("c2"),
      result("c2", "ok"),
      think("final musing", { provider: "kimi" }),
      say("All done."),
    );
    const request = renderProviderRequest(blocks, "kimi", { thinking: true });
    const assistants = request.messages.filter((message) => message.role === "assistant");
    expect(
      assistants.map((message) => (message as { reasoning_content?: string }).reasoning_content),
    ).toEqual(["why not", "plain musing", undefined]);
    expect(request.diagnostics.droppedThinking).toEqual([{ position: 8, reason: "no_tool_calls" }]);

    const withoutThinking = history(user("go"), call("c1"), result("c1", "ok"));
    const placeholder = renderProviderRequest(withoutThinking, "kimi", { thinking: true });
    expect(placeholder.messages[1]).toMatchObject({ role: "assistant", reasoning_content: "" });
    const off = renderProviderRequest(blocks, "kimi", { thinking: false });
    expect(JSON.stringify(off.messages)).not.toContain("reasoning_content");
  });

  describe("several blocks, and redacted ones", () => {
    const origin = { provider: "anthropic", model: MODEL };
    const sealed = history(
      user("go"),
      signed("one", "S-one"),
      signed("two", "S-two"),
      redacted("ENCRYPTED-DATA", origin),
      call("c1"),
      result("c1", "ok"),
    );

    it("Anthropic: sends every block of the answered message unchanged, in its place, the redacted one as redacted_thinking", () => {
      const request = renderProviderRequest(sealed, "anthropic", { thinking: true, model: MODEL });
      expect(request.thinking).toBe(true);
      expect(request.messages[1]).toEqual({
        role: "assistant",
        content: [
          { type: "thinking", thinking: "one", signature: "S-one" },
          { type: "thinking", thinking: "two", signature: "S-two" },
          { type: "redacted_thinking", data: "ENCRYPTED-DATA" },
          { type: "tool_use", id: request.ids.toProjected.get("c1"), name: "echo", input: { text: "c1" } },
        ],
      });
      expect(request.diagnostics.droppedThinking).toEqual([]);
      expect(checkProviderMessages("anthropic", request.messages, { thinking: true })).toBeNull();
    });

    it("Anthropic: a redacted block alone is the signed thinking the answered message must start with", () => {
      const blocks = history(user("go"), redacted("ENCRYPTED-DATA", origin), call("c1"), result("c1", "ok"));
      const request = renderProviderRequest(blocks, "anthropic", { thinking: true, model: MODEL });
      expect(request.thinking).toBe(true);
      expect(request.diagnostics.thinking).toEqual({ requested: true, effective: true });
      expect(request.messages[1]).toMatchObject({
        content: [{ type: "redacted_thinking", data: "ENCRYPTED-DATA" }, { type: "tool_use" }],
      });
      expect(checkProviderMessages("anthropic", request.messages, { thinking: true })).toBeNull();
    });

    it.each([
      [
        "another provider",
        redacted("R", { provider: "kimi", model: MODEL }),
        { thinking: true },
        "other_provider",
      ],
      [
        "another model",
        redacted("R", { ...origin, model: "claude-other" }),
        { thinking: true },
        "other_model",
      ],
      ["no data", redacted("", origin), { thinking: true }, "no_signature"],
      ["a request with thinking off", redacted("R", origin), { thinking: false }, "thinking_disabled"],
    ] as const)("Anthropic: drops a redacted block from %s", (_label, block, options, reason) => {
      const rendered = renderTranscript(history(user("go"), block, say("Hi.")), "anthropic", {
        ...options,
        model: MODEL,
      });
      expect(outline(rendered.messages)).toEqual(["user: go", "assistant: text Hi."]);
      expect(rendered.diagnostics.droppedThinking).toEqual([{ position: 1, reason }]);
    });

    it("Anthropic: drops the redacted block with the rest when thinking must be turned off", () => {
      const blocks = history(
        user("first"),
        redacted("OLD-DATA", origin),
        say("Answer."),
        user("second"),
        say("Calling."),
        call("c1"),
        result("c1", "ok"),
      );
      const request = renderProviderRequest(blocks, "anthropic", { thinking: true, model: MODEL });
      expect(request.thinking).toBe(false);
      expect(JSON.stringify(request.messages)).not.toContain("OLD-DATA");
      expect(request.diagnostics.droppedThinking).toEqual([{ position: -1, reason: "thinking_disabled" }]);
    });

    it.each([
      ["openai", true, "profile_drops_thinking"],
      ["mistral", true, "profile_drops_thinking"],
      ["kimi", true, "redacted"],
      ["kimi", false, "thinking_disabled"],
    ] as const)(
      "%s (thinking %s): never sends a redacted block, not as text nor as reasoning",
      (profile, thinking, reason) => {
        const request = renderProviderRequest(sealed, profile, { thinking, model: MODEL });
        const sent = JSON.stringify(request.messages);
        expect(sent).not.toContain("ENCRYPTED-DATA");
        expect(request.diagnostics.droppedThinking).toContainEqual({ position: 3, reason });
        const assistant = request.messages.find((message) => message.role === "assistant") as {
          content: unknown;
          reasoning_content?: string;
        };
        // Kimi reasons with the texts of the other blocks only, no empty part for the redacted one
        expect(assistant.reasoning_content).toBe(profile === "kimi" && thinking ? "one\n\ntwo" : undefined);
        expect(checkProviderMessages(profile, request.messages, { thinking: request.thinking })).toBeNull();
      },
    );

    it("counts a redacted block's data in the budget estimate", () => {
      const data = "x".repeat(40);
      expect(
        estimateMessageTokens({ role: "assistant", content: [{ type: "redacted_thinking", data }] }),
      ).toBe(10);
    });
  });

  it.each(["openai", "mistral"] as const)("%s: drops thinking", (profile) => {
    const request = renderProviderRequest(turn(signed("pondering")), profile, { thinking: true });
    expect(JSON.stringify(request.messages)).not.toContain("pondering");
    expect(request.diagnostics.droppedThinking).toEqual([{ position: 1, reason: "profile_drops_thinking" }]);
  });
});

describe("ids", () => {
  it("Kimi: numbers calls over the whole transcript even when the provider reused functions.read_file:0", () => {
    const blocks = history(
      user("one"),
      call("c1", "read_file", { providerCallId: "functions.read_file:0" }),
      result("c1", "a", "complete", "read_file"),
      user("two"),
      call("c2", "read_file", { providerCallId: "functions.read_file:0" }),
      result("c2", "b", "complete", "read_file"),
    );
    const request = renderProviderRequest(blocks, "kimi");
    expect(request.messages).toEqual([
      { role: "user", content: "one" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "functions.read_file:0",
            type: "function",
            function: { name: "read_file", arguments: '{"text":"c1"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "functions.read_file:0", content: "a", name: "read_file" },
      { role: "user", content: "two" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "functions.read_file:1",
            type: "function",
            function: { name: "read_file", arguments: '{"text":"c2"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "functions.read_file:1", content: "b", name: "read_file" },
    ]);
    expect(request.ids.toCanonical.get("functions.read_file:1")).toBe("c2");
  });

  // Changed on purpose: Anthropic accepts any id of [a-zA-Z0-9_-], so the server's id is no longer replaced.
  it("keeps the server's call_… ids for OpenAI and Anthropic, which accept them, and projects them for Mistral", () => {
    const blocks = history(user("go"), call("call_Ab12Cd34Ef56Gh78"), result("call_Ab12Cd34Ef56Gh78", "ok"));
    expect(renderTranscript(blocks, "openai").ids.toProjected.get("call_Ab12Cd34Ef56Gh78")).toBe(
      "call_Ab12Cd34Ef56Gh78",
    );
    expect(renderTranscript(blocks, "anthropic").ids.toProjected.get("call_Ab12Cd34Ef56Gh78")).toBe(
      "call_Ab12Cd34Ef56Gh78",
    );
    expect(renderTranscript(blocks, "mistral").ids.toProjected.get("call_Ab12Cd34Ef56Gh78")).toMatch(
      /^[A-Za-z0-9]{9}$/,
    );
  });

  it("keeps the provider's own ids when the history goes back to that provider", () => {
    const blocks = history(
      user("go"),
      call("call_server1", "echo", { providerCallId: "toolu_01A09q90qw90lq917835lq9" }),
      result("call_server1", "ok"),
      call("call_server2", "echo", { providerCallId: "call_abc123" }),
      result("call_server2", "ok"),
    );
    const anthropic = renderProviderRequest(blocks, "anthropic");
    expect(anthropic.ids.toProjected.get("call_server1")).toBe("toolu_01A09q90qw90lq917835lq9");
    expect(anthropic.ids.toProjected.get("call_server2")).toBe("call_abc123");
    expect(anthropic.counts).toMatchObject({ keptIds: 2, generatedIds: 0 });
    const openai = renderProviderRequest(blocks, "openai");
    expect(openai.ids.toProjected.get("call_server2")).toBe("call_abc123");
  });
});

describe("text, names and inputs", () => {
  it("drops blank text and merges consecutive user messages", () => {
    const rendered = renderTranscript(
      history(user("hello"), user("  \n"), user("again"), say(" "), say("Hi.")),
      "anthropic",
    );
    expect(outline(rendered.messages)).toEqual(["user: hello\n\nagain", "assistant: text Hi."]);
    expect(rendered.diagnostics.droppedText).toEqual([
      { position: 1, role: "user", reason: "empty" },
      { position: 3, role: "assistant", reason: "empty" },
    ]);
  });

  it("renders an empty result as a placeholder", () => {
    const rendered = renderTranscript(history(user("go"), call("c1"), result("c1", "  ")), "anthropic");
    expect(outline(rendered.messages)[2]).toBe(`results: c1=${EMPTY_RESULT_TEXT}`);
    expect(rendered.diagnostics.emptyResults).toEqual([{ callId: "c1" }]);
  });

  it("sanitizes tool names the provider would reject, in the call and in its result", () => {
    const request = renderProviderRequest(
      history(user("go"), call("c1", "web.fetch page"), result("c1", "ok")),
      "mistral",
    );
    expect(JSON.stringify(request.messages)).toContain('"name":"web_fetch_page"');
    expect(request.messages[2]).toMatchObject({ role: "tool", name: "web_fetch_page" });
    expect(request.diagnostics.renamedTools).toEqual([
      { callId: "c1", from: "web.fetch page", to: "web_fetch_page" },
    ]);
  });

  it("wraps an input that is not an object", () => {
    const blocks = history(user("go"), call("c1"), result("c1", "ok"));
    (blocks[1] as { input: unknown }).input = ["a", "b"];
    const rendered = renderTranscript(blocks, "anthropic");
    const assistant = rendered.messages[1];
    expect(assistant?.role === "assistant" && assistant.content[0]).toMatchObject({
      input: { value: ["a", "b"] },
    });
    expect(rendered.diagnostics.coercedInputs).toEqual([{ callId: "c1", reason: "not_an_object" }]);
  });

  it("sends every string well-formed: each lone surrogate (half of a character) becomes U+FFFD", () => {
    const half = "half \ud83d";
    const blocks = history(
      user(`look: ${half}`),
      think(`thinking about ${half}`),
      say(`calling ${half}`),
      call("c1", "echo", { input: { text: half, nested: [{ [`key \udc00`]: half }] } }),
      result("c1", `got ${half}`),
      say(`said ${half}`),
    );
    const strings = (value: unknown): string[] =>
      typeof value === "string"
        ? [value]
        : typeof value === "object" && value !== null
          ? Object.entries(value).flatMap(([key, item]) => [key, ...strings(item)])
          : [];
    for (const profile of ["anthropic", "openai", "kimi", "mistral"] as const) {
      const request = renderProviderRequest(blocks, profile, { thinking: true, system: `rules ${half}` });
      const sent = strings({ messages: request.messages, system: "system" in request ? request.system : "" });
      expect(
        sent.filter((text) => !text.isWellFormed()),
        profile,
      ).toEqual([]);
      expect(JSON.stringify(request.messages).split("half \uFFFD").length, profile).toBeGreaterThanOrEqual(4);
      expect(request.diagnostics.coercedInputs, profile).toEqual([
        { callId: "c1", reason: "not_well_formed" },
      ]);
    }
    // the history itself keeps what it was given
    expect((blocks[3] as unknown as { input: { text: string } }).input.text).toBe(half);
  });

  it("sends a well-formed call input as it is, not a copy", () => {
    const input = { text: "a whole 😀 and a backslash \\ud83d" };
    const blocks = history(user("go"), call("c1", "echo", { input }), result("c1", "ok"));
    const rendered = renderTranscript(blocks, "anthropic");
    const assistant = rendered.messages[1];
    expect(assistant?.role === "assistant" && assistant.content[0]).toMatchObject({ type: "tool_call" });
    expect(assistant?.role === "assistant" && (assistant.content[0] as { input: unknown }).input).toBe(input);
    expect(rendered.diagnostics.coercedInputs).toEqual([]);
  });
});

describe("Mistral message order", () => {
  it("moves text beside tool calls into its own assistant message before them", () => {
    const request = renderProviderRequest(
      history(user("go"), say("Checking."), call("c1"), result("c1", "ok")),
      "mistral",
    );
    expect(request.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "assistant",
      "tool",
    ]);
    expect(request.messages[1]).toEqual({ role: "assistant", content: "Checking." });
    expect(request.messages[2]).toMatchObject({ role: "assistant", content: null });
  });

  it("bridges tool results and a following user message, and never ends on the assistant", () => {
    const request = renderProviderRequest(
      history(user("go"), call("c1"), result("c1", "[CANCELLED] x", "cancelled"), user("next"), say("Sure.")),
      "mistral",
    );
    expect(request.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
      "assistant",
      "user",
    ]);
    expect(request.messages[3]).toEqual({ role: "assistant", content: NO_REPLY_BRIDGE_TEXT });
    expect(request.messages[6]).toEqual({ role: "user", content: CONTINUE_TEXT });
    expect(rejectionMessage(checkProviderMessages("mistral", request.messages))).toBeNull();
  });
});

describe("context budget", () => {
  // Estimated tokens: turn one ≈ 225 (a long text and a long result), turn two ≈ 105, turn three ≈ 25.
  const long = "x".repeat(400);
  const blocks = history(
    user(`one ${long}`),
    call("c1"),
    result("c1", long),
    say("first answer"),
    user(`two ${long}`),
    say("second answer"),
    user("three"),
    call("c3"),
    result("c3", "ok"),
  );

  it("drops whole older turns behind one summary line and keeps the newest turn", () => {
    const rendered = renderTranscript(blocks, "anthropic", { budgetTokens: 100 });
    expect(outline(rendered.messages)).toEqual([
      "user: [Earlier conversation omitted: 2 turns, 1 tool call]\n\nthree",
      "assistant: call c3",
      "results: c3=ok",
    ]);
    expect(rendered.diagnostics.budget).toMatchObject({
      budgetTokens: 100,
      droppedTurns: 2,
      droppedMessages: 6,
      droppedToolCalls: 1,
      droppedCallIds: ["c1"],
      overBudget: false,
    });
    expect(rendered.diagnostics.budget.estimatedTokens).toBeGreaterThan(300);
  });

  it("drops only as many turns as needed", () => {
    const rendered = renderTranscript(blocks, "anthropic", { budgetTokens: 260 });
    expect(rendered.diagnostics.budget.droppedTurns).toBe(1);
    expect(outline(rendered.messages)[0]).toBe(
      `user: [Earlier conversation omitted: 1 turn, 1 tool call]\n\ntwo ${long}`,
    );
  });

  it("keeps the newest turn even when it alone is over budget", () => {
    const rendered = renderTranscript(blocks, "openai", { budgetTokens: 1 });
    expect(outline(rendered.messages).slice(1)).toEqual(["assistant: call c3", "results: c3=ok"]);
    expect(rendered.diagnostics.budget.overBudget).toBe(true);
  });

  it("uses the profile's budget by default", () => {
    const small = getProfile("openai", { contextBudgetTokens: 100 });
    expect(renderTranscript(blocks, small).diagnostics.budget.droppedTurns).toBe(2);
    expect(renderTranscript(blocks, "openai").diagnostics.budget.droppedTurns).toBe(0);
  });

  it("gives the transcript what the agent's instructions leave of the budget", () => {
    // 600 characters: 150 estimated tokens, so 110 of 260 are left, where one dropped turn no longer fits
    const system = "y".repeat(600);
    for (const profile of ["anthropic", "openai"] as const) {
      const request = renderProviderRequest(blocks, profile, { budgetTokens: 260, system });
      const { budget } = request.diagnostics;
      expect(budget).toMatchObject({ budgetTokens: 260, instructionTokens: 150, droppedTurns: 2 });
      expect(budget.renderedTokens + budget.instructionTokens).toBeLessThanOrEqual(260);
      expect(budget.overBudget).toBe(false);
      expect(renderProviderRequest(blocks, profile, { budgetTokens: 260 }).diagnostics.budget).toMatchObject({
        instructionTokens: 0,
        droppedTurns: 1,
      });
    }
    // the transcript alone is cut the same way
    expect(
      renderTranscript(blocks, "openai", { budgetTokens: 260, system }).diagnostics.budget.droppedTurns,
    ).toBe(2);
  });

  it("keeps the newest turn, over budget, when the instructions alone exceed the budget", () => {
    const request = renderProviderRequest(blocks, "mistral", {
      budgetTokens: 260,
      system: "z".repeat(2_000),
    });
    expect(request.diagnostics.budget).toMatchObject({
      instructionTokens: 500,
      droppedTurns: 2,
      overBudget: true,
    });
    expect(request.messages[0]).toEqual({ role: "system", content: "z".repeat(2_000) });
    expect(request.messages.at(-1)).toMatchObject({ role: "tool", content: "ok" });
    // even with no transcript at all
    const empty = renderProviderRequest([], "openai", { budgetTokens: 10, system: "z".repeat(400) });
    expect(empty.diagnostics.budget).toMatchObject({
      instructionTokens: 100,
      renderedTokens: 0,
      overBudget: true,
    });
  });
});

describe("adapters", () => {
  const blocks = history(
    user("go"),
    say("Two things."),
    call("c1"),
    call("c2"),
    result("c1", "fine"),
    result("c2", "broke", "error"),
    user("and now?"),
  );

  it("Anthropic: results first in one user message, the next user text merged after them", () => {
    const rendered = renderTranscript(blocks, "anthropic");
    const [id1, id2] = [rendered.ids.toProjected.get("c1"), rendered.ids.toProjected.get("c2")];
    expect(toAnthropicRequestMessages(rendered.messages)).toEqual([
      { role: "user", content: [{ type: "text", text: "go" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Two things." },
          { type: "tool_use", id: id1, name: "echo", input: { text: "c1" } },
          { type: "tool_use", id: id2, name: "echo", input: { text: "c2" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: id1, content: "fine" },
          { type: "tool_result", tool_use_id: id2, content: "broke", is_error: true },
          { type: "text", text: "and now?" },
        ],
      },
    ]);
  });

  it("OpenAI: text beside tool_calls, one tool message per result, no name", () => {
    const rendered = renderTranscript(blocks, "openai");
    const [id1, id2] = [rendered.ids.toProjected.get("c1"), rendered.ids.toProjected.get("c2")];
    expect(toOpenAIChatMessages(rendered.messages, getProfile("openai"))).toEqual([
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: "Two things.",
        tool_calls: [
          { id: id1, type: "function", function: { name: "echo", arguments: '{"text":"c1"}' } },
          { id: id2, type: "function", function: { name: "echo", arguments: '{"text":"c2"}' } },
        ],
      },
      { role: "tool", tool_call_id: id1, content: "fine" },
      { role: "tool", tool_call_id: id2, content: "broke" },
      { role: "user", content: "and now?" },
    ]);
  });
});

describe("the agent's instructions (options.system)", () => {
  const INSTRUCTIONS = "Answer in one word.";
  const blocks = history(user("go"), say("Checking."), call("c1"), result("c1", "fine"), user("and?"));

  it.each(["openai", "kimi", "mistral"] as const)(
    "%s: lead the request as a system message, before the very messages a request without them has",
    (profile) => {
      const plain = renderProviderRequest(blocks, profile, { model: MODEL });
      const request = renderProviderRequest(blocks, profile, { model: MODEL, system: INSTRUCTIONS });
      expect(request.messages).toEqual([{ role: "system", content: INSTRUCTIONS }, ...plain.messages]);
      expect("system" in request).toBe(false);
      // the diagnostics are the transcript's: only the budget notes what the instructions took of it
      const { budget, ...rest } = request.diagnostics;
      const { budget: plainBudget, ...plainRest } = plain.diagnostics;
      expect(rest).toEqual(plainRest);
      expect(budget).toEqual({ ...plainBudget, instructionTokens: Math.ceil(INSTRUCTIONS.length / 4) });
      expect(checkProviderMessages(profile, request.messages, { thinking: request.thinking })).toBeNull();
    },
  );

  it("Anthropic: go in `system`, the messages as without them, also when thinking has to be turned off", () => {
    const plain = renderProviderRequest(blocks, "anthropic", { model: MODEL });
    const request = renderProviderRequest(blocks, "anthropic", { model: MODEL, system: INSTRUCTIONS });
    expect(request.format === "anthropic-messages" && request.system).toBe(INSTRUCTIONS);
    expect(request.messages).toEqual(plain.messages);
    const settled = renderProviderRequest(answeredWithoutSignedThinking(), "anthropic", {
      thinking: true,
      model: MODEL,
      system: INSTRUCTIONS,
    });
    expect(settled.thinking).toBe(false);
    expect(settled.format === "anthropic-messages" && settled.system).toBe(INSTRUCTIONS);
    expect(settled.messages).toEqual(
      renderProviderRequest(answeredWithoutSignedThinking(), "anthropic", { thinking: true, model: MODEL })
        .messages,
    );
  });

  it("make the whole request of an empty history in the OpenAI formats", () => {
    expect(renderProviderRequest([], "mistral", { system: INSTRUCTIONS }).messages).toEqual([
      { role: "system", content: INSTRUCTIONS },
    ]);
    const anthropic = renderProviderRequest([], "anthropic", { system: INSTRUCTIONS });
    expect(anthropic.messages).toEqual([]);
    expect(anthropic.format === "anthropic-messages" && anthropic.system).toBe(INSTRUCTIONS);
  });

  it("empty instructions add nothing", () => {
    expect(renderProviderRequest(blocks, "openai", { system: "" }).messages).toEqual(
      renderProviderRequest(blocks, "openai").messages,
    );
    expect("system" in renderProviderRequest(blocks, "anthropic", { system: "" })).toBe(false);
  });

  it("are never kept by a TranscriptCache: the next render of the grown session has only its own", () => {
    const cache = new TranscriptCache();
    const first = cache.renderProviderRequest("ses_1", blocks, "openai", { system: INSTRUCTIONS });
    const firstMessages = structuredClone(first.messages);
    const grown = [
      ...blocks,
      ...history(say("Sure."), user("more?")).map((block, index) => ({
        ...block,
        position: blocks.length + index,
      })),
    ];
    const second = cache.renderProviderRequest("ses_1", grown, "openai", {});
    const third = cache.renderProviderRequest("ses_1", grown, "openai", { system: "Be brief." });
    expect(cache.stats).toMatchObject({ hits: 2, misses: 1, fallbacks: 0 });
    expect(second.messages).toEqual(renderProviderRequest(grown, "openai").messages);
    expect(second.messages.some((message) => message.role === "system")).toBe(false);
    expect(third.messages).toEqual([{ role: "system", content: "Be brief." }, ...second.messages]);
    // a request shares nothing later renders change
    expect(first.messages).toEqual(firstMessages);
  });
});
