/**
 * One history rendered for one profile, thinking setting and model, kept so that the same history
 * grown at its end renders in time proportional to what was added (docs/semantics.md#transcript-integrity;
 * docs/transcripts.md).
 *
 * A render indexes the new blocks (pairing.ts, ids.ts), walks the history from the last checkpoint
 * (assemble.ts), and commits the messages before the new checkpoint together with their token
 * estimates, call counts and — for provider output — their shaped provider messages. The budget then
 * picks the kept turns from per-turn sums (turn-sums.ts, budget.ts); the request is the committed
 * provider messages from the cut on, plus the uncommitted tail. Diagnostics are built on demand
 * (diagnostics.ts).
 *
 * Whenever the new blocks could change a committed message — a result for a committed call that would
 * win, an appended call wanting an id already generated for an earlier one, blocks out of position
 * order, or a history that does not continue the one rendered — `render` returns null and the state
 * must be dropped: the caller renders from scratch. A full render is the same code run on a new state,
 * so cached and fresh renders agree by construction.
 */
import type { MessageParam } from "@anthropic-ai/sdk/resources/messages";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { HistoryBlock } from "../model.js";
import { pushAnthropicMessage } from "./adapters-anthropic.js";
import { pushOpenAIChatMessages } from "./adapters-openai.js";
import { RequestArray, joinedRequest, type LentMessages } from "./request-array.js";
import { Assembler } from "./assemble.js";
import { callIdsOf, chooseBudgetCut, transcriptTokens, type BudgetCut, type RenderBudget } from "./budget.js";
import { lazyDiagnostics, type LazyDiagnostics, type PassRecords } from "./diagnostics.js";
import { HistoryIndex, indexDiagnosticsAsOf, type IndexOutcome } from "./pairing.js";
import type { ProviderProfile } from "./profiles.js";
import { closingMessage, hasShapeQuirks, mustDisableThinking, pushShaped, reshapes } from "./shape.js";
import { TurnSums, budgetView, turnValue } from "./turn-sums.js";
import type { RenderCounts, RenderedMessage } from "./types.js";

export type ProviderMessage = MessageParam | ChatCompletionMessageParam;

/** The release of a request whose messages no later render reuses. */
const doNothing = () => {};

/**
 * New blocks indexed before the walk assembles them: about a hundred kilobytes of blocks, strings and
 * records, which the walk then finds in the processor's cache (a 100k-block render measured fastest
 * with 128–512; 1,024 and more, or all at once, were slower).
 */
export const STRETCH_BLOCKS = 512;

export type TranscriptSettings = {
  profile: ProviderProfile;
  thinking: boolean;
  model: string | undefined;
  /** Keep each committed message's provider form too (requests), or only the neutral messages. */
  providerOutput: boolean;
};

/** One render's outcome; every part stays valid whatever the state renders next. */
export type Rendering = {
  cut: BudgetCut;
  counts: RenderCounts;
  /** The request must be sent with thinking off (its answered message has no signed thinking). */
  thinkingDisabled: boolean;
  /** The messages the budget kept, before thinking settlement and shape quirks. */
  keptMessages: () => RenderedMessage[];
  /** The provider messages, when the state keeps them and thinking did not have to be turned off. */
  providerMessages: ProviderMessage[] | undefined;
  /** `providerMessages` were sent: the state's next render may reuse their array (request-array.ts). */
  release: () => void;
  lazy: LazyDiagnostics;
  /** The history was out of position order and was rendered sorted. */
  reordered: boolean;
};

type PushProviderMessage = (
  output: ProviderMessage[],
  message: RenderedMessage,
  previousRole: RenderedMessage["role"] | undefined,
) => void;

export class TranscriptState {
  private readonly index: HistoryIndex;
  private readonly assembler: Assembler;
  private readonly pushProvider: PushProviderMessage;
  /** The committed messages' turn sums and provider forms. */
  private readonly committedSums = new TurnSums();
  private readonly providerMessages: ProviderMessage[] = [];
  private readonly requestArray = new RequestArray();
  private lastBlock: HistoryBlock | undefined;
  /** Why `render` returned null, once it has: the state is of no further use. */
  private failed: Exclude<IndexOutcome, "indexed"> | undefined;

  /**
   * `stretchBlocks`: new blocks are indexed and assembled a stretch of at least this many blocks at a
   * time (see `render`); infinite, all at once.
   */
  constructor(
    readonly settings: TranscriptSettings,
    private readonly reordered = false,
    private readonly stretchBlocks = STRETCH_BLOCKS,
  ) {
    this.index = new HistoryIndex(settings.profile.toolNamePattern, settings.profile.idFormat);
    this.assembler = new Assembler(
      { profile: settings.profile, thinking: settings.thinking, model: settings.model, index: this.index },
      (from, to) => this.commitMessages(from, to),
    );
    this.pushProvider = providerPusher(settings.profile);
  }

