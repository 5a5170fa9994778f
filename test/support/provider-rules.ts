/**
 * What each provider's API enforces about a request's `messages` (docs/providers.md), as executable checks.
 * Each function returns the first violation as the provider's real HTTP status and error body — the
 * quoted strings of docs/providers.md with `{i}`/`{j}`/`{id}` filled in — or null when the request passes.
 * The renderer's tests use them, and the fake provider servers reject requests with exactly these.
 *
 * Where docs/providers.md states a rule without quoting an error, the message is the provider's real one
 * where it is publicly known (marked "known") or a message in the provider's style (marked "ours").
 * Inputs are `unknown`: a fake server feeds them whatever a client sent.
 */
import type { ProfileName } from "../../src/history/render/profiles.js";

export type ProviderRejection = { status: number; body: unknown };

const BAD_REQUEST = 400;
const ANTHROPIC_ID_PATTERN = /^[a-zA-Z0-9_-]+$/;
const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
const OPENAI_MAX_ID_LENGTH = 40;
const MISTRAL_ID_PATTERN = /^[a-zA-Z0-9]{9}$/;
const KIMI_ID_PATTERN = /^functions\.(.+):(0|[1-9][0-9]*)$/;

export type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
function isBlank(text: string): boolean {
  return text.trim().length === 0;
}
function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** The error message of a rejection, whatever the provider's body shape. */
export function rejectionMessage(rejection: ProviderRejection | null): string | null {
  if (rejection === null) return null;
  const body = rejection.body as Json;
  if (typeof body.message === "string") return body.message;
  const error = body.error as Json | undefined;
  return typeof error?.message === "string" ? error.message : null;
}

// ---------------------------------------------------------------------------------------------------
// Anthropic Messages

function anthropicError(message: string): ProviderRejection {
  return { status: BAD_REQUEST, body: { type: "error", error: { type: "invalid_request_error", message } } };
}

/**
 * Anthropic parses a request body as strict JSON text: a string holding a lone UTF-16 surrogate (which
 * JSON.stringify writes as an escape such as `\ud83d`) fails the whole request (known: "The request
 * body is not valid JSON: no low surrogate in string: line 1 column …"). Checked over the whole body,
 * keys too: messages, tools and `system` alike.
 */
export function checkAnthropicBodyText(body: unknown): ProviderRejection | null {
  if (!hasLoneSurrogate(body)) return null;
  // where JSON.stringify wrote the first one (it escapes lone surrogates, and nothing else, as \udxxx)
  const at = JSON.stringify(body).search(/\\u[dD][89a-fA-F]/);
  return anthropicError(
    `The request body is not valid JSON: no low surrogate in string: line 1 column ${at + 1} (char ${at})`,
  );
}

function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === "string") return !value.isWellFormed();
  if (Array.isArray(value)) return value.some(hasLoneSurrogate);
  if (!isObject(value)) return false;
  return Object.entries(value).some(([key, item]) => !key.isWellFormed() || hasLoneSurrogate(item));
}

export type AnthropicCheckOptions = {
  /** The request enables extended thinking. */
  thinking?: boolean;
  /**
   * Whether a thinking signature was issued by this provider for this model and this exact text
   * (default: any non-empty string).
   */
  acceptSignature?: (signature: string, text: string) => boolean;
  /** Whether a redacted block's data was issued by this provider for this model (default: any non-empty string). */
  acceptRedacted?: (data: string) => boolean;
  /**
   * The thinking blocks (`thinking` and `redacted_thinking`, as streamed) of the response that made the
   * `tool_use` with this id, when this provider made it: the latest assistant message must carry
   * exactly these, in order (default: not checked).
   */
  issuedThinking?: (toolUseId: string) => readonly Json[] | undefined;
  /**
   * Whether the request defines `tools` (a non-empty list): one that does not may hold no `tool_use`
   * or `tool_result` block (default: not checked — the renderer's tests check messages alone).
   */
  definesTools?: boolean;
};

const THINKING_TYPES = new Set(["thinking", "redacted_thinking"]);

