/**
 * The `HistoryStore` interface: the only path by which anything is written to history or the event
 * log. Implementations validate, are idempotent per tool-call id, and run turn-boundary writes in one
 * transaction.
 */
import type { TurnEvent } from "../events.js";
import type { Decision, TraceEntry } from "../observability/decision.js";
import type {
  BlockContent,
  HistoryBlock,
  SessionRecord,
  SessionSummary,
  TokenUsage,
  ToolResponseBlock,
  TurnRecord,
  TurnStatus,
} from "./model.js";

export type NewTurn = {
  id: string;
  sessionId: string;
  agentId: string;
  provider: string;
  model: string;
  startedAt: number;
  userMessage: string;
  /** Set for a child turn run by a tool of its parent. */
  parentTurnId?: string;
  depth?: number;
};

export type TurnOutcome = {
  status: Exclude<TurnStatus, "running">;
  stopReason?: string;
  abortReason?: string;
  endedAt?: number;
  /** Tokens the provider reported over the turn's inferences (kept on the turn record). */
  usage?: TokenUsage;
};

/** Where a page of sessions starts: after this one in newest-activity-first order. */
export type SessionPosition = { updatedAt: number; id: string };

/** One page of an owner's sessions; `next` is where the following page starts (none: last page). */
export type SessionPage = { sessions: SessionSummary[]; next: SessionPosition | null };

/** The newest turns of a page of history and their blocks; `nextBefore` pages on to older turns. */
export type TurnPage = { turns: TurnRecord[]; blocks: HistoryBlock[]; nextBefore: string | null };

/** Longest automatic session title (the first user message is cut to it). */
export const AUTOMATIC_TITLE_CHARS = 80;

/** A call stored without a response yet. */
export type OpenCall = { callId: string; name: string };

/** Makes the synthetic response that closes an open call. */
export type CloseOpenCall = (call: OpenCall) => Omit<ToolResponseBlock, "kind" | "role" | "callId" | "name">;

export interface HistoryStore {
  createSession(id: string, agentId: string, principal?: string | null, title?: string): SessionRecord;
  /** The owner's sessions, newest activity first (`updatedAt`, then id), `limit` at most, after `after`. */
  listSessions(principal: string | null, limit: number, after?: SessionPosition): SessionPage;
  /** A session with its turn count, undefined when there is no such session. */
  getSessionSummary(id: string): SessionSummary | undefined;
  /** Sets the session's title; false when there is no such session. */
  renameSession(id: string, title: string): boolean;
  /**
   * Removes the session with its turns, history, events and trace, in one transaction, and forgets
   * it in memory. False when there is no such session; throws while one of its turns is running here.
   */
  deleteSession(id: string): boolean;
  /**
   * The session's newest `limit` turns that started before turn `before` (all turns when absent),
   * oldest first, with their blocks. Undefined when `before` is not a turn of this session.
   */
  pageTurns(sessionId: string, limit: number, before?: string): TurnPage | undefined;
  setSessionStepMode(id: string, enabled: boolean): void;
  getSession(id: string): SessionRecord | undefined;
  /**
   * The principal owning a session (null when auth was off), undefined when there is no such session.
   * Always asks the database, so a known and an unknown id cost the same (ownership checks use it).
   */
  sessionOwner(id: string): string | null | undefined;
  /** Records the turn as running and its user message, in one transaction. */
  beginTurn(turn: NewTurn): void;
  /** Stores one assistant message (text, thinking, calls) and reserves a response slot per call. */
  appendAssistant(sessionId: string, turnId: string, blocks: BlockContent[]): void;
  /** Stores a call's result; false (and nothing written) when the call already has one. */
  recordToolResult(sessionId: string, turnId: string, response: ToolResponseBlock): boolean;
  openCalls(turnId: string): OpenCall[];
  /**
   * Ends a running turn in one transaction: closes its open calls with the synthetic responses
   * `closeOpen` makes (when given) and records the outcome. Returns the responses written; a turn
   * that is not running is left as it is.
   */
  endTurn(turnId: string, outcome: TurnOutcome, closeOpen?: CloseOpenCall): ToolResponseBlock[];
  /** Queues one event of a turn's log; it is durable once the callbacks of `afterCommit` run. */
  appendEvent(event: TurnEvent): void;
  /** Runs `callback` once every write made so far is committed (events are sent only then). */
  afterCommit(callback: () => void): void;
  /** Commits what is queued now instead of at the end of the tick (a turn's end does this). */
  flush(): void;
  /**
   * The turn's events after `afterSeq`; with `maxRuns`, a page: those of at most `maxRuns` of the runs
   * the log is stored in (a run is the events of one commit) — read on after its last event until a
   * page is empty.
   */
  listEvents(turnId: string, afterSeq?: number, maxRuns?: number): TurnEvent[];
  lastEventSeq(turnId: string): number;
  /** Appends one decision to the turn's trace (it may be written in a later batch; reads see it). */
  appendTrace(turnId: string, decision: Decision): void;
  listTrace(turnId: string): TraceEntry[];
  getTurn(turnId: string): TurnRecord | undefined;
  listTurns(filter?: { status?: TurnStatus; sessionId?: string }): TurnRecord[];
  /** The session's history in position order; a live session's array is shared: do not change it. */
  getHistory(sessionId: string): readonly HistoryBlock[];
  /**
   * False while writes whose commit failed (a full disk, an I/O error) are kept for a retry: the store
   * cannot take writes now, and no turn or session should start until it can.
   */
  acceptsWrites(): boolean;
  isReachable(): boolean;
  close(): void;
}
