/**
 * The provider rule checks (test/support/provider-rules.ts): each rule of docs/providers.md rejects a
 * minimal request that breaks it with the provider's status, body shape and message, and valid
 * requests pass. The fake provider servers and the renderer's property tests rely on these.
 */
import { describe, expect, it } from "vitest";
import {
  checkAnthropicMessages,
  checkKimiMessages,
  checkMistralMessages,
  checkOpenAIMessages,
  rejectionMessage,
  type AnthropicCheckOptions,
} from "../support/provider-rules.js";

// ---------------------------------------------------------------------------------------------------
// Anthropic

const text = (value: string) => ({ type: "text", text: value });
const toolUse = (id: string, name = "echo", input: unknown = {}) => ({ type: "tool_use", id, name, input });
const toolResult = (id: string, extra: Record<string, unknown> = {}) => ({
  type: "tool_result",
  tool_use_id: id,
  content: "ok",
  ...extra,
});
const thinking = (signature = "sig") => ({ type: "thinking", thinking: "hmm", signature });
const anthropicUser = (...content: unknown[]) => ({ role: "user", content });
const anthropicAssistant = (...content: unknown[]) => ({ role: "assistant", content });

const signedThinking = (value: string, signature: string) => ({
  type: "thinking" as const,
  thinking: value,
  signature,
});
const redactedThinking = (data: string) => ({ type: "redacted_thinking" as const, data });
/** The thinking a provider streamed in the response that made toolu_1. */
const ISSUED = [
  signedThinking("one", "S-one"),
  signedThinking("two", "S-two"),
  redactedThinking("ENCRYPTED-DATA"),
];
const signs = (signature: string, value: string) =>
  ISSUED.some(
    (block) => block.type === "thinking" && block.signature === signature && block.thinking === value,
  );
const issuedOptions: AnthropicCheckOptions = {
  thinking: true,
  acceptSignature: signs,
  issuedThinking: (id) => (id === "toolu_1" ? ISSUED : undefined),
};
const answering = (...thoughts: unknown[]) => [
  anthropicUser(text("go")),
  anthropicAssistant(...thoughts, toolUse("toolu_1")),
  anthropicUser(toolResult("toolu_1")),
];

/** The latest assistant message's thinking merged, reordered or cut short: where each goes wrong. */
function latestThinkingCases(): [string, unknown[], string, AnthropicCheckOptions][] {
  const [one, two, sealed] = ISSUED;
  const modified = (j: number) =>
    `messages.1.content.${j}: \`thinking\` or \`redacted_thinking\` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.`;
  return [
    [
      "10: the latest message's thinking blocks reordered",
      answering(two, one, sealed),
      modified(0),
      issuedOptions,
    ],
    ["10: the latest message's redacted block missing", answering(one, two), modified(2), issuedOptions],
    [
      "10: the latest message's thinking blocks merged",
      answering(signedThinking("onetwo", "S-two"), sealed),
      modified(0),
      issuedOptions,
    ],
  ];
}