export function checkAnthropicMessages(
  messages: readonly unknown[],
  options: AnthropicCheckOptions = {},
): ProviderRejection | null {
  if (options.definesTools === false && messages.some(holdsToolBlocks)) {
    // known
    return anthropicError("Requests which include `tool_use` or `tool_result` blocks must define tools.");
  }
  const acceptSignature = options.acceptSignature ?? ((signature: string) => signature.length > 0);
  const acceptRedacted = options.acceptRedacted ?? ((data: string) => data.length > 0);
  const latestAssistant = messages.findLastIndex(
    (message) => isObject(message) && message.role === "assistant",
  );
  const toolUseIds = new Set<string>();
  let previousRole: string | undefined;
  let previousToolUseIds: string[] = [];

  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (!isObject(message)) return anthropicError(`messages.${i}: Input should be a valid dictionary`); // ours
    const role = message.role;
    if (role !== "user" && role !== "assistant") {
      return anthropicError(`messages.${i}.role: Input should be 'user' or 'assistant'`); // ours
    }
    // Rule 9 (known: the API's wording before it began merging same-role messages).
    if (role === previousRole) {
      return anthropicError(
        `messages: roles must alternate between "user" and "assistant", but found multiple "${role}" roles in a row`,
      );
    }
    const isFinalAssistant = role === "assistant" && i === messages.length - 1;
    let blocks: unknown[];
    if (typeof message.content === "string") {
      if (message.content.length === 0 && !isFinalAssistant) {
        return anthropicError(
          `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
        );
      }
      blocks = message.content.length === 0 ? [] : [{ type: "text", text: message.content }];
    } else if (Array.isArray(message.content)) {
      if (message.content.length === 0 && !isFinalAssistant) {
        return anthropicError(
          `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
        );
      }
      blocks = message.content;
    } else {
      return anthropicError(`messages.${i}.content: Input should be a valid list`); // ours
    }

    for (let j = 0; j < blocks.length; j++) {
      const block = blocks[j];
      if (!isObject(block))
        return anthropicError(`messages.${i}.content.${j}: Input should be a valid dictionary`);
      if (block.type === "text" && (typeof block.text !== "string" || isBlank(block.text))) {
        return anthropicError("messages: text content blocks must contain non-whitespace text");
      }
    }

    const currentToolUseIds: string[] = [];
    if (role === "assistant") {
      const hasThinking = blocks.some((block) => THINKING_TYPES.has(String((block as Json).type)));
      const first = blocks[0] as Json | undefined;
      if (hasThinking && first && !THINKING_TYPES.has(String(first.type))) {
        // known
        return anthropicError(
          `messages.${i}.content.0: If an assistant message contains any thinking blocks, the first block must be thinking or redacted_thinking. Found ${String(first.type)}.`,
        );
      }
      const last = blocks[blocks.length - 1] as Json | undefined;
      if (last && last.type === "thinking") {
        return anthropicError(
          `messages.${i}: The final block in an assistant message cannot be \`thinking\`.`,
        ); // known
      }
      if (i === latestAssistant && options.issuedThinking) {
        const rejection = checkLatestThinking(blocks as Json[], i, options.issuedThinking);
        if (rejection) return rejection;
      }
      for (let j = 0; j < blocks.length; j++) {
        const block = blocks[j] as Json;
        if (block.type === "thinking") {
          if (
            typeof block.signature !== "string" ||
            typeof block.thinking !== "string" ||
            !acceptSignature(block.signature, block.thinking)
          ) {
            return anthropicError(`messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`);
          }
        } else if (block.type === "redacted_thinking") {
          if (typeof block.data !== "string" || !acceptRedacted(block.data)) {
            // ours
            return anthropicError(
              `messages.${i}.content.${j}: Invalid \`data\` in \`redacted_thinking\` block`,
            );
          }
        } else if (block.type === "tool_use") {
          const id = block.id;
          if (typeof id !== "string" || !ANTHROPIC_ID_PATTERN.test(id)) {
            return anthropicError(
              `messages.${i}.content.${j}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`,
            );
          }
          if (toolUseIds.has(id))
            return anthropicError(`messages.${i}.content.${j}: \`tool_use\` ids must be unique`);
          toolUseIds.add(id);
          if (typeof block.name !== "string" || !TOOL_NAME_PATTERN.test(block.name)) {
            return anthropicError(
              `messages.${i}.content.${j}.tool_use.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`,
            );
          }
          if (!isObject(block.input)) {
            return anthropicError(
              `messages.${i}.content.${j}.tool_use.input: Input should be a valid dictionary`,
            );
          }
          currentToolUseIds.push(id);
        } else if (block.type === "tool_result") {
          // ours: results belong in user messages
          return anthropicError(
            `messages.${i}.content.${j}: \`tool_result\` blocks are only allowed in user messages`,
          );
        }
      }
      // Rule 1: every tool_use answered in the very next message.
      if (currentToolUseIds.length > 0) {
        const next = messages[i + 1];
        const answered = new Set<string>();
        if (isObject(next) && next.role === "user") {
          for (const block of asArray(next.content)) {
            if (isObject(block) && block.type === "tool_result" && typeof block.tool_use_id === "string") {
              answered.add(block.tool_use_id);
            }
          }
        }
        const missing = currentToolUseIds.filter((id) => !answered.has(id));
        if (missing.length > 0) {
          return anthropicError(
            `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
          );
        }
      }
    } else {
      const expected = new Set(previousToolUseIds);
      // Rule 2 (known wording): the results come first.
      if (previousToolUseIds.length > 0) {
        let leading = 0;
        while (leading < blocks.length && (blocks[leading] as Json).type === "tool_result") leading++;
        if (leading < previousToolUseIds.length) {
          return anthropicError(
            `messages.${i}: Did not find ${previousToolUseIds.length} \`tool_result\` block(s) at the beginning of this message. Messages following \`tool_use\` blocks must begin with a matching number of \`tool_result\` blocks.`,
          );
        }
      }
      const answeredHere = new Set<string>();
      for (let j = 0; j < blocks.length; j++) {
        const block = blocks[j] as Json;
        if (THINKING_TYPES.has(String(block.type)) || block.type === "tool_use") {
          return anthropicError(
            `messages.${i}.content.${j}: \`${block.type}\` blocks are only allowed in assistant messages`,
          ); // ours
        }
        if (block.type !== "tool_result") continue;
        const id = block.tool_use_id;
        if (typeof id !== "string" || !ANTHROPIC_ID_PATTERN.test(id)) {
          return anthropicError(
            `messages.${i}.content.${j}.tool_result.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'`,
          );
        }
        if (!expected.has(id)) {
          return anthropicError(
            `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        }
        if (answeredHere.has(id)) {
          return anthropicError(
            `messages.${i}.content.${j}: each tool_use must have a single result. Found multiple \`tool_result\` blocks with id: ${id}`,
          );
        }
        answeredHere.add(id);
        const rejection = checkToolResultContent(block, i, j);
        if (rejection) return rejection;
      }
    }
    previousRole = role;
    previousToolUseIds = currentToolUseIds;
  }
  return checkAnthropicThinking(messages, options.thinking === true);
}

