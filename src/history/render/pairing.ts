/**
 * The renderer's first pass: which tool call each canonical id means and which recorded result answers
 * it. One scan, one map keyed by canonical id, no assumption about order: a result may come before its
 * call, be recorded several times, or answer nothing. Incremental: blocks appended to a history are
 * indexed on top of what was indexed before.
 *
 * - The first tool_call block of an id is the call; later ones are dropped (never duplicated).
 * - Among results of an id the best status wins — `complete`, then `error` or `rejected` (a person
 *   refused the call), then the synthetic ones
 *   (`cancelled`, `timeout`, `interrupted`) — and among results of the same rank the first recorded.
 *   So a real result beats a synthetic one, and a `complete` result beats an earlier `error`.
 * - Results whose id has no call anywhere are orphans: dropped.
 *
 * Each call's projected id is assigned here too, batch by batch (ids.ts), as calls are first seen.
 */
import type { HistoryBlock, ToolCallBlock, ToolResponseBlock, ToolResponseStatus } from "../model.js";
import { serializeInput, type SerializedInput } from "./call-input.js";
import { IdProjector, type IdFacts, type IdHolders, type ProjectionTarget } from "./ids.js";
import type { IdFormat } from "./profiles.js";
import { createToolNameSanitizer } from "./tool-names.js";
import type { DedupeReason, RenderDiagnostics } from "./types.js";

export type CallBlock = HistoryBlock & ToolCallBlock;
export type ResultBlock = HistoryBlock & ToolResponseBlock;

/** One later result of an id compared with the result winning at the time. */
export type ResultDecision = {
  /** Array index and position of the later result. */
  index: number;
  position: number;
  /** The later result became the winner. */
  replaced: boolean;
  keptPosition: number;
  keptStatus: ToolResponseStatus;
  droppedPosition: number;
  droppedStatus: ToolResponseStatus;
  reason: DedupeReason;
};

/**
 * Everything known about one canonical call id. Fields are only ever set once, except the winner's.
 * Kept small (one is made per call on every render): what a block already holds is read from it.
 */
export class CallRecord implements ProjectionTarget {
  call: CallBlock | undefined = undefined;
  /** Array index of the call block; -1 while no call was seen. */
  callIndex = -1;
  /** The name the provider sees (sanitized). */
  name = "";
  /** The call's input as sent, its JSON and what was coerced (call-input.ts). */
  input: SerializedInput | undefined = undefined;
  projectedId = "";
  idKept = false;
  /** The call whose projected id is this record's canonical id (usually the record itself). */
  idHolder: CallRecord | undefined = undefined;
  /** The result winning so far and its array index (-1 while there is none). */
  winnerIndex = -1;
  winner: ResultBlock | undefined = undefined;
  firstResultIndex = -1;
  firstResultPosition = -1;
  /** One entry per later result of this id, in history order; undefined while there is none. */
  decisions: ResultDecision[] | undefined = undefined;

  constructor(readonly callId: string) {}

  get providerCallId(): string | undefined {
    return this.call?.providerCallId;
  }

  get idFacts(): IdFacts | undefined {
    return this.input;
  }

  get hasResult(): boolean {
    return this.winnerIndex !== -1;
  }

  setWinner(block: ResultBlock, index: number): void {
    this.winnerIndex = index;
    this.winner = block;
  }
}

/** How good a result is: a later result replaces the winner only with a strictly better rank. */
export function resultRank(status: ToolResponseStatus): number {
  if (status === "complete") return 2;
  // a rejection is a person's real answer to the call (it never ran), not a closing placeholder
  if (status === "error" || status === "rejected") return 1;
  return 0;
}

export function isRealStatus(status: ToolResponseStatus): boolean {
  return resultRank(status) > 0;
}

/** How many of the latest calls a result's id is compared with before the map is asked. */
const RECENT_CALLS = 8;

/** Canonical id lengths are kept as bits of one 32-bit number; this bit stands for every longer one. */
const LONG_ID_BIT = 31;

function lengthBit(id: string): number {
  return 1 << Math.min(id.length, LONG_ID_BIT);
}

/** What a block is to the second pass (assemble.ts). */
export const BlockStep = {
  /** Text or thinking: the second pass reads the block. */
  content: 0,
  /** The first tool_call block of its id: the next record of `callOrder`. */
  call: 1,
  /** A later tool_call block of an id: dropped. */
  duplicateCall: 2,
  result: 3,
} as const;
export type BlockStep = (typeof BlockStep)[keyof typeof BlockStep];

/** What indexing more blocks found: `conflict` and `unordered` mean only a render from scratch is right. */
export type IndexOutcome = "indexed" | "conflict" | "unordered";

/**
 * The index. It also records which call holds each projected id: on the record of the canonical id
 * equal to it when there is one — the usual projected id is the call's own canonical id, found without
 * another lookup — else in a map of its own.
 */