describe("Anthropic rules", () => {
  it("accepts the latest message's thinking exactly as the provider streamed it, and older thinking that was dropped", () => {
    expect(checkAnthropicMessages(answering(...ISSUED), issuedOptions)).toBeNull();
    const older = [...answering(...ISSUED), anthropicAssistant(text("done")), anthropicUser(text("more"))];
    expect(checkAnthropicMessages(older, issuedOptions)).toBeNull();
    const olderWithoutThinking = [
      ...answering(),
      anthropicAssistant(text("done")),
      anthropicUser(text("more")),
    ];
    expect(checkAnthropicMessages(olderWithoutThinking, { ...issuedOptions, thinking: false })).toBeNull();
  });

  it("accepts a valid tool round trip, with thinking on and off", () => {
    const messages = [
      anthropicUser(text("go")),
      anthropicAssistant(thinking(), text("Looking."), toolUse("toolu_1"), toolUse("toolu_2")),
      anthropicUser(toolResult("toolu_1"), toolResult("toolu_2", { is_error: true }), text("and?")),
    ];
    expect(checkAnthropicMessages(messages, { thinking: true })).toBeNull();
    const withoutThinking = [
      messages[0],
      anthropicAssistant(toolUse("toolu_1")),
      anthropicUser(toolResult("toolu_1")),
    ];
    expect(checkAnthropicMessages(withoutThinking)).toBeNull();
    expect(checkAnthropicMessages(withoutThinking, { definesTools: true })).toBeNull();
  });

  it("accepts a request that defines no tools when its messages hold no tool_use or tool_result", () => {
    const messages = [anthropicUser(text("go")), anthropicAssistant(text("hi")), anthropicUser(text("more"))];
    expect(checkAnthropicMessages(messages, { definesTools: false })).toBeNull();
  });

  it("answers with HTTP 400 and Anthropic's error body", () => {
    expect(checkAnthropicMessages([anthropicUser(text(" "))])).toEqual({
      status: 400,
      body: {
        type: "error",
        error: {
          type: "invalid_request_error",
          message: "messages: text content blocks must contain non-whitespace text",
        },
      },
    });
  });

  it.each<[string, unknown[], string, AnthropicCheckOptions?]>([
    [
      "1: a tool_use without a tool_result in the next message",
      [
        anthropicUser(text("go")),
        anthropicAssistant(toolUse("toolu_1"), toolUse("toolu_2")),
        anthropicUser(text("?")),
      ],
      "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1, toolu_2. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    ],
    [
      "2: text before the tool_result blocks",
      [
        anthropicUser(text("go")),
        anthropicAssistant(toolUse("toolu_1")),
        anthropicUser(text("first"), toolResult("toolu_1")),
      ],
      "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.",
    ],
    [
      "3: a tool_result for no tool_use of the previous message",
      [anthropicUser(text("go")), anthropicAssistant(text("hi")), anthropicUser(toolResult("toolu_9"))],
      "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
    ],
    [
      "4: a tool_use id used twice in the request",
      [
        anthropicUser(text("go")),
        anthropicAssistant(toolUse("toolu_1")),
        anthropicUser(toolResult("toolu_1")),
        anthropicAssistant(toolUse("toolu_1")),
        anthropicUser(toolResult("toolu_1")),
      ],
      "messages.3.content.0: `tool_use` ids must be unique",
    ],
    [
      "5: two results for one tool_use",
      [
        anthropicUser(text("go")),
        anthropicAssistant(toolUse("toolu_1")),
        anthropicUser(toolResult("toolu_1"), toolResult("toolu_1")),
      ],
      "messages.2.content.1: each tool_use must have a single result. Found multiple `tool_result` blocks with id: toolu_1",
    ],
    [
      "6: results of one assistant message split over two user messages",
      [
        anthropicUser(text("go")),
        anthropicAssistant(toolUse("toolu_1"), toolUse("toolu_2")),
        anthropicUser(toolResult("toolu_1")),
        anthropicAssistant(text("hm")),
        anthropicUser(toolResult("toolu_2")),
      ],
      "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_2. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
    ],
    [
      "7: a tool_use id outside ^[a-zA-Z0-9_-]+$",
      [anthropicUser(text("go")), anthropicAssistant(toolUse("call.1")), anthropicUser(toolResult("call.1"))],
      "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
    ],
    [
      "7: a tool_result id outside the pattern",
      [anthropicUser(toolResult("bad id"))],
      "messages.0.content.0.tool_result.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'",
    ],
    [
      "7: a tool name outside ^[a-zA-Z0-9_-]{1,64}$",
      [
        anthropicUser(text("go")),
        anthropicAssistant(toolUse("toolu_1", "web.fetch")),
        anthropicUser(toolResult("toolu_1")),
      ],
      "messages.1.content.0.tool_use.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
    ],
    [
      "7: an input that is not an object",
      [
        anthropicUser(text("go")),
        anthropicAssistant(toolUse("toolu_1", "echo", [1])),
        anthropicUser(toolResult("toolu_1")),
      ],
      "messages.1.content.0.tool_use.input: Input should be a valid dictionary",
    ],
    [
      "8: an empty message that is not the final assistant message",
      [anthropicUser(), anthropicAssistant(text("hi"))],
      "messages.0: all messages must have non-empty content except for the optional final assistant message",
    ],
    [
      "8: an empty string content",
      [{ role: "user", content: "" }],
      "messages.0: all messages must have non-empty content except for the optional final assistant message",
    ],
    [
      "8: a whitespace-only text block",
      [anthropicUser(text("  \n"))],
      "messages: text content blocks must contain non-whitespace text",
    ],
    [
      "8: a whitespace-only tool_result",
      [
        anthropicUser(text("go")),
        anthropicAssistant(toolUse("toolu_1")),
        anthropicUser(toolResult("toolu_1", { content: " " })),
      ],
      "messages: text content blocks must contain non-whitespace text",
    ],
    [
      "8: an is_error result with non-text content",
      [
        anthropicUser(text("go")),
        anthropicAssistant(toolUse("toolu_1")),
        anthropicUser(
          toolResult("toolu_1", {
            is_error: true,
            content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "AA==" } }],
          }),
        ),
      ],
      "messages.2.content.0: a `tool_result` block with `is_error` set may only contain text content",
    ],
    [
      "9: two user messages in a row",
      [anthropicUser(text("a")), anthropicUser(text("b"))],
      'messages: roles must alternate between "user" and "assistant", but found multiple "user" roles in a row',
    ],
    [
      "10: thinking on, and the answered assistant message does not start with thinking",
      [
        anthropicUser(text("go")),
        anthropicAssistant(text("hm"), toolUse("toolu_1")),
        anthropicUser(toolResult("toolu_1")),
      ],
      "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
      { thinking: true },
    ],
    [
      "10: a signature from another provider or model",
      [anthropicUser(text("go")), anthropicAssistant(thinking("sig:kimi"), text("hi"))],
      "messages.1.content.0: Invalid `signature` in `thinking` block",
      { thinking: true, acceptSignature: (signature) => signature.startsWith("sig:anthropic") },
    ],
    [
      "10: thinking off, and the final assistant message contains thinking",
      [anthropicUser(text("go")), anthropicAssistant(thinking(), text("hi"))],
      "messages.1.content.0: When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your request.",
    ],
    [
      "10: thinking after other content",
      [anthropicUser(text("go")), anthropicAssistant(text("hi"), thinking(), text("more"))],
      "messages.1.content.0: If an assistant message contains any thinking blocks, the first block must be thinking or redacted_thinking. Found text.",
      { thinking: true },
    ],
    [
      "10: thinking as the last block",
      [anthropicUser(text("go")), anthropicAssistant(thinking())],
      "messages.1: The final block in an assistant message cannot be `thinking`.",
      { thinking: true },
    ],
    [
      "10: a thinking block whose text is not the text its signature signs",
      [anthropicUser(text("go")), anthropicAssistant(signedThinking("onetwo", "S-two"), text("hi"))],
      "messages.1.content.0: Invalid `signature` in `thinking` block",
      { thinking: true, acceptSignature: signs },
    ],
    [
      "10: a redacted block whose data the provider never issued",
      [anthropicUser(text("go")), anthropicAssistant(redactedThinking("FORGED"), text("hi"))],
      "messages.1.content.0: Invalid `data` in `redacted_thinking` block",
      { thinking: true, acceptRedacted: (data) => data === "ENCRYPTED-DATA" },
    ],
    ...latestThinkingCases(),
    [
      "tools: tool_use and tool_result blocks in a request that defines no tools",
      [
        anthropicUser(text("go")),
        anthropicAssistant(toolUse("toolu_1")),
        anthropicUser(toolResult("toolu_1")),
      ],
      "Requests which include `tool_use` or `tool_result` blocks must define tools.",
      { definesTools: false },
    ],
  ])("rule %s", (_rule, messages, message, options) => {
    const rejection = checkAnthropicMessages(messages, options);
    expect(rejection?.status).toBe(400);
    expect(rejectionMessage(rejection)).toBe(message);
  });
});

