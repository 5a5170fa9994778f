/**
 * The SQLite history store: the single write boundary for sessions, turns, canonical history blocks
 * and the per-turn event log. Every write is synchronous (better-sqlite3); turn-boundary writes run
 * in one transaction, and tool results are idempotent per canonical call id.
 *
 * Tool results are written the moment they are known (so a crash loses nothing that finished), yet
 * history reads back in call order: when an assistant message with calls is stored, one position per
 * call is reserved for its response, and each response lands in its reserved slot.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import BetterSqlite3, { type Database, type Statement } from "better-sqlite3";
import type { TurnEvent } from "../events.js";
import type { Decision, TraceEntry } from "../observability/decision.js";
import { migrate } from "./migrate.js";
import type {
  BlockContent,
  HistoryBlock,
  SessionRecord,
  ToolCallBlock,
  ToolResponseBlock,
  TurnRecord,
  TurnStatus,
} from "./model.js";
import type { CloseOpenCall, HistoryStore, NewTurn, OpenCall, TurnOutcome } from "./store.js";

type BlockRow = {
  session_id: string;
  position: number;
  turn_id: string;
  role: HistoryBlock["role"];
  kind: HistoryBlock["kind"];
  call_id: string | null;
  tool_name: string | null;
  status: string | null;
  content: string;
  created_at: number;
};

type SessionRow = {
  id: string;
  agent_id: string;
  created_at: number;
  updated_at: number;
  principal: string | null;
  step_mode: number;
};

type TurnRow = {
  id: string;
  session_id: string;
  agent_id: string;
  provider: string;
  model: string;
  status: TurnStatus;
  stop_reason: string | null;
  abort_reason: string | null;
  started_at: number;
  ended_at: number | null;
  tool_call_count: number;
  parent_turn_id: string | null;
  depth: number;
};

export type SqliteStoreOptions = {
  now?: () => number;
  /** Told about a trace row that could not be written (the batch goes on without it). */
  onTraceError?: (error: unknown, turnId: string, kind: string) => void;
};

export class SqliteHistoryStore implements HistoryStore {
  readonly db: Database;
  private readonly now: () => number;
  private readonly statements: ReturnType<typeof prepareStatements>;
  private readonly pendingTrace: { turnId: string; at: number; decision: Decision }[] = [];
  private traceFlush: NodeJS.Immediate | undefined;
  private readonly onTraceError: (error: unknown, turnId: string, kind: string) => void;

  /** Opens (creating if needed) the database at `filename` and applies pending migrations. */
  constructor(filename: string, options: SqliteStoreOptions = {}) {
    if (filename !== ":memory:") mkdirSync(dirname(filename), { recursive: true });
    this.db = new BetterSqlite3(filename);
    // One process owns the database: EXCLUSIVE locking makes a second server on the same DATA_DIR fail
    // at start-up instead of both writing (and recovering each other's live turns as crashed).
    if (filename !== ":memory:") this.db.pragma("locking_mode = EXCLUSIVE");
    this.db.pragma("journal_mode = WAL");
    // NORMAL in WAL mode: a committed transaction survives a process crash (kill -9), which is the
    // failure this server must tolerate; only an OS crash or power loss may lose the last commits.
    this.db.pragma("synchronous = NORMAL");
    this.db.pragma("foreign_keys = ON");
    this.db.pragma("busy_timeout = 1000");
    migrate(this.db);
    this.now = options.now ?? Date.now;
    this.onTraceError = options.onTraceError ?? (() => {});
    this.statements = prepareStatements(this.db);
  }

  createSession(id: string, agentId: string, principal: string | null = null): SessionRecord {
    const at = this.now();
    this.statements.insertSession.run(id, agentId, at, at, principal);
    return { id, agentId, createdAt: at, updatedAt: at, principal, stepMode: false };
  }

  setSessionStepMode(id: string, enabled: boolean): void {
    this.statements.updateStepMode.run(enabled ? 1 : 0, this.now(), id);
  }

  getSession(id: string): SessionRecord | undefined {
    const row = this.statements.selectSession.get(id) as SessionRow | undefined;
    return (
      row && {
        id: row.id,
        agentId: row.agent_id,
        createdAt: row.created_at,
        updatedAt: row.updated_at,
        principal: row.principal,
        stepMode: row.step_mode === 1,
      }
    );
  }

  beginTurn(turn: NewTurn): void {
    this.db.transaction(() => {
      this.statements.insertTurn.run(
        turn.id,
        turn.sessionId,
        turn.agentId,
        turn.provider,
        turn.model,
        turn.startedAt,
        turn.parentTurnId ?? null,
        turn.depth ?? 0,
      );
      this.insertBlocks(turn.sessionId, turn.id, [{ kind: "text", role: "user", text: turn.userMessage }]);
    })();
  }