export class HistoryIndex implements IdHolders {
  readonly records = new Map<string, CallRecord>();
  readonly projector: IdProjector;
  /** Records in order of their first call (diagnostics.callIdsSeen). */
  readonly callOrder: CallRecord[] = [];
  /** Records in order of their first result (the order of dedupe, orphan and placement diagnostics). */
  readonly resultOrder: CallRecord[] = [];
  /**
   * What each block is to the second pass, by array index (`BlockStep`): it reads the text and
   * thinking blocks again and takes calls and results from the records, never from their blocks.
   * One byte a block, sized to the history (a growing array would be copied as it grows).
   */
  steps = new Uint8Array(0);
  readonly duplicateCalls: RenderDiagnostics["duplicateCalls"] = [];
  readonly renamedTools: RenderDiagnostics["renamedTools"] = [];
  /** Dedupe decisions about ids that have a call, and ids with results but no call. */
  dedupeCount = 0;
  orphanCount = 0;
  blockCount = 0;
  private lastPosition = Number.NEGATIVE_INFINITY;
  private readonly sanitize: (name: string) => string;
  /** Holders of projected ids that were nobody's canonical id when they were taken (generated ones). */
  private readonly otherHolders = new Map<string, ProjectionTarget>();
  /** Bit n set: some canonical id has n characters (bit `LONG_ID_BIT`: one has that many or more). */
  private callIdLengths = 0;
  /**
   * The records of the latest calls, the slot after the newest overwritten next: a result usually
   * answers one of them, and comparing a few ids costs less than a lookup in a large map, whose table
   * is rarely in the processor's cache.
   */
  private readonly recentCalls: (CallRecord | undefined)[] = new Array(RECENT_CALLS).fill(undefined);
  private recentCursor = 0;

  constructor(toolNamePattern: RegExp, idFormat: IdFormat) {
    this.sanitize = createToolNameSanitizer(toolNamePattern);
    this.projector = new IdProjector(idFormat, this);
  }

  holderOf(projectedId: string, asking: ProjectionTarget): ProjectionTarget | undefined {
    const record = this.recordNamed(projectedId, asking);
    return (
      record?.idHolder ?? (this.otherHolders.size === 0 ? undefined : this.otherHolders.get(projectedId))
    );
  }

  hold(projectedId: string, call: ProjectionTarget): void {
    const record = this.recordNamed(projectedId, call);
    if (record === undefined) this.otherHolders.set(projectedId, call);
    else record.idHolder = call as CallRecord;
  }

  /** The record whose canonical id is `id` (`call` itself when it is its own). */
  private recordNamed(id: string, call: ProjectionTarget): CallRecord | undefined {
    if (id === call.callId) return call as CallRecord;
    // Generated ids have another length than canonical ones: most lookups are settled here.
    return (this.callIdLengths & lengthBit(id)) === 0 ? undefined : this.records.get(id);
  }

  /** The record of `callId`, created when there is none yet. */
  private recordOf(callId: string): CallRecord {
    let record = this.records.get(callId);
    if (record === undefined) {
      record = new CallRecord(callId);
      this.records.set(callId, record);
      this.callIdLengths |= lengthBit(callId);
    }
    return record;
  }

  /**
   * Indexes `blocks` from `blockCount` on: all of them, or at least `stretchBlocks` of them and then
   * up to the next user text (a turn's results are recorded before the next user message), where the
   * next call goes on. Calls before array index `frozenBefore` are already rendered into messages that
   * will be reused: a block that would change one of them (a result that replaces its winner or
   * answers it at last) is a `conflict`; a block out of position order is `unordered`. Either way the
   * index is left half-updated and must be thrown away.
   */
  add(blocks: readonly HistoryBlock[], frozenBefore: number, stretchBlocks: number): IndexOutcome {
    const firstNewCall = this.callOrder.length;
    const stretchEnd = this.blockCount + stretchBlocks;
    if (this.steps.length < blocks.length) this.growSteps(blocks.length);
    const steps = this.steps;
    for (let index = this.blockCount; index < blocks.length; index++) {
      const block = blocks[index]!;
      if (index >= stretchEnd && block.kind === "text" && block.role === "user") break;
      if (block.position < this.lastPosition) return "unordered";
      this.lastPosition = block.position;
      if (block.kind === "tool_call") {
        const step = this.addCall(block, index);
        if (step === undefined) return "conflict";
        steps[index] = step;
      } else if (block.kind === "tool_response") {
        if (!this.addResult(block, index, frozenBefore)) return "conflict";
        steps[index] = BlockStep.result;
      } else {
        steps[index] = BlockStep.content;
      }
      this.blockCount = index + 1;
    }
    if (firstNewCall < this.callOrder.length) this.projector.generate(this.callOrder, firstNewCall);
    return "indexed";
  }