// ---------------------------------------------------------------------------------------------------
// OpenAI and Kimi

const chatCall = (id: string, name = "echo") => ({
  id,
  type: "function",
  function: { name, arguments: "{}" },
});
const chatAssistant = (calls: unknown[] | undefined, content: string | null = null, extra: object = {}) => ({
  role: "assistant",
  content,
  ...(calls === undefined ? {} : { tool_calls: calls }),
  ...extra,
});
const chatTool = (id: string | undefined, extra: object = {}) => ({
  role: "tool",
  content: "ok",
  ...(id === undefined ? {} : { tool_call_id: id }),
  ...extra,
});
const chatUser = (content = "go") => ({ role: "user", content });

describe("OpenAI rules", () => {
  it("accepts a valid tool round trip", () => {
    expect(
      checkOpenAIMessages([
        chatUser(),
        chatAssistant([chatCall("call_1"), chatCall("call_2")]),
        chatTool("call_2"),
        chatTool("call_1"),
        chatUser(),
      ]),
    ).toBeNull();
  });

  it("answers with HTTP 400 and OpenAI's error body", () => {
    expect(checkOpenAIMessages([chatUser(), chatAssistant([chatCall("call_1")]), chatUser()])).toEqual({
      status: 400,
      body: {
        error: {
          message:
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
          type: "invalid_request_error",
          param: "messages.[2].role",
          code: null,
        },
      },
    });
  });

  it.each<[string, unknown[], string]>([
    [
      "1: a call not answered by the tool messages right after it",
      [
        chatUser(),
        chatAssistant([chatCall("call_1"), chatCall("call_2")]),
        chatTool("call_1"),
        chatUser(),
        chatTool("call_2"),
      ],
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_2",
    ],
    [
      "2: a tool message after no tool_calls",
      [chatUser(), chatAssistant(undefined, "hi"), chatTool("call_1")],
      "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
    ],
    [
      "2: a tool message answering an id the assistant did not call",
      [chatUser(), chatAssistant([chatCall("call_1")]), chatTool("call_1"), chatTool("call_9")],
      "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
    ],
    [
      "3: a tool message without tool_call_id",
      [chatUser(), chatAssistant([chatCall("call_1")]), chatTool(undefined)],
      "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
    ],
    [
      "4: two answers for one call",
      [chatUser(), chatAssistant([chatCall("call_1")]), chatTool("call_1"), chatTool("call_1")],
      "Invalid parameter: Duplicate value for 'tool_call_id' of 'call_1', in messages[2] and messages[3].",
    ],
    [
      "5: an empty tool_calls array",
      [chatUser(), chatAssistant([], "hi")],
      "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.",
    ],
    [
      "6: an id over 40 characters",
      [chatUser(), chatAssistant([chatCall("call_1"), chatCall(`call_${"x".repeat(36)}`)])],
      "Invalid 'messages[1].tool_calls[1].id': string too long. Expected a string with maximum length 40, but got a string with length 41 instead.",
    ],
    [
      "7: an empty function name",
      [chatUser(), chatAssistant([chatCall("call_1", "")]), chatTool("call_1")],
      "Invalid 'messages[1].tool_calls[0].function.name': empty string. Expected a string with minimum length 1, but got an empty string instead.",
    ],
    [
      "7: content null without tool_calls",
      [chatUser(), chatAssistant(undefined, null)],
      "Invalid value for 'content': expected a string, got null.",
    ],
  ])("rule %s", (_rule, messages, message) => {
    const rejection = checkOpenAIMessages(messages);
    expect(rejection?.status).toBe(400);
    expect(rejectionMessage(rejection)).toBe(message);
  });
});

