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
import { IdProjector, type IdHolders, type ProjectionTarget } from "./ids.js";
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

/** Everything known about one canonical call id. Fields are only ever set once, except the winner. */
export class CallRecord implements ProjectionTarget {
  call: CallBlock | undefined = undefined;
  /** Array index of the call block; -1 while no call was seen. */
  callIndex = -1;
  /** The name the provider sees (sanitized). */
  name = "";
  projectedId = "";
  idKept = false;
  /** The call whose projected id is this record's canonical id (usually the record itself). */
  idHolder: CallRecord | undefined = undefined;
  /** The result winning so far. */
  winner: ResultBlock | undefined = undefined;
  winnerIndex = -1;
  firstResultIndex = -1;
  firstResultPosition = -1;
  /** One entry per later result of this id, in history order; undefined while there is none. */
  decisions: ResultDecision[] | undefined = undefined;

  constructor(readonly callId: string) {}

  get providerCallId(): string | undefined {
    return this.call?.providerCallId;
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
  /** For each tool_call block, in order: its record when it is the first call of its id. */
  readonly callBlocks: (CallRecord | undefined)[] = [];
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

  constructor(toolNamePattern: RegExp, idFormat: IdFormat) {
    this.sanitize = createToolNameSanitizer(toolNamePattern);
    this.projector = new IdProjector(idFormat, this);
  }

  holderOf(projectedId: string, asking: ProjectionTarget): ProjectionTarget | undefined {
    const record = projectedId === asking.callId ? (asking as CallRecord) : this.records.get(projectedId);
    return (
      record?.idHolder ?? (this.otherHolders.size === 0 ? undefined : this.otherHolders.get(projectedId))
    );
  }

  hold(projectedId: string, call: ProjectionTarget): void {
    const record = projectedId === call.callId ? (call as CallRecord) : this.records.get(projectedId);
    if (record === undefined) this.otherHolders.set(projectedId, call);
    else record.idHolder = call as CallRecord;
  }

  /**
   * Indexes `blocks` from `blockCount` on. Calls before array index `frozenBefore` are already
   * rendered into messages that will be reused: a block that would change one of them (a result that
   * replaces its winner or answers it at last) is a `conflict`; a block out of position order is
   * `unordered`. Either way the index is left half-updated and must be thrown away.
   */
  add(blocks: readonly HistoryBlock[], frozenBefore: number): IndexOutcome {
    const firstNewCall = this.callOrder.length;
    for (let index = this.blockCount; index < blocks.length; index++) {
      const block = blocks[index]!;
      if (block.position < this.lastPosition) return "unordered";
      this.lastPosition = block.position;
      if (block.kind === "tool_call") {
        this.callBlocks.push(this.addCall(block, index));
      } else if (block.kind === "tool_response" && !this.addResult(block, index, frozenBefore)) {
        return "conflict";
      }
      this.blockCount = index + 1;
    }
    if (firstNewCall === this.callOrder.length) return "indexed";
    return this.projector.project(this.callOrder, firstNewCall) ? "indexed" : "conflict";
  }

  private addCall(block: CallBlock, index: number): CallRecord | undefined {
    let record = this.records.get(block.callId);
    if (record === undefined) {
      record = new CallRecord(block.callId);
      this.records.set(block.callId, record);
    } else if (record.call !== undefined) {
      this.duplicateCalls.push({ callId: block.callId, position: block.position });
      return undefined;
    }
    record.call = block;
    record.callIndex = index;
    record.name = this.sanitize(block.name);
    if (record.name !== block.name) {
      this.renamedTools.push({ callId: block.callId, from: block.name, to: record.name });
    }
    if (record.winner !== undefined) {
      this.orphanCount--;
      this.dedupeCount += record.decisions?.length ?? 0;
    }
    this.callOrder.push(record);
    return record;
  }

  private addResult(block: ResultBlock, index: number, frozenBefore: number): boolean {
    let record = this.records.get(block.callId);
    if (record === undefined) {
      record = new CallRecord(block.callId);
      this.records.set(block.callId, record);
    }
    const current = record.winner;
    const frozen = record.call !== undefined && record.callIndex < frozenBefore;
    if (current === undefined) {
      if (frozen) return false;
      record.winner = block;
      record.winnerIndex = index;
      record.firstResultIndex = index;
      record.firstResultPosition = block.position;
      this.resultOrder.push(record);
      if (record.call === undefined) this.orphanCount++;
      return true;
    }
    const currentRank = resultRank(current.status);
    const replaced = resultRank(block.status) > currentRank;
    if (replaced && frozen) return false;
    const kept = replaced ? block : current;
    const dropped = replaced ? current : block;
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
      keptPosition: kept.position,
      keptStatus: kept.status,
      droppedPosition: dropped.position,
      droppedStatus: dropped.status,
      reason,
    };
    if (record.decisions === undefined) record.decisions = [decision];
    else record.decisions.push(decision);
    if (record.call !== undefined) this.dedupeCount++;
    if (replaced) {
      record.winner = block;
      record.winnerIndex = index;
    }
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