  /** Room for `blockCount` steps; a session's history grows a turn at a time, so room is doubled. */
  private growSteps(blockCount: number): void {
    const steps = new Uint8Array(Math.max(blockCount, this.steps.length * 2));
    steps.set(this.steps.subarray(0, this.blockCount));
    this.steps = steps;
  }

  /**
   * Indexes a tool_call block and reserves its native id while the block is at hand (the projector's
   * first phase; ids are generated once the whole batch is indexed). Undefined when that native id
   * was generated for a call of an earlier render: a conflict.
   */
  private addCall(block: CallBlock, index: number): BlockStep | undefined {
    const record = this.recordOf(block.callId);
    if (record.call !== undefined) {
      this.duplicateCalls.push({ callId: block.callId, position: block.position });
      return BlockStep.duplicateCall;
    }
    record.call = block;
    record.callIndex = index;
    record.input = serializeInput(block);
    record.name = this.sanitize(block.name);
    if (record.name !== block.name) {
      this.renamedTools.push({ callId: block.callId, from: block.name, to: record.name });
    }
    if (record.hasResult) {
      this.orphanCount--;
      this.dedupeCount += record.decisions?.length ?? 0;
    }
    this.callOrder.push(record);
    this.recentCalls[this.recentCursor] = record;
    this.recentCursor = (this.recentCursor + 1) % RECENT_CALLS;
    return this.projector.reserveNative(record) ? BlockStep.call : undefined;
  }

  /** The record of one of the latest calls whose id is `callId`, if there is one. */
  private recentRecord(callId: string): CallRecord | undefined {
    const recent = this.recentCalls;
    for (let slot = 0; slot < RECENT_CALLS; slot++) {
      const record = recent[slot];
      if (record !== undefined && record.callId === callId) return record;
    }
    return undefined;
  }

  private addResult(block: ResultBlock, index: number, frozenBefore: number): boolean {
    const record = this.recentRecord(block.callId) ?? this.recordOf(block.callId);
    const frozen = record.call !== undefined && record.callIndex < frozenBefore;
    if (!record.hasResult) {
      if (frozen) return false;
      record.setWinner(block, index);
      record.firstResultIndex = index;
      record.firstResultPosition = block.position;
      this.resultOrder.push(record);
      if (record.call === undefined) this.orphanCount++;
      return true;
    }
    const winner = record.winner!;
    const currentRank = resultRank(winner.status);
    const replaced = resultRank(block.status) > currentRank;
    if (replaced && frozen) return false;
    const reason: DedupeReason = replaced
      ? currentRank === 0
        ? "real_beats_synthetic"
        : "complete_beats_error"
      : currentRank > 0
        ? "first_real_wins"
        : "first_synthetic_wins";
    const decision: ResultDecision = {
      index,
      position: block.position,
      replaced,
      keptPosition: replaced ? block.position : winner.position,
      keptStatus: replaced ? block.status : winner.status,
      droppedPosition: replaced ? winner.position : block.position,
      droppedStatus: replaced ? winner.status : block.status,
      reason,
    };
    if (record.decisions === undefined) record.decisions = [decision];
    else record.decisions.push(decision);
    if (record.call !== undefined) this.dedupeCount++;
    if (replaced) record.setWinner(block, index);
    return true;
  }
}

/**
 * The index's diagnostics as they stood when the first `blockCount` blocks were indexed (they only
 * read fields that are set once, or entries tagged with their block index), in the order a single
 * pass reports them: dedupe decisions, results recorded before their call, orphans.
 */
export function indexDiagnosticsAsOf(
  index: HistoryIndex,
  blockCount: number,
): Pick<RenderDiagnostics, "dedupe" | "resultsBeforeCall" | "orphanResults"> {
  const dedupe: RenderDiagnostics["dedupe"] = [];
  const resultsBeforeCall: RenderDiagnostics["resultsBeforeCall"] = [];
  const orphanResults: RenderDiagnostics["orphanResults"] = [];
  for (const record of index.resultOrder) {
    if (record.firstResultIndex >= blockCount) break;
    const decisions = (record.decisions ?? []).filter((decision) => decision.index < blockCount);
    if (record.call === undefined || record.callIndex >= blockCount) {
      const positions = [record.firstResultPosition, ...decisions.map((decision) => decision.position)];
      orphanResults.push({ callId: record.callId, positions });
      continue;
    }
    let winnerIndex = record.firstResultIndex;
    let winnerPosition = record.firstResultPosition;
    for (const { index: decisionIndex, position, replaced, ...decision } of decisions) {
      dedupe.push({ callId: record.callId, ...decision });
      if (replaced) {
        winnerIndex = decisionIndex;
        winnerPosition = position;
      }
    }
    if (winnerIndex < record.callIndex) {
      resultsBeforeCall.push({ callId: record.callId, position: winnerPosition });
    }
  }
  return { dedupe, resultsBeforeCall, orphanResults };
}
