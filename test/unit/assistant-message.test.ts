/**
 * One inference's assistant message from the model's events (src/turns/assistant-message.ts): thinking
 * kept block by block as the provider made it — a signature ends its block, a redacted block keeps its
 * place — unsigned thinking merged, and the calls after the content.
 */
import { describe, expect, it } from "vitest";
import { AssistantMessage } from "../../src/turns/assistant-message.js";

const origin = { provider: "anthropic", model: "claude-test" };
const call = {
  kind: "tool_call" as const,
  role: "assistant" as const,
  callId: "call_1",
  name: "echo",
  input: {},
};

describe("AssistantMessage", () => {
  it("keeps two signed blocks and a redacted one as three blocks, in stream order, before the calls", () => {
    const message = new AssistantMessage(origin);
    message.addThinking("o");
    message.addThinking("ne");
    message.sign("S-one");
    message.addThinking("two");
    message.sign("S-two");
    message.addRedacted("ENCRYPTED-DATA");
    message.addCall(call);
    const { blocks, calls } = message.finish();
    expect(blocks).toStrictEqual([
      { kind: "thinking", role: "assistant", text: "one", signature: "S-one", ...origin },
      { kind: "thinking", role: "assistant", text: "two", signature: "S-two", ...origin },
      { kind: "thinking", role: "assistant", text: "", redacted: "ENCRYPTED-DATA", ...origin },
      call,
    ]);
    expect(calls).toStrictEqual([call]);
  });

  it("ends unsigned thinking at text or a redacted block, and merges it until then", () => {
    const message = new AssistantMessage({ provider: "kimi", model: "k2" });
    message.addThinking("let me ");
    message.addThinking("see");
    message.addText("Looking.");
    message.addThinking("more");
    message.addRedacted("R");
    expect(
      message.finish().blocks.map((block) => (block.kind === "thinking" ? block.text || "·" : block.kind)),
    ).toEqual(["let me see", "text", "more", "·"]);
  });

  it("signs an empty block when a signature comes with no thinking text", () => {
    const message = new AssistantMessage(origin);
    message.sign("S-empty");
    message.addText("Hi.");
    expect(message.finish().blocks).toStrictEqual([
      { kind: "thinking", role: "assistant", text: "", signature: "S-empty", ...origin },
      { kind: "text", role: "assistant", text: "Hi." },
    ]);
  });
});