  appendAssistant(sessionId: string, turnId: string, blocks: BlockContent[]): void {
    this.db.transaction(() => this.insertBlocks(sessionId, turnId, blocks))();
  }

  recordToolResult(sessionId: string, turnId: string, response: ToolResponseBlock): boolean {
    return this.db.transaction(() => this.insertResponse(sessionId, turnId, response))();
  }

  openCalls(turnId: string): OpenCall[] {
    return (this.statements.selectOpenCalls.all(turnId) as BlockRow[]).map((row) => ({
      callId: row.call_id as string,
      name: row.tool_name as string,
    }));
  }

  closeOpenCalls(turnId: string, make: CloseOpenCall): ToolResponseBlock[] {
    return this.db.transaction(() => {
      const turn = this.statements.selectTurn.get(turnId) as TurnRow | undefined;
      return turn ? this.closeOpen(turn.session_id, turnId, make) : [];
    })();
  }

  endTurn(turnId: string, outcome: TurnOutcome, closeOpen?: CloseOpenCall): ToolResponseBlock[] {
    return this.db.transaction(() => {
      const turn = this.statements.selectTurn.get(turnId) as TurnRow | undefined;
      if (!turn || turn.status !== "running") return [];
      const closed = closeOpen ? this.closeOpen(turn.session_id, turnId, closeOpen) : [];
      this.statements.finishTurn.run(
        outcome.status,
        outcome.stopReason ?? null,
        outcome.abortReason ?? null,
        outcome.endedAt ?? this.now(),
        turnId,
        turnId,
      );
      return closed;
    })();
  }

  /** Writes a synthetic response for every open call of the turn (inside the caller's transaction). */
  private closeOpen(sessionId: string, turnId: string, make: CloseOpenCall): ToolResponseBlock[] {
    const closed: ToolResponseBlock[] = [];
    for (const call of this.openCalls(turnId)) {
      const response: ToolResponseBlock = {
        kind: "tool_response",
        role: "tool",
        callId: call.callId,
        name: call.name,
        ...make(call),
      };
      if (this.insertResponse(sessionId, turnId, response)) closed.push(response);
    }
    return closed;
  }

  appendEvent(event: TurnEvent): void {
    this.statements.insertEvent.run(event.turnId, event.seq, event.type, event.at, JSON.stringify(event));
  }

  listEvents(turnId: string, afterSeq = 0): TurnEvent[] {
    return (this.statements.selectEvents.all(turnId, afterSeq) as { payload: string }[]).map(
      (row) => JSON.parse(row.payload) as TurnEvent,
    );
  }

  lastEventSeq(turnId: string): number {
    const row = this.statements.selectLastSeq.get(turnId) as { seq: number | null };
    return row.seq ?? 0;
  }

  /**
   * Queues one decision for the turn's trace. Unlike events (persisted before they are sent), trace
   * rows are written in batches — everything recorded in one tick in one transaction — because a burst
   * of deadlines records several decisions per call and one commit each made every expiry late.
   * Reads flush first, and so does close.
   */
  appendTrace(turnId: string, decision: Decision): void {
    this.pendingTrace.push({ turnId, at: this.now(), decision });
    this.traceFlush ??= setImmediate(() => this.flushTrace());
  }

  /** Writes the queued trace rows now, in one transaction. */
  flushTrace(): void {
    clearImmediate(this.traceFlush);
    this.traceFlush = undefined;
    if (this.pendingTrace.length === 0 || !this.db.open) return;
    const entries = this.pendingTrace.splice(0);
    this.db.transaction(() => {
      for (const { turnId, at, decision } of entries) {
        const { kind, ...detail } = decision;
        try {
          this.statements.insertTrace.run({
            turnId,
            at,
            kind,
            callId: "callId" in decision ? (decision.callId ?? null) : null,
            toolName: "toolName" in decision ? decision.toolName : null,
            detail: JSON.stringify(detail),
          });
        } catch (error) {
          // one bad row (e.g. a turn that does not exist) must not cost the others
          this.onTraceError(error, turnId, kind);
        }
      }
    })();
  }

  listTrace(turnId: string): TraceEntry[] {
    this.flushTrace();
    const rows = this.statements.selectTrace.all(turnId) as {
      turn_id: string;
      seq: number;
      at: number;
      kind: string;
      detail: string;
    }[];
    return rows.map(
      (row) =>
        ({
          turnId: row.turn_id,
          seq: row.seq,
          at: row.at,
          kind: row.kind,
          ...JSON.parse(row.detail),
        }) as TraceEntry,
    );
  }