describe("Kimi rules", () => {
  const valid = [
    chatUser(),
    chatAssistant([chatCall("functions.read_file:0", "read_file")], null, { reasoning_content: "why" }),
    chatTool("functions.read_file:0", { name: "read_file" }),
  ];

  it("accepts a valid tool round trip with thinking, and an empty reasoning_content", () => {
    expect(checkKimiMessages(valid, { thinking: true })).toBeNull();
    const empty = [
      valid[0],
      chatAssistant([chatCall("functions.read_file:0", "read_file")], null, { reasoning_content: "" }),
      valid[2],
    ];
    expect(checkKimiMessages(empty, { thinking: true })).toBeNull();
  });

  it("accepts ids longer than OpenAI's 40 characters, as Kimi's own long tool names produce", () => {
    const name = "n".repeat(64);
    expect(
      checkKimiMessages([
        chatUser(),
        chatAssistant([chatCall(`functions.${name}:0`, name)]),
        chatTool(`functions.${name}:0`, { name }),
      ]),
    ).toBeNull();
  });

  it.each<[string, unknown[], string, boolean]>([
    [
      "thinking on and reasoning_content missing",
      [
        chatUser(),
        chatAssistant([chatCall("functions.read_file:0", "read_file")]),
        chatTool("functions.read_file:0", { name: "read_file" }),
      ],
      "thinking is enabled but reasoning_content is missing in assistant tool call message at index 1",
      true,
    ],
    [
      "OpenAI's rule 1, in Kimi's wording",
      [chatUser(), chatAssistant([chatCall("functions.read_file:0", "read_file")]), chatUser()],
      "an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: functions.read_file:0",
      false,
    ],
    [
      "an id in another provider's format",
      [
        chatUser(),
        chatAssistant([chatCall("call_abc", "read_file")]),
        chatTool("call_abc", { name: "read_file" }),
      ],
      "Invalid tool call id 'call_abc' in assistant message at index 1: expected 'functions.read_file:<index>'",
      false,
    ],
    [
      "a tool message without the function name",
      [
        chatUser(),
        chatAssistant([chatCall("functions.read_file:0", "read_file")]),
        chatTool("functions.read_file:0"),
      ],
      "tool message at index 2 must carry the name 'read_file' of the function it answers",
      false,
    ],
  ])("rejects %s", (_rule, messages, message, thinkingOn) => {
    const rejection = checkKimiMessages(messages, { thinking: thinkingOn });
    expect(rejection).toEqual({ status: 400, body: { error: { message, type: "invalid_request_error" } } });
  });
});

