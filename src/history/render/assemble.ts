/**
 * The renderer's second pass: one walk over the history that builds provider-neutral messages. It
 * reads text and thinking blocks; calls and results it takes from the first pass's records (a call's
 * input as sent, its winning result block), so it never looks a call id up again.
 *
 * An assistant message is a run of thinking, text and tool calls; it ends at a user text, at a
 * result, or when text or thinking follows its calls. When it ends, its tool-results message follows
 * at once, with the winning result of each call (from the first pass) or a synthetic `[INTERRUPTED]`
 * one, in call order — so results recorded earlier, later, or scattered land right after their call,
 * and text that was recorded between a call and its result comes after the results.
 *
 * Incremental: wherever no message is open and the last message cannot grow any more (it is not a user
 * message, which a following user text would extend), the messages so far are committed and the walk
 * records a checkpoint. The next render of a longer history starts again from the last checkpoint; the
 * messages before it are final unless the first pass reports a conflict.
 */
import type { HistoryBlock, TextBlock, ThinkingBlock } from "../model.js";
import { CommittedList } from "./committed-list.js";
import { BlockStep, type CallRecord, type HistoryIndex } from "./pairing.js";
import type { ProviderProfile } from "./profiles.js";
import type {
  RenderDiagnostics,
  RenderedAssistantMessage,
  RenderedAssistantPart,
  RenderedMessage,
  RenderedToolCallPart,
  RenderedToolResult,
} from "./types.js";
import { wellFormed } from "../../well-formed.js";
import { EMPTY_RESULT_TEXT, missingResultText } from "./wording.js";

export type AssembleSettings = {
  profile: ProviderProfile;
  thinking: boolean;
  model: string | undefined;
  index: HistoryIndex;
};

type PositionedThinking = HistoryBlock & ThinkingBlock;
/** A text or thinking block: the only blocks this pass reads. */
type ContentBlock = HistoryBlock & (TextBlock | ThinkingBlock);
type DroppedThinkingReason = RenderDiagnostics["droppedThinking"][number]["reason"];
type OpenMessage = {
  thinking: ReusedList<PositionedThinking>;
  texts: ReusedList<string>;
  calls: ReusedList<CallRecord>;
};

const REASONING_SEPARATOR = "\n\n";
const USER_TEXT_SEPARATOR = "\n\n";

export function isBlank(text: string): boolean {
  // Most texts start with a visible ASCII character: no need to trim those.
  const first = text.charCodeAt(0);
  if (first > 0x20 && first < 0x7f) return false;
  return text.trim().length === 0;
}

/**
 * A list emptied and filled again for every assistant message. Emptying keeps its storage: setting an
 * array's length to 0 frees it, and the next message would allocate it again.
 */
class ReusedList<T> {
  private readonly items: T[] = [];
  length = 0;

  push(item: T): void {
    this.items[this.length++] = item;
  }

  get(index: number): T {
    return this.items[index]!;
  }

  clear(): void {
    this.length = 0;
  }
}

export class Assembler {
  readonly messages = new CommittedList<RenderedMessage>();
  readonly movedBlocks = new CommittedList<RenderDiagnostics["movedBlocks"][number]>();
  readonly droppedThinking = new CommittedList<RenderDiagnostics["droppedThinking"][number]>();
  readonly droppedText = new CommittedList<RenderDiagnostics["droppedText"][number]>();
  readonly emptyResults = new CommittedList<RenderDiagnostics["emptyResults"][number]>();
  readonly coercedInputs = new CommittedList<RenderDiagnostics["coercedInputs"][number]>();
  /** The first block the next render walks: every block before it is in committed messages. */
  checkpointBlock = 0;
  private checkpointPlacedUpTo = -1;
  private checkpointCalls = 0;
  /** Calls walked so far (an index into the first pass's `callOrder`). */
  private callsSeen = 0;
  /** The assistant message being gathered; its lists are reused (emptied) once it is emitted. */
  private readonly open: OpenMessage = {
    thinking: new ReusedList(),
    texts: new ReusedList(),
    calls: new ReusedList(),
  };
  private hasOpen = false;
  /** Array index of the latest result placed so far: blocks before it were recorded ahead of a result. */
  private resultsPlacedUpTo = -1;
  private readonly lists: readonly CommittedList<unknown>[] = [
    this.messages,
    this.movedBlocks,
    this.droppedThinking,
    this.droppedText,
    this.emptyResults,
    this.coercedInputs,
  ];