  getTurn(turnId: string): TurnRecord | undefined {
    const row = this.statements.selectTurn.get(turnId) as TurnRow | undefined;
    return row && toTurnRecord(row);
  }

  listTurns(filter: { status?: TurnStatus; sessionId?: string } = {}): TurnRecord[] {
    const rows = this.statements.selectTurns.all({
      status: filter.status ?? null,
      sessionId: filter.sessionId ?? null,
    }) as TurnRow[];
    return rows.map(toTurnRecord);
  }

  getHistory(sessionId: string): HistoryBlock[] {
    return (this.statements.selectHistory.all(sessionId) as BlockRow[]).map(toHistoryBlock);
  }

  isReachable(): boolean {
    try {
      return (this.statements.ping.get() as { ok: number }).ok === 1;
    } catch {
      return false;
    }
  }

  close(): void {
    if (!this.db.open) return;
    this.flushTrace();
    this.db.close();
  }

  private insertBlocks(sessionId: string, turnId: string, blocks: BlockContent[]): void {
    const session = this.statements.selectNextPosition.get(sessionId) as
      { next_position: number } | undefined;
    if (!session) throw new Error(`Unknown session ${sessionId}`);
    const calls = blocks.filter((block): block is ToolCallBlock => block.kind === "tool_call");
    let position = session.next_position;
    let responsePosition = position + blocks.length;
    const at = this.now();
    for (const block of blocks) {
      const reserved = block.kind === "tool_call" ? responsePosition++ : null;
      this.statements.insertBlock.run({
        sessionId,
        position: position++,
        turnId,
        role: block.role,
        kind: block.kind,
        callId: "callId" in block ? block.callId : null,
        toolName: "name" in block ? block.name : null,
        status: block.kind === "tool_response" ? block.status : null,
        content: JSON.stringify(blockPayload(block)),
        responsePosition: reserved,
        createdAt: at,
      });
    }
    this.statements.updateSessionPosition.run(position + calls.length, at, sessionId);
  }

  /** Writes a response into its call's reserved slot; false when the call already has one. */
  private insertResponse(sessionId: string, turnId: string, response: ToolResponseBlock): boolean {
    const call = this.statements.selectCall.get(sessionId, response.callId) as
      { response_position: number } | undefined;
    if (!call) throw new Error(`No tool call ${response.callId} in session ${sessionId}`);
    const result = this.statements.insertResponseBlock.run({
      sessionId,
      position: call.response_position,
      turnId,
      callId: response.callId,
      toolName: response.name,
      status: response.status,
      content: JSON.stringify(blockPayload(response)),
      createdAt: this.now(),
    });
    return result.changes === 1;
  }
}

/** An in-memory store for programs that run turns in-process: the same SQLite code, no file. */
export function createMemoryHistoryStore(options: SqliteStoreOptions = {}): SqliteHistoryStore {
  return new SqliteHistoryStore(":memory:", options);
}

/** Turn columns; a running turn's call count is counted live, an ended one's is the one recorded. */
const SELECT_TURN = `SELECT id, session_id, agent_id, provider, model, status, stop_reason, abort_reason, started_at,
    ended_at, parent_turn_id, depth, CASE WHEN status = 'running'
      THEN (SELECT COUNT(*) FROM history_blocks WHERE turn_id = turns.id AND kind = 'tool_call')
      ELSE tool_call_count END AS tool_call_count
  FROM turns`;