function holdsToolBlocks(message: unknown): boolean {
  return (
    isObject(message) &&
    asArray(message.content).some(
      (block) => isObject(block) && (block.type === "tool_use" || block.type === "tool_result"),
    )
  );
}

/**
 * Rule 10: the thinking of the latest assistant message, when it has any, is the thinking of the
 * response that made its calls — every block, unchanged, in order (no merging, no reordering, none
 * missing). Traced through the message's `tool_use` ids; a message this provider did not make is not
 * checked here.
 */
function checkLatestThinking(
  blocks: readonly Json[],
  i: number,
  issuedThinking: (toolUseId: string) => readonly Json[] | undefined,
): ProviderRejection | null {
  const thinking: number[] = [];
  let expected: readonly Json[] | undefined;
  blocks.forEach((block, j) => {
    if (THINKING_TYPES.has(String(block.type))) thinking.push(j);
    else if (block.type === "tool_use" && typeof block.id === "string") expected ??= issuedThinking(block.id);
  });
  if (expected === undefined || thinking.length === 0) return null;
  for (let k = 0; k < Math.max(thinking.length, expected.length); k++) {
    const j = thinking[k];
    if (j !== undefined && sameThinking(blocks[j]!, expected[k])) continue;
    // known
    return anthropicError(
      `messages.${i}.content.${j ?? thinking[thinking.length - 1]! + 1}: \`thinking\` or \`redacted_thinking\` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.`,
    );
  }
  return null;
}

function sameThinking(block: Json, issued: Json | undefined): boolean {
  if (issued === undefined || block.type !== issued.type) return false;
  return block.type === "thinking"
    ? block.thinking === issued.thinking && block.signature === issued.signature
    : block.data === issued.data;
}