  /** `onCommit(from, to)` is told about messages[from..to) just before they become final. */
  constructor(
    private readonly settings: AssembleSettings,
    private readonly onCommit: (from: number, to: number) => void,
  ) {}

  /**
   * Walks `blocks` from the last checkpoint to array index `end` and closes what is open there (the
   * first pass must already cover them).
   */
  run(blocks: readonly HistoryBlock[], end: number): void {
    for (const list of this.lists) list.rewind();
    this.clearOpen();
    this.hasOpen = false;
    this.resultsPlacedUpTo = this.checkpointPlacedUpTo;
    this.callsSeen = this.checkpointCalls;
    const { steps, callOrder } = this.settings.index;
    const open = this.open;
    for (let index = this.checkpointBlock; index < end; index++) {
      // Calls and results come from the first pass's records: only text and thinking blocks are read.
      const step = steps[index];
      if (step === BlockStep.content) {
        this.stepContent(blocks[index] as ContentBlock, index);
      } else if (step === BlockStep.call) {
        open.calls.push(callOrder[this.callsSeen++]!);
        this.hasOpen = true;
      } else if (step === BlockStep.result && open.calls.length > 0) {
        this.close();
      }
      if (!this.hasOpen && this.lastRole() !== "user") this.checkpoint(index + 1);
    }
    this.close();
  }

  private lastRole(): RenderedMessage["role"] | undefined {
    const items = this.messages.items;
    return items.length === 0 ? undefined : items[items.length - 1]!.role;
  }

  private checkpoint(blockIndex: number): void {
    this.checkpointBlock = blockIndex;
    this.checkpointPlacedUpTo = this.resultsPlacedUpTo;
    this.checkpointCalls = this.callsSeen;
    if (this.messages.length > this.messages.committed) {
      this.onCommit(this.messages.committed, this.messages.length);
    }
    for (const list of this.lists) list.commit();
  }

  private stepContent(block: ContentBlock, index: number): void {
    const open = this.open;
    switch (block.kind) {
      case "text": {
        if (isBlank(block.text)) {
          this.droppedText.push({ position: block.position, role: block.role, reason: "empty" });
          return;
        }
        if (block.role === "user") {
          this.close();
          const items = this.messages.items;
          const last = items[items.length - 1];
          if (last?.role === "user") {
            this.noteIfMoved(block, index);
            last.text += USER_TEXT_SEPARATOR + wellFormed(block.text);
            return;
          }
          // Nothing is open and the last message is final: a checkpoint before this block.
          this.checkpoint(index);
          this.noteIfMoved(block, index);
          items.push({ role: "user", text: wellFormed(block.text) });
        } else {
          if (open.calls.length > 0) this.close();
          this.noteIfMoved(block, index);
          open.texts.push(wellFormed(block.text));
          this.hasOpen = true;
        }
        return;
      }
      case "thinking": {
        const dropReason = this.thinkingDropReason(block);
        if (dropReason !== undefined) {
          this.droppedThinking.push({ position: block.position, reason: dropReason });
          return;
        }
        if (open.calls.length > 0) this.close();
        this.noteIfMoved(block, index);
        open.thinking.push(block);
        this.hasOpen = true;
        return;
      }
    }
  }

  private noteIfMoved(block: HistoryBlock & { kind: "text" | "thinking" }, index: number): void {
    if (index < this.resultsPlacedUpTo) {
      this.movedBlocks.push({ position: block.position, kind: block.kind, role: block.role });
    }
  }

  private close(): void {
    if (!this.hasOpen) return;
    this.hasOpen = false;
    const placedUpTo = this.emitAssistant(this.open);
    this.clearOpen();
    if (placedUpTo > this.resultsPlacedUpTo) this.resultsPlacedUpTo = placedUpTo;
  }

  private clearOpen(): void {
    this.open.thinking.clear();
    this.open.texts.clear();
    this.open.calls.clear();
  }