// ---------------------------------------------------------------------------------------------------
// Mistral

describe("Mistral rules", () => {
  it("accepts a valid tool round trip", () => {
    const messages = [
      chatUser(),
      chatAssistant(undefined, "Let me check."),
      chatAssistant([chatCall("abcDEF123"), chatCall("XYZ987abc")]),
      chatTool("XYZ987abc", { name: "echo" }),
      chatTool("abcDEF123", { name: "echo" }),
      chatAssistant(undefined, "Done."),
      chatUser("thanks"),
    ];
    expect(checkMistralMessages(messages)).toBeNull();
  });

  it("answers with HTTP 400 and Mistral's error body", () => {
    expect(
      checkMistralMessages([
        chatUser(),
        chatAssistant([chatCall("abcDEF123")]),
        chatTool("abcDEF123"),
        chatUser(),
      ]),
    ).toEqual({
      status: 400,
      body: {
        object: "error",
        message: "Unexpected role 'user' after role 'tool'",
        type: "invalid_request_message_order",
        param: null,
        code: "3230",
      },
    });
  });

  it.each<[string, unknown[], string]>([
    [
      "1: an id that is not 9 alphanumerics",
      [chatUser(), chatAssistant([chatCall("call_abc")]), chatTool("call_abc")],
      "Tool call id was call_abc but must be a-z, A-Z, 0-9, with a length of 9.",
    ],
    [
      "1: a tool result id that is not 9 alphanumerics",
      [chatUser(), chatAssistant([chatCall("abcDEF123")]), chatTool("abcDEF12")],
      "Tool call id was abcDEF12 but must be a-z, A-Z, 0-9, with a length of 9.",
    ],
    [
      "2: a user message after tool results",
      [chatUser(), chatAssistant([chatCall("abcDEF123")]), chatTool("abcDEF123"), chatUser()],
      "Unexpected role 'user' after role 'tool'",
    ],
    [
      "2: a system message after tool results",
      [
        chatUser(),
        chatAssistant([chatCall("abcDEF123")]),
        chatTool("abcDEF123"),
        { role: "system", content: "Be brief." },
        chatAssistant(undefined, "ok"),
        chatUser(),
      ],
      "Unexpected role 'system' after role 'tool'",
    ],
    [
      "2: a tool message after a user message",
      [chatUser(), chatTool("abcDEF123")],
      "Unexpected role 'tool' after role 'user'",
    ],
    [
      "3: a call not answered before the next assistant message",
      [
        chatUser(),
        chatAssistant([chatCall("abcDEF123"), chatCall("XYZ987abc")]),
        chatTool("abcDEF123"),
        chatAssistant(undefined, "hm"),
        chatUser(),
      ],
      "Not the same number of function calls and responses",
    ],
    [
      "3: a call not answered by the end",
      [chatUser(), chatAssistant([chatCall("abcDEF123")])],
      "Not the same number of function calls and responses",
    ],
    [
      "4: an id answered twice",
      [chatUser(), chatAssistant([chatCall("abcDEF123")]), chatTool("abcDEF123"), chatTool("abcDEF123")],
      "Duplicate tool call id abcDEF123 in tool results",
    ],
    [
      "4: an answer for an id that was not called",
      [chatUser(), chatAssistant([chatCall("abcDEF123")]), chatTool("XYZ987abc")],
      "Unexpected tool call id XYZ987abc in tool results",
    ],
    [
      "4: an id called twice in one message",
      [chatUser(), chatAssistant([chatCall("abcDEF123"), chatCall("abcDEF123")])],
      "Duplicate tool call id abcDEF123 in assistant message",
    ],
    [
      "4: an id called again in a later message",
      [
        chatUser(),
        chatAssistant([chatCall("abcDEF123")]),
        chatTool("abcDEF123"),
        chatAssistant([chatCall("abcDEF123")]),
        chatTool("abcDEF123"),
      ],
      "Duplicate tool call id abcDEF123 in the conversation",
    ],
    [
      "5: an assistant message last",
      [chatUser(), chatAssistant(undefined, "Hello.")],
      "Expected last role User or Tool (or Assistant with prefix True) for serving but got assistant",
    ],
    [
      "6: a function name outside [a-zA-Z0-9_-]{1,64}",
      [chatUser(), chatAssistant([chatCall("abcDEF123", "web.fetch")]), chatTool("abcDEF123")],
      "Function name was web.fetch but must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64.",
    ],
    [
      "text content beside tool_calls",
      [chatUser(), chatAssistant([chatCall("abcDEF123")], "Checking."), chatTool("abcDEF123")],
      "Assistant message must have either content or tool_calls, but not both.",
    ],
  ])("rule %s", (_rule, messages, message) => {
    const rejection = checkMistralMessages(messages);
    expect(rejection?.status).toBe(400);
    expect(rejectionMessage(rejection)).toBe(message);
  });

  it("accepts a final assistant message marked as a prefix", () => {
    expect(
      checkMistralMessages([chatUser(), chatAssistant(undefined, "Once upon", { prefix: true })]),
    ).toBeNull();
  });
});
