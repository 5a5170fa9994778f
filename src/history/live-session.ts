/**
 * A session's canonical history held in memory while it is in use: the blocks in position order, the
 * next free position, and every call's reserved response slot. The store writes through it to the
 * database, so an inference reads its history from here instead of re-reading and re-parsing rows.
 *
 * Positions work as in the database: storing an assistant message reserves one position per call,
 * right after the message, for the call's response; a response lands in its slot whenever it comes,
 * so the history reads back in call order however the calls finish.
 */
import { withFields } from "../objects.js";
import type { BlockContent, HistoryBlock, SessionRecord, ToolResponseBlock } from "./model.js";

/** A stored call and the position reserved for its response. */
export type CallSlot = { turnId: string; name: string; responsePosition: number; answered: boolean };

export class LiveSession {
  /** Stored blocks in position order (reserved slots that are still empty are absent). */
  private readonly blocks: HistoryBlock[] = [];
  private readonly calls = new Map<string, CallSlot>();
  /** Unanswered calls by turn, in call order. */
  private readonly open = new Map<string, Map<string, CallSlot>>();

  readonly sessionId: string;
  /**
   * Characters of its blocks as stored (their serialised payloads), kept up to date by the store: about
   * what holding this session in memory costs.
   */
  storedCharacters = 0;

  /** `record` is the session's own record; the store keeps its step mode and times current. */
  constructor(
    readonly record: SessionRecord,
    private next: number,
  ) {
    this.sessionId = record.id;
  }

  /** Rebuilds a session from its stored blocks (in position order) and the reserved slot of each call. */
  static restore(
    record: SessionRecord,
    nextPosition: number,
    stored: readonly { block: HistoryBlock; responsePosition: number | null }[],
  ): LiveSession {
    const session = new LiveSession(record, nextPosition);
    for (const { block, responsePosition } of stored) {
      session.blocks.push(block);
      if (block.kind === "tool_call" && responsePosition !== null) {
        session.addCall(block.callId, {
          turnId: block.turnId,
          name: block.name,
          responsePosition,
          answered: false,
        });
      }
    }
    for (const { block } of stored) {
      if (block.kind === "tool_response") session.markAnswered(block.callId);
    }
    return session;
  }

  get nextPosition(): number {
    return this.next;
  }

  /** The history as it stands; the array is the live one and must not be changed by the caller. */
  get history(): readonly HistoryBlock[] {
    return this.blocks;
  }

  /**
   * Appends one message's blocks and reserves a response slot per call. Returns the stored blocks
   * with the reserved position of each call (null for other blocks). Throws, storing nothing, when a
   * call id is already used in this session.
   */
  append(
    turnId: string,
    contents: readonly BlockContent[],
    at: number,
  ): { block: HistoryBlock; responsePosition: number | null }[] {
    const seen = new Set<string>();
    let callCount = 0;
    for (const content of contents) {
      if (content.kind !== "tool_call") continue;
      if (this.calls.has(content.callId) || seen.has(content.callId)) {
        throw new Error(`Tool call ${content.callId} is already stored in session ${this.sessionId}`);
      }
      seen.add(content.callId);
      callCount++;
    }
    let position = this.next;
    let responsePosition = position + contents.length;
    const stored: { block: HistoryBlock; responsePosition: number | null }[] = [];
    for (const content of contents) {
      const block = withFields(content, {
        sessionId: this.sessionId,
        turnId,
        position: position++,
        createdAt: at,
      });
      const reserved = content.kind === "tool_call" ? responsePosition++ : null;
      if (content.kind === "tool_call" && reserved !== null) {
        this.addCall(content.callId, {
          turnId,
          name: content.name,
          responsePosition: reserved,
          answered: false,
        });
      }
      this.blocks.push(block as HistoryBlock);
      stored.push({ block: block as HistoryBlock, responsePosition: reserved });
    }
    this.next = position + callCount;
    return stored;
  }

  /**
   * Puts a call's response in its reserved slot. Returns the stored block, or undefined when the call
   * already has a response (the first one stays). Throws when the session has no such call.
   */
  respond(turnId: string, response: ToolResponseBlock, at: number): HistoryBlock | undefined {
    const slot = this.calls.get(response.callId);
    if (!slot) throw new Error(`No tool call ${response.callId} in session ${this.sessionId}`);
    if (slot.answered) return undefined;
    this.markAnswered(response.callId);
    const block: HistoryBlock = withFields(response, {
      sessionId: this.sessionId,
      turnId,
      position: slot.responsePosition,
      createdAt: at,
    });
    // Responses land near the end (the slots of the newest message), so the scan is short.
    let index = this.blocks.length;
    while (index > 0 && (this.blocks[index - 1] as HistoryBlock).position > block.position) index--;
    this.blocks.splice(index, 0, block);
    return block;
  }

  /** The turn's calls that have no response yet, in call order. */
  openCalls(turnId: string): { callId: string; name: string }[] {
    const open = this.open.get(turnId);
    if (!open) return [];
    return [...open].map(([callId, slot]) => ({ callId, name: slot.name }));
  }

  private addCall(callId: string, slot: CallSlot): void {
    this.calls.set(callId, slot);
    let open = this.open.get(slot.turnId);
    if (!open) this.open.set(slot.turnId, (open = new Map()));
    open.set(callId, slot);
  }

  private markAnswered(callId: string): void {
    const slot = this.calls.get(callId);
    if (!slot) return;
    slot.answered = true;
    const open = this.open.get(slot.turnId);
    open?.delete(callId);
    if (open?.size === 0) this.open.delete(slot.turnId);
  }
}