/** Rule 8: a result's content may be absent; when present it is non-blank text, and text only with is_error. */
function checkToolResultContent(block: Json, i: number, j: number): ProviderRejection | null {
  const content = block.content;
  if (content === undefined) return null;
  if (typeof content === "string") {
    return isBlank(content)
      ? anthropicError("messages: text content blocks must contain non-whitespace text")
      : null;
  }
  if (!Array.isArray(content))
    return anthropicError(`messages.${i}.content.${j}.tool_result.content: Input should be a valid list`); // ours
  for (const part of content) {
    if (!isObject(part))
      return anthropicError(`messages.${i}.content.${j}.tool_result.content: Input should be a valid list`);
    if (part.type === "text") {
      if (typeof part.text !== "string" || isBlank(part.text)) {
        return anthropicError("messages: text content blocks must contain non-whitespace text");
      }
    } else if (block.is_error === true) {
      // ours
      return anthropicError(
        `messages.${i}.content.${j}: a \`tool_result\` block with \`is_error\` set may only contain text content`,
      );
    }
  }
  return null;
}

/** Rule 10. */
function checkAnthropicThinking(messages: readonly unknown[], thinking: boolean): ProviderRejection | null {
  if (thinking) {
    const last = messages[messages.length - 1] as Json | undefined;
    const answersTools =
      last?.role === "user" &&
      asArray(last.content).some((block) => isObject(block) && block.type === "tool_result");
    if (!answersTools) return null;
    const index = messages.length - 2;
    const first = asArray((messages[index] as Json | undefined)?.content)[0] as Json | undefined;
    if (first && THINKING_TYPES.has(String(first.type))) return null;
    // known
    return anthropicError(
      `messages.${index}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first?.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`,
    );
  }
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as Json;
    if (message.role !== "assistant") continue;
    const blocks = asArray(message.content);
    const j = blocks.findIndex((block) => isObject(block) && THINKING_TYPES.has(String(block.type)));
    if (j === -1) return null;
    // known
    return anthropicError(
      `messages.${i}.content.${j}: When thinking is disabled, an \`assistant\` message in the final position cannot contain \`thinking\`. To use thinking blocks, enable \`thinking\` in your request.`,
    );
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------
// OpenAI Chat Completions (and Kimi, which applies the same rules)

type OpenAIDialect = {
  error(message: string, param: string | null, code: string | null): ProviderRejection;
  missingResponses(ids: string[]): string;
  /**
   * OpenAI's 40-character id limit. Kimi does not apply it: its own ids, `functions.<name>:<index>`
   * with names of up to 64 characters, are longer, and its API accepts what its models emit.
   */
  maxIdLength: number | null;
};

const OPENAI_DIALECT: OpenAIDialect = {
  error: (message, param, code) => ({
    status: BAD_REQUEST,
    body: { error: { message, type: "invalid_request_error", param, code } },
  }),
  missingResponses: (ids) =>
    `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${ids.join(", ")}`,
  maxIdLength: OPENAI_MAX_ID_LENGTH,
};

const KIMI_DIALECT: OpenAIDialect = {
  error: (message) => ({ status: BAD_REQUEST, body: { error: { message, type: "invalid_request_error" } } }),
  missingResponses: (ids) =>
    `an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${ids.join(", ")}`,
  maxIdLength: null,
};

export function checkOpenAIMessages(messages: readonly unknown[]): ProviderRejection | null {
  return checkOpenAIFamily(messages, OPENAI_DIALECT);
}

function checkOpenAIFamily(messages: readonly unknown[], dialect: OpenAIDialect): ProviderRejection | null {
  const answeredAt = new Map<string, number>();
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (!isObject(message))
      return dialect.error(`Invalid type for 'messages[${i}]': expected an object.`, `messages.[${i}]`, null);
    const hasToolCalls = message.tool_calls !== undefined && message.tool_calls !== null;
    if (message.content === null && !(message.role === "assistant" && hasToolCalls)) {
      // known (rule 7)
      return dialect.error(
        "Invalid value for 'content': expected a string, got null.",
        `messages.[${i}].content`,
        null,
      );
    }
    if (message.role === "tool") {
      // A tool message not preceded by an assistant message with tool_calls (those are consumed below).
      if (typeof message.tool_call_id !== "string" || message.tool_call_id.length === 0) {
        return dialect.error(
          "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
          `messages.[${i}].tool_call_id`,
          null,
        );
      }
      return dialect.error(
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        `messages.[${i}].role`,
        null,
      );
    }
    if (message.role !== "assistant" || !hasToolCalls) continue;

    const calls = message.tool_calls;
    if (!Array.isArray(calls) || calls.length === 0) {
      return dialect.error(
        `Invalid 'messages[${i}].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
        `messages[${i}].tool_calls`,
        "empty_array",
      );
    }
    const pending: string[] = [];
    for (let k = 0; k < calls.length; k++) {
      const call = calls[k] as Json;
      const id = call?.id;
      if (typeof id !== "string") {
        return dialect.error(
          `Missing required parameter: 'messages[${i}].tool_calls[${k}].id'.`,
          `messages[${i}].tool_calls[${k}].id`,
          "missing_required_parameter",
        ); // ours
      }
      if (dialect.maxIdLength !== null && id.length > dialect.maxIdLength) {
        return dialect.error(
          `Invalid 'messages[${i}].tool_calls[${k}].id': string too long. Expected a string with maximum length ${dialect.maxIdLength}, but got a string with length ${id.length} instead.`,
          `messages[${i}].tool_calls[${k}].id`,
          "string_above_max_length",
        );
      }
      const name = (call.function as Json | undefined)?.name;
      if (typeof name !== "string" || name.length === 0) {
        // known
        return dialect.error(
          `Invalid 'messages[${i}].tool_calls[${k}].function.name': empty string. Expected a string with minimum length 1, but got an empty string instead.`,
          `messages[${i}].tool_calls[${k}].function.name`,
          "empty_string",
        );
      }
      pending.push(id);
    }
    const open = new Set(pending);
    let j = i + 1;
    for (; j < messages.length; j++) {
      const tool = messages[j];
      if (!isObject(tool) || tool.role !== "tool") break;
      const id = tool.tool_call_id;
      if (typeof id !== "string" || id.length === 0) {
        return dialect.error(
          "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
          `messages.[${j}].tool_call_id`,
          null,
        );
      }
      const earlier = answeredAt.get(id);
      if (earlier !== undefined) {
        return dialect.error(
          `Invalid parameter: Duplicate value for 'tool_call_id' of '${id}', in messages[${earlier}] and messages[${j}].`,
          `messages.[${j}].tool_call_id`,
          null,
        );
      }
      if (!open.has(id)) {
        return dialect.error(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${j}].role`,
          null,
        );
      }
      answeredAt.set(id, j);
      open.delete(id);
    }
    if (open.size > 0) {
      return dialect.error(dialect.missingResponses([...open]), `messages.[${j}].role`, null);
    }
    i = j - 1;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------
// Kimi (OpenAI rules, plus reasoning_content with thinking and ids of the form functions.<name>:<index>)

export type KimiCheckOptions = { thinking?: boolean };

export function checkKimiMessages(
  messages: readonly unknown[],
  options: KimiCheckOptions = {},
): ProviderRejection | null {
  const base = checkOpenAIFamily(messages, KIMI_DIALECT);
  if (base) return base;
  const nameOfCall = new Map<string, string>();
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as Json;
    if (message.role === "assistant" && Array.isArray(message.tool_calls) && message.tool_calls.length > 0) {
      if (options.thinking === true && typeof message.reasoning_content !== "string") {
        return KIMI_DIALECT.error(
          `thinking is enabled but reasoning_content is missing in assistant tool call message at index ${i}`,
          null,
          null,
        );
      }
      // ours: the model recovers the function name from the id (docs/providers.md), so the id must carry it.
      for (const call of message.tool_calls as Json[]) {
        const id = String(call.id);
        const name = String((call.function as Json).name);
        const match = KIMI_ID_PATTERN.exec(id);
        if (!match || match[1] !== name) {
          return KIMI_DIALECT.error(
            `Invalid tool call id '${id}' in assistant message at index ${i}: expected 'functions.${name}:<index>'`,
            null,
            null,
          );
        }
        nameOfCall.set(id, name);
      }
    } else if (message.role === "tool") {
      // ours: Kimi's tool messages carry the function name (docs/providers.md).
      const expected = nameOfCall.get(String(message.tool_call_id));
      if (message.name !== expected) {
        return KIMI_DIALECT.error(
          `tool message at index ${i} must carry the name '${expected}' of the function it answers`,
          null,
          null,
        );
      }
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------
// Mistral

function mistralError(
  message: string,
  type = "invalid_request_error",
  code: string | null = null,
): ProviderRejection {
  return { status: BAD_REQUEST, body: { object: "error", message, type, param: null, code } };
}
function mistralOrderError(message: string): ProviderRejection {
  return mistralError(message, "invalid_request_message_order", "3230");
}

function hasTextContent(content: unknown): boolean {
  if (typeof content === "string") return content.length > 0;
  return Array.isArray(content) && content.length > 0;
}

export function checkMistralMessages(messages: readonly unknown[]): ProviderRejection | null {
  let previousRole: unknown;
  let open = new Set<string>();
  let answered = new Set<string>();
  /** Every call id of the request: an id names one call in the whole conversation. */
  const callIds = new Set<string>();
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (!isObject(message)) return mistralError(`messages.${i}: Input should be a valid dictionary`); // ours
    const role = message.role;
    // after a tool message only an assistant message or another tool message may follow
    if (previousRole === "tool" && role !== "assistant" && role !== "tool")
      return mistralOrderError(`Unexpected role '${String(role)}' after role 'tool'`);
    if (previousRole === "user" && role === "tool")
      return mistralOrderError("Unexpected role 'tool' after role 'user'");

    if (role === "assistant" || role === "user") {
      if (open.size > 0) return mistralError("Not the same number of function calls and responses");
    }
    if (role === "assistant") {
      const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as Json[]) : [];
      const hasContent = hasTextContent(message.content);
      if (calls.length > 0 && hasContent) {
        return mistralError("Assistant message must have either content or tool_calls, but not both.");
      }
      if (calls.length === 0 && !hasContent && message.prefix !== true) {
        return mistralError("Assistant message must have either content or tool_calls, but not both.");
      }
      const ids = new Set<string>();
      for (const call of calls) {
        const id = String(call?.id);
        if (!MISTRAL_ID_PATTERN.test(id)) {
          return mistralError(`Tool call id was ${id} but must be a-z, A-Z, 0-9, with a length of 9.`);
        }
        if (ids.has(id)) return mistralError(`Duplicate tool call id ${id} in assistant message`);
        if (callIds.has(id)) return mistralError(`Duplicate tool call id ${id} in the conversation`); // ours
        ids.add(id);
        callIds.add(id);
        const name = (call.function as Json | undefined)?.name;
        if (typeof name !== "string" || !TOOL_NAME_PATTERN.test(name)) {
          // known
          return mistralError(
            `Function name was ${String(name)} but must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64.`,
          );
        }
      }
      open = ids;
      answered = new Set();
    } else if (role === "tool") {
      const id = String(message.tool_call_id);
      if (!MISTRAL_ID_PATTERN.test(id)) {
        return mistralError(`Tool call id was ${id} but must be a-z, A-Z, 0-9, with a length of 9.`);
      }
      if (answered.has(id)) return mistralError(`Duplicate tool call id ${id} in tool results`);
      if (!open.has(id)) return mistralError(`Unexpected tool call id ${id} in tool results`);
      open.delete(id);
      answered.add(id);
    }
    previousRole = role;
  }
  if (open.size > 0) return mistralError("Not the same number of function calls and responses");
  const last = messages[messages.length - 1] as Json | undefined;
  if (
    last &&
    last.role !== "user" &&
    last.role !== "tool" &&
    !(last.role === "assistant" && last.prefix === true)
  ) {
    // known
    return mistralError(
      `Expected last role User or Tool (or Assistant with prefix True) for serving but got ${String(last.role)}`,
    );
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------

export type ProviderCheckOptions = AnthropicCheckOptions & KimiCheckOptions;

/** The check for a profile's request messages. */
export function checkProviderMessages(
  profile: ProfileName,
  messages: readonly unknown[],
  options: ProviderCheckOptions = {},
): ProviderRejection | null {
  switch (profile) {
    case "anthropic":
      return checkAnthropicMessages(messages, options);
    case "openai":
      return checkOpenAIMessages(messages);
    case "kimi":
      return checkKimiMessages(messages, options);
    case "mistral":
      return checkMistralMessages(messages);
  }
}