  /**
   * Renders `history`, which must continue the history rendered before. Null when it does not, or
   * when the new blocks change what was committed or are out of position order: drop this state then.
   * `leading`: provider messages the request starts with (a system message), never kept by the state.
   */
  render(
    history: readonly HistoryBlock[],
    budget: RenderBudget,
    leading: readonly ProviderMessage[] = [],
  ): Rendering | null {
    if (this.failed !== undefined || !this.continues(history)) return null;
    // Stretch by stretch, so that each stretch is assembled while its blocks, strings and records are
    // still in the processor's cache; a result answering a call of an earlier stretch is a conflict.
    do {
      const outcome = this.index.add(history, this.assembler.checkpointBlock, this.stretchBlocks);
      if (outcome !== "indexed") {
        this.failed = outcome;
        return null;
      }
      this.assembler.run(history, this.index.blockCount);
    } while (this.index.blockCount < history.length);
    this.lastBlock = history[history.length - 1];
    return this.finish(budget, leading);
  }

  /** Why the last `render` returned null: blocks out of position order, or a conflict. */
  get failure(): Exclude<IndexOutcome, "indexed"> | undefined {
    return this.failed;
  }

  /** Cheap check that `history` starts with what was rendered: its length and its last block. */
  private continues(history: readonly HistoryBlock[]): boolean {
    const count = this.index.blockCount;
    if (count === 0) return true;
    if (history.length < count) return false;
    const block = history[count - 1]!;
    return block === this.lastBlock || sameBlock(block, this.lastBlock!);
  }

  private commitMessages(from: number, to: number): void {
    const items = this.assembler.messages.items;
    const sums = this.committedSums;
    for (let index = from; index < to; index++) {
      const message = items[index]!;
      const startsTurn = sums.add(message, index);
      if (!this.settings.providerOutput) continue;
      this.pushProvider(this.providerMessages, message, index > 0 ? items[index - 1]!.role : undefined);
      if (startsTurn) sums.providerAfterFirst.push(this.providerMessages.length);
    }
  }

  private finish(budget: RenderBudget, leading: readonly ProviderMessage[]): Rendering {
    const { profile, thinking } = this.settings;
    const items = this.assembler.messages.items;
    const committed = this.committedSums;
    const tail = committed.continued();
    for (let index = this.assembler.messages.committed; index < items.length; index++) {
      tail.add(items[index]!, index);
    }
    const cut = chooseBudgetCut(budgetView(items, committed, tail), transcriptTokens(budget));
    const first = cut.droppedMessages;
    const thinkingDisabled = mustDisableThinking(items, profile, thinking, first);

    const allMessages = this.assembler.messages.snapshot();
    const keptMessages = () => {
      const kept = allMessages().slice(first);
      if (cut.firstKept !== undefined) kept[0] = cut.firstKept;
      return kept;
    };
    const droppedSoFar = (list: "callsBefore" | "syntheticBefore") =>
      cut.droppedTurns === 0 ? 0 : turnValue(committed, tail, list, cut.droppedTurns);
    const counts: RenderCounts = {
      calls: this.index.callOrder.length,
      emittedCalls: tail.calls - droppedSoFar("callsBefore"),
      syntheticResults: tail.synthetic - droppedSoFar("syntheticBefore"),
      dedupe: this.index.dedupeCount,
      duplicateCalls: this.index.duplicateCalls.length,
      orphanResults: this.index.orphanCount,
      keptIds: this.index.projector.kept,
      generatedIds: this.index.projector.generated,
      droppedTurns: cut.droppedTurns,
    };
    const request =
      this.settings.providerOutput && !thinkingDisabled ? this.providerOutput(cut, leading) : undefined;
    return {
      cut,
      counts,
      thinkingDisabled,
      keptMessages,
      providerMessages: request?.messages,
      release: request?.release ?? doNothing,
      lazy: lazyDiagnostics({
        profile,
        thinkingRequested: thinking,
        budget,
        cut,
        records: this.recordsNow(),
        keptMessages,
        droppedCallIds: () => callIdsOf(allMessages().slice(0, first)),
      }),
      reordered: this.reordered,
    };
  }

