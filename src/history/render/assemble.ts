/**
 * The renderer's second pass: one walk over the history that builds provider-neutral messages.
 *
 * An assistant message is a run of thinking, text and tool calls; it ends at a user text, at a
 * result, or when text or thinking follows its calls. When it ends, its tool-results message follows
 * at once, with the winning result of each call (from the first pass) or a synthetic `[INTERRUPTED]`
 * one, in call order — so results recorded earlier, later, or scattered land right after their call,
 * and text that was recorded between a call and its result comes after the results.
 */
import type { HistoryBlock, ThinkingBlock } from "../model.js";
import type { IdProjection } from "./ids.js";
import type { CallEntry, HistoryIndex } from "./pairing.js";
import type { ProviderProfile } from "./profiles.js";
import type {
  RenderDiagnostics,
  RenderedAssistantMessage,
  RenderedAssistantPart,
  RenderedMessage,
  RenderedToolCallPart,
  RenderedToolResult,
} from "./types.js";
import { EMPTY_RESULT_TEXT, missingResultText } from "./wording.js";

export type AssembleContext = {
  profile: ProviderProfile;
  thinking: boolean;
  model: string | undefined;
  index: HistoryIndex;
  projection: IdProjection;
  /** Sanitized name per canonical call id. */
  names: ReadonlyMap<string, string>;
  diagnostics: RenderDiagnostics;
};

type PositionedThinking = HistoryBlock & ThinkingBlock;
type DroppedThinkingReason = RenderDiagnostics["droppedThinking"][number]["reason"];

type OpenMessage = { thinking: PositionedThinking[]; texts: string[]; calls: CallEntry[] };

const REASONING_SEPARATOR = "\n\n";
const USER_TEXT_SEPARATOR = "\n\n";

export function isBlank(text: string): boolean {
  return text.trim().length === 0;
}

export function assembleMessages(
  blocks: readonly HistoryBlock[],
  context: AssembleContext,
): RenderedMessage[] {
  const { diagnostics } = context;
  const messages: RenderedMessage[] = [];
  let open: OpenMessage = { thinking: [], texts: [], calls: [] };
  /** Array index of the latest result placed so far: blocks before it were recorded ahead of a result. */
  let resultsPlacedUpTo = -1;

  const noteIfMoved = (block: HistoryBlock & { kind: "text" | "thinking" }, index: number) => {
    if (index < resultsPlacedUpTo) {
      diagnostics.movedBlocks.push({ position: block.position, kind: block.kind, role: block.role });
    }
  };

  const close = () => {
    const closed = open;
    open = { thinking: [], texts: [], calls: [] };
    const placedUpTo = emitAssistant(closed, messages, context);
    if (placedUpTo > resultsPlacedUpTo) resultsPlacedUpTo = placedUpTo;
  };

  for (let index = 0; index < blocks.length; index++) {
    const block = blocks[index]!;
    switch (block.kind) {
      case "text": {
        if (isBlank(block.text)) {
          diagnostics.droppedText.push({ position: block.position, role: block.role, reason: "empty" });
          break;
        }
        if (block.role === "user") {
          close();
          noteIfMoved(block, index);
          const last = messages[messages.length - 1];
          if (last?.role === "user") last.text += USER_TEXT_SEPARATOR + block.text;
          else messages.push({ role: "user", text: block.text });
        } else {
          if (open.calls.length > 0) close();
          noteIfMoved(block, index);
          open.texts.push(block.text);
        }
        break;
      }
      case "thinking": {
        const dropReason = thinkingDropReason(block, context);
        if (dropReason !== undefined) {
          diagnostics.droppedThinking.push({ position: block.position, reason: dropReason });
          break;
        }
        if (open.calls.length > 0) close();
        noteIfMoved(block, index);
        open.thinking.push(block);
        break;
      }
      case "tool_call": {
        // Only the first block of a canonical id is the call; the first pass reported the others.
        if (context.index.calls.get(block.callId)?.index === index) open.calls.push({ block, index });
        break;
      }
      case "tool_response": {
        if (open.calls.length > 0) close();
        break;
      }
    }
  }
  close();
  return messages;
}