function prepareStatements(db: Database) {
  const prepare = (sql: string): Statement => db.prepare(sql);
  return {
    insertSession: prepare(
      "INSERT INTO sessions (id, agent_id, created_at, updated_at, principal) VALUES (?, ?, ?, ?, ?)",
    ),
    updateStepMode: prepare("UPDATE sessions SET step_mode = ?, updated_at = ? WHERE id = ?"),
    selectSession: prepare("SELECT * FROM sessions WHERE id = ?"),
    selectNextPosition: prepare("SELECT next_position FROM sessions WHERE id = ?"),
    updateSessionPosition: prepare("UPDATE sessions SET next_position = ?, updated_at = ? WHERE id = ?"),
    insertTurn: prepare(
      `INSERT INTO turns (id, session_id, agent_id, provider, model, status, started_at, parent_turn_id, depth)
       VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?)`,
    ),
    selectTurn: prepare(`${SELECT_TURN} WHERE id = ?`),
    selectTurns: prepare(
      `${SELECT_TURN} WHERE (@status IS NULL OR status = @status)
         AND (@sessionId IS NULL OR session_id = @sessionId) ORDER BY started_at, rowid`,
    ),
    finishTurn: prepare(
      `UPDATE turns SET status = ?, stop_reason = ?, abort_reason = ?, ended_at = ?,
         tool_call_count = (SELECT COUNT(*) FROM history_blocks WHERE turn_id = ? AND kind = 'tool_call')
       WHERE id = ?`,
    ),
    insertBlock: prepare(
      `INSERT INTO history_blocks
         (session_id, position, turn_id, role, kind, call_id, tool_name, status, content, response_position, created_at)
       VALUES (@sessionId, @position, @turnId, @role, @kind, @callId, @toolName, @status, @content,
               @responsePosition, @createdAt)`,
    ),
    insertResponseBlock: prepare(
      `INSERT OR IGNORE INTO history_blocks
         (session_id, position, turn_id, role, kind, call_id, tool_name, status, content, created_at)
       VALUES (@sessionId, @position, @turnId, 'tool', 'tool_response', @callId, @toolName, @status, @content,
               @createdAt)`,
    ),
    selectCall: prepare(
      "SELECT response_position FROM history_blocks WHERE session_id = ? AND kind = 'tool_call' AND call_id = ?",
    ),
    selectOpenCalls: prepare(
      `SELECT call.* FROM history_blocks AS call
       WHERE call.turn_id = ? AND call.kind = 'tool_call'
         AND NOT EXISTS (SELECT 1 FROM history_blocks AS response
                         WHERE response.session_id = call.session_id AND response.kind = 'tool_response'
                           AND response.call_id = call.call_id)
       ORDER BY call.position`,
    ),
    selectHistory: prepare("SELECT * FROM history_blocks WHERE session_id = ? ORDER BY position"),
    insertEvent: prepare("INSERT INTO turn_events (turn_id, seq, type, at, payload) VALUES (?, ?, ?, ?, ?)"),
    selectEvents: prepare("SELECT payload FROM turn_events WHERE turn_id = ? AND seq > ? ORDER BY seq"),
    selectLastSeq: prepare("SELECT MAX(seq) AS seq FROM turn_events WHERE turn_id = ?"),
    insertTrace: prepare(
      `INSERT INTO turn_trace (turn_id, seq, at, kind, call_id, tool_name, detail)
       VALUES (@turnId, (SELECT COALESCE(MAX(seq), 0) + 1 FROM turn_trace WHERE turn_id = @turnId), @at, @kind,
               @callId, @toolName, @detail)`,
    ),
    selectTrace: prepare("SELECT * FROM turn_trace WHERE turn_id = ? ORDER BY seq"),
    ping: prepare("SELECT 1 AS ok"),
  };
}

/** The block fields stored as JSON (everything not already a column). */
function blockPayload(block: BlockContent): Record<string, unknown> {
  switch (block.kind) {
    case "text":
      return { text: block.text };
    case "thinking":
      return { text: block.text, signature: block.signature, provider: block.provider, model: block.model };
    case "tool_call":
      return { input: block.input, providerCallId: block.providerCallId };
    case "tool_response":
      return { result: block.result, isError: block.isError };
  }
}

function toHistoryBlock(row: BlockRow): HistoryBlock {
  const payload = JSON.parse(row.content) as Record<string, unknown>;
  const base = {
    sessionId: row.session_id,
    turnId: row.turn_id,
    position: row.position,
    createdAt: row.created_at,
  };
  switch (row.kind) {
    case "text":
      return { ...base, kind: "text", role: row.role as "user" | "assistant", text: payload.text as string };
    case "thinking":
      return {
        ...base,
        kind: "thinking",
        role: "assistant",
        text: payload.text as string,
        ...(payload.signature === undefined ? {} : { signature: payload.signature as string }),
        ...(payload.provider === undefined ? {} : { provider: payload.provider as string }),
        ...(payload.model === undefined ? {} : { model: payload.model as string }),
      };
    case "tool_call":
      return {
        ...base,
        kind: "tool_call",
        role: "assistant",
        callId: row.call_id as string,
        name: row.tool_name as string,
        input: payload.input as Record<string, unknown>,
        ...(payload.providerCallId === undefined ? {} : { providerCallId: payload.providerCallId as string }),
      };
    case "tool_response":
      return {
        ...base,
        kind: "tool_response",
        role: "tool",
        callId: row.call_id as string,
        name: row.tool_name as string,
        status: row.status as ToolResponseBlock["status"],
        result: payload.result as string,
        isError: payload.isError as boolean,
      };
  }
}

function toTurnRecord(row: TurnRow): TurnRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    agentId: row.agent_id,
    provider: row.provider,
    model: row.model,
    status: row.status,
    stopReason: row.stop_reason,
    abortReason: row.abort_reason,
    startedAt: row.started_at,
    endedAt: row.ended_at,
    toolCallCount: row.tool_call_count,
    parentTurnId: row.parent_turn_id,
    depth: row.depth,
  };
}