  /**
   * Why a thinking block cannot be sent to this profile at all, or undefined when it may be. A
   * redacted block is kept where a signed one would be (its data stands for the signature) and is
   * never turned into text.
   */
  private thinkingDropReason(block: ThinkingBlock): DroppedThinkingReason | undefined {
    const { profile, thinking, model } = this.settings;
    if (profile.thinking === "drop") return "profile_drops_thinking";
    if (!thinking) return "thinking_disabled";
    const redacted = block.redacted !== undefined;
    if (profile.thinking === "reasoning-content") return redacted ? "redacted" : undefined;
    if (!nonEmpty(redacted ? block.redacted : block.signature)) return "no_signature";
    if (block.provider !== profile.provider) return "other_provider";
    if (model !== undefined && block.model !== model) return "other_model";
    return undefined;
  }

  /**
   * Appends the assistant message (if it has any content) and its tool results; returns the highest
   * history index among the results it placed (-1 when none).
   */
  private emitAssistant(open: OpenMessage): number {
    const { profile } = this.settings;
    const messages = this.messages.items;
    const hasCalls = open.calls.length > 0;
    const { thinking, texts, calls } = open;
    if (!hasCalls && texts.length === 0) {
      for (let index = 0; index < thinking.length; index++) {
        this.droppedThinking.push({ position: thinking.get(index).position, reason: "no_other_content" });
      }
      return -1;
    }

    // Arrays of their final size: a growing array would reserve room for 16 entries.
    const signedThinking = profile.thinking === "signed-blocks" ? thinking.length : 0;
    const content = new Array<RenderedAssistantPart>(signedThinking + texts.length + calls.length);
    let at = 0;
    const message: RenderedAssistantMessage = { role: "assistant", content };
    if (signedThinking > 0) {
      for (let index = 0; index < thinking.length; index++) {
        const block = thinking.get(index);
        content[at++] =
          block.redacted === undefined
            ? { type: "thinking", text: wellFormed(block.text), signature: block.signature! }
            : { type: "redacted_thinking", data: block.redacted };
      }
    } else if (profile.thinking === "reasoning-content" && this.settings.thinking) {
      if (hasCalls) {
        message.reasoningContent = reasoningText(thinking);
      } else {
        for (let index = 0; index < thinking.length; index++) {
          this.droppedThinking.push({ position: thinking.get(index).position, reason: "no_tool_calls" });
        }
      }
    }
    for (let index = 0; index < texts.length; index++)
      content[at++] = { type: "text", text: texts.get(index) };
    if (!hasCalls) {
      messages.push(message);
      return -1;
    }

    const results = new Array<RenderedToolResult>(calls.length);
    let placedUpTo = -1;
    for (let call = 0; call < calls.length; call++) {
      const record = calls.get(call);
      const part = this.toolCallPart(record);
      content[at++] = part;
      if (!record.hasResult) {
        results[call] = {
          id: part.id,
          canonicalId: part.canonicalId,
          name: part.name,
          content: wellFormed(missingResultText(record.call!.name)),
          isError: true,
          status: "interrupted",
          synthetic: true,
        };
        continue;
      }
      if (record.winnerIndex > placedUpTo) placedUpTo = record.winnerIndex;
      const winner = record.winner!;
      let text = winner.result;
      if (typeof text !== "string" || isBlank(text)) {
        this.emptyResults.push({ callId: part.canonicalId });
        text = EMPTY_RESULT_TEXT;
      } else {
        text = wellFormed(text);
      }
      results[call] = {
        id: part.id,
        canonicalId: part.canonicalId,
        name: part.name,
        content: text,
        isError: winner.isError === true,
        status: winner.status,
        synthetic: false,
      };
    }
    messages.push(message, { role: "tool_results", results });
    return placedUpTo;
  }

  private toolCallPart(record: CallRecord): RenderedToolCallPart {
    const { input, json, coercions } = record.input!;
    for (const reason of coercions) {
      this.coercedInputs.push({ callId: record.callId, reason });
    }
    return {
      type: "tool_call",
      id: record.projectedId,
      canonicalId: record.callId,
      name: record.name,
      input,
      arguments: json,
    };
  }
}

function nonEmpty(value: string | undefined): boolean {
  return typeof value === "string" && value.length > 0;
}

/** Kimi's `reasoning_content`: the texts of the message's thinking blocks, in order. */
function reasoningText(thinking: ReusedList<PositionedThinking>): string {
  let text = "";
  for (let index = 0; index < thinking.length; index++) {
    const part = wellFormed(thinking.get(index).text);
    text = index === 0 ? part : text + REASONING_SEPARATOR + part;
  }
  return text;
}