/** Why a thinking block cannot be sent to this profile at all, or undefined when it may be. */
function thinkingDropReason(
  block: ThinkingBlock,
  context: AssembleContext,
): DroppedThinkingReason | undefined {
  const { profile } = context;
  if (profile.thinking === "drop") return "profile_drops_thinking";
  if (!context.thinking) return "thinking_disabled";
  if (profile.thinking === "reasoning-content") return undefined;
  if (typeof block.signature !== "string" || block.signature.length === 0) return "no_signature";
  if (block.provider !== profile.provider) return "other_provider";
  if (context.model !== undefined && block.model !== context.model) return "other_model";
  return undefined;
}

/**
 * Appends the assistant message (if it has any content) and its tool results; returns the highest
 * history index among the results it placed (-1 when none).
 */
function emitAssistant(open: OpenMessage, messages: RenderedMessage[], context: AssembleContext): number {
  const { diagnostics, profile } = context;
  const hasCalls = open.calls.length > 0;
  if (!hasCalls && open.texts.length === 0) {
    for (const block of open.thinking) {
      diagnostics.droppedThinking.push({ position: block.position, reason: "no_other_content" });
    }
    return -1;
  }

  const content: RenderedAssistantPart[] = [];
  const message: RenderedAssistantMessage = { role: "assistant", content };
  if (profile.thinking === "signed-blocks") {
    for (const block of open.thinking) {
      content.push({ type: "thinking", text: block.text, signature: block.signature! });
    }
  } else if (profile.thinking === "reasoning-content" && context.thinking) {
    if (hasCalls) {
      message.reasoningContent = open.thinking.map((block) => block.text).join(REASONING_SEPARATOR);
    } else {
      for (const block of open.thinking) {
        diagnostics.droppedThinking.push({ position: block.position, reason: "no_tool_calls" });
      }
    }
  }
  for (const text of open.texts) content.push({ type: "text", text });
  if (!hasCalls) {
    messages.push(message);
    return -1;
  }

  const results: RenderedToolResult[] = [];
  let placedUpTo = -1;
  for (const entry of open.calls) {
    const part = toolCallPart(entry, context);
    content.push(part);
    const winner = context.index.results.get(part.canonicalId);
    if (!winner) {
      results.push({
        id: part.id,
        canonicalId: part.canonicalId,
        name: part.name,
        content: missingResultText(entry.block.name),
        isError: true,
        status: "interrupted",
        synthetic: true,
      });
      continue;
    }
    if (winner.index > placedUpTo) placedUpTo = winner.index;
    let text = winner.block.result;
    if (typeof text !== "string" || isBlank(text)) {
      diagnostics.emptyResults.push({ callId: part.canonicalId });
      text = EMPTY_RESULT_TEXT;
    }
    results.push({
      id: part.id,
      canonicalId: part.canonicalId,
      name: part.name,
      content: text,
      isError: winner.block.isError === true,
      status: winner.block.status,
      synthetic: false,
    });
  }
  messages.push(message, { role: "tool_results", results });
  return placedUpTo;
}

function toolCallPart(entry: CallEntry, context: AssembleContext): RenderedToolCallPart {
  const { block } = entry;
  let input: Record<string, unknown>;
  if (isPlainObject(block.input)) {
    input = block.input;
  } else {
    context.diagnostics.coercedInputs.push({ callId: block.callId, reason: "not_an_object" });
    input = { value: block.input };
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(input);
  } catch {
    json = undefined;
  }
  if (json === undefined) {
    context.diagnostics.coercedInputs.push({ callId: block.callId, reason: "not_serializable" });
    input = {};
    json = "{}";
  }
  return {
    type: "tool_call",
    id: context.projection.toProjected.get(block.callId)!,
    canonicalId: block.callId,
    name: context.names.get(block.callId)!,
    input,
    arguments: json,
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