  /**
   * The request's provider messages: `leading`, then the committed ones from the cut on, then the
   * tail's — in one copy, or none when nothing was cut and the previous request was released.
   */
  private providerOutput(cut: BudgetCut, leading: readonly ProviderMessage[]): LentMessages {
    const items = this.assembler.messages.items;
    const committed = this.assembler.messages.committed;
    const first = cut.droppedMessages;
    const head: ProviderMessage[] = leading.slice();
    let from = first;
    let committedFrom = 0;
    if (cut.firstKept !== undefined) {
      this.pushProvider(head, cut.firstKept, undefined);
      from = first + 1;
      if (from < committed) committedFrom = this.committedSums.providerAfterFirst[cut.droppedTurns]!;
    }
    let kept: readonly ProviderMessage[] = [];
    if (from < committed) {
      kept = committedFrom === 0 ? this.providerMessages : this.providerMessages.slice(committedFrom);
    }
    // The tail's messages go to a short list that starts with the message before them, which a tail
    // message may replace (Anthropic's user text joins the tool results before it; a leading message
    // is an OpenAI format's, and nothing joins it).
    const before =
      kept.length > 0 ? kept[kept.length - 1] : cut.firstKept !== undefined ? head.pop() : undefined;
    const tail: ProviderMessage[] = before === undefined ? [] : [before];
    for (let index = Math.max(from, committed); index < items.length; index++) {
      this.pushProvider(tail, items[index]!, index > first ? items[index - 1]!.role : undefined);
    }
    const lastRole = items.length > first ? items[items.length - 1]!.role : undefined;
    const closing = closingMessage(lastRole, this.settings.profile.quirks);
    if (closing !== undefined) this.pushProvider(tail, closing, lastRole);
    if (kept.length === 0) return { messages: head.concat(tail), release: doNothing };
    if (cut.firstKept === undefined) return this.requestArray.build(leading, kept, tail);
    // the request's one copy: it must not share the cache's growing array
    return { messages: joinedRequest(head, kept, tail), release: doNothing };
  }

  /** The passes' lists as they stand now, built later on demand. */
  private recordsNow(): () => PassRecords {
    const { index, assembler, reordered } = this;
    const { projector } = index;
    const blockCount = index.blockCount;
    const callCount = index.callOrder.length;
    const duplicateCount = index.duplicateCalls.length;
    const renamedCount = index.renamedTools.length;
    const idProjection = { kept: projector.kept, generated: projector.generated };
    const movedBlocks = assembler.movedBlocks.snapshot();
    const droppedThinking = assembler.droppedThinking.snapshot();
    const droppedText = assembler.droppedText.snapshot();
    const coercedInputs = assembler.coercedInputs.snapshot();
    const emptyResults = assembler.emptyResults.snapshot();
    return () => ({
      callIdsSeen: index.callOrder.slice(0, callCount).map((record) => record.callId),
      idProjection,
      ...indexDiagnosticsAsOf(index, blockCount),
      duplicateCalls: index.duplicateCalls.slice(0, duplicateCount),
      movedBlocks: movedBlocks(),
      droppedThinking: droppedThinking(),
      droppedText: droppedText(),
      renamedTools: index.renamedTools.slice(0, renamedCount),
      coercedInputs: coercedInputs(),
      emptyResults: emptyResults(),
      reordered,
    });
  }
}

/** Shape quirks, then the provider's message shape, one rendered message at a time. */
function providerPusher(profile: ProviderProfile): PushProviderMessage {
  const push: PushProviderMessage =
    profile.format === "anthropic-messages"
      ? (output, message, previousRole) =>
          pushAnthropicMessage(output as MessageParam[], message, previousRole)
      : (output, message) => pushOpenAIChatMessages(output as ChatCompletionMessageParam[], message, profile);
  if (!hasShapeQuirks(profile.quirks)) return push;
  return (output, message, previousRole) => {
    if (!reshapes(message, previousRole, profile.quirks)) return push(output, message, previousRole);
    const shaped: RenderedMessage[] = [];
    pushShaped(shaped, message, previousRole, profile.quirks);
    let role = previousRole;
    for (const part of shaped) {
      push(output, part, role);
      role = part.role;
    }
  };
}

/**
 * The same stored block, read again (a store may hand out new objects for the same rows): its place,
 * turn and time, and its content — one block, so comparing its text costs next to nothing.
 */
function sameBlock(left: HistoryBlock, right: HistoryBlock): boolean {
  if (
    left.kind !== right.kind ||
    left.role !== right.role ||
    left.position !== right.position ||
    left.turnId !== right.turnId ||
    left.createdAt !== right.createdAt
  ) {
    return false;
  }
  switch (left.kind) {
    case "text":
      return left.text === (right as typeof left).text;
    case "thinking": {
      const other = right as typeof left;
      return (
        left.text === other.text && left.signature === other.signature && left.redacted === other.redacted
      );
    }
    case "tool_call":
      return left.callId === (right as typeof left).callId && left.name === (right as typeof left).name;
    case "tool_response": {
      const other = right as typeof left;
      return left.callId === other.callId && left.status === other.status && left.result === other.result;
    }
  }
}
