/**
 * The SQLite side of the history store: every statement (prepared once), the write operations a
 * batch is made of, and the mapping between rows and the canonical model.
 */
import type { Database, Statement } from "better-sqlite3";
import { withFields } from "../objects.js";
import type {
  BlockContent,
  HistoryBlock,
  ToolCallBlock,
  ToolResponseBlock,
  TurnRecord,
  TurnStatus,
} from "./model.js";

export type BlockRow = {
  session_id: string;
  position: number;
  turn_id: string;
  role: HistoryBlock["role"];
  kind: HistoryBlock["kind"];
  call_id: string | null;
  tool_name: string | null;
  status: string | null;
  content: string;
  response_position: number | null;
  created_at: number;
};

export type SessionRow = {
  id: string;
  agent_id: string;
  created_at: number;
  updated_at: number;
  principal: string | null;
  step_mode: number;
  next_position: number;
  title: string | null;
};

/** A session row as the owner's list reads it: with its number of turns. */
export type SessionSummaryRow = SessionRow & { turn_count: number };

export type TurnRow = {
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
  input_tokens: number | null;
  output_tokens: number | null;
};

/** One write of a batch; a batch runs its writes in order, in one transaction. */
export type WriteOp =
  | {
      kind: "session";
      id: string;
      agentId: string;
      at: number;
      principal: string | null;
      title: string | null;
    }
  | { kind: "title"; id: string; title: string }
  | { kind: "step_mode"; id: string; enabled: boolean; at: number }
  | {
      kind: "turn";
      id: string;
      sessionId: string;
      agentId: string;
      provider: string;
      model: string;
      startedAt: number;
      parentTurnId: string | null;
      depth: number;
    }
  | { kind: "block"; block: HistoryBlock; content: string; responsePosition: number | null }
  | { kind: "position"; sessionId: string; next: number; at: number }
  | {
      kind: "end_turn";
      turnId: string;
      status: string;
      stopReason: string | null;
      abortReason: string | null;
      endedAt: number;
      inputTokens: number | null;
      outputTokens: number | null;
    }
  | { kind: "event"; turnId: string; seq: number; type: string; at: number; payload: string }
  | {
      kind: "trace";
      turnId: string;
      seq: number;
      at: number;
      decisionKind: string;
      callId: string | null;
      toolName: string | null;
      detail: string;
    };

/** Session columns with the session's number of turns. */
const SELECT_SESSION_SUMMARY = `SELECT *, (SELECT COUNT(*) FROM turns WHERE session_id = sessions.id) AS turn_count
  FROM sessions`;

/** Turn columns; a running turn's call count is counted live, an ended one's is the one recorded. */
const SELECT_TURN = `SELECT id, session_id, agent_id, provider, model, status, stop_reason, abort_reason, started_at,
    ended_at, parent_turn_id, depth, input_tokens, output_tokens, CASE WHEN status = 'running'
      THEN (SELECT COUNT(*) FROM history_blocks WHERE turn_id = turns.id AND kind = 'tool_call')
      ELSE tool_call_count END AS tool_call_count
  FROM turns`;

export type Statements = Record<
  | "insertSession"
  | "updateStepMode"
  | "updateTitle"
  | "selectSessionSummary"
  | "selectFirstSessions"
  | "selectSessionsAfter"
  | "selectTurnPosition"
  | "selectNewestTurns"
  | "selectTurnsBefore"
  | "selectTurnBlocks"
  | "deleteSessionEvents"
  | "deleteSessionTrace"
  | "detachChildTurns"
  | "deleteSessionBlocks"
  | "deleteSessionTurns"
  | "deleteSession"
  | "selectSession"
  | "updateSessionPosition"
  | "insertTurn"
  | "selectTurn"
  | "selectTurns"
  | "selectSessionTurns"
  | "selectRunningTurns"
  | "finishTurn"
  | "insertBlock"
  | "selectHistory"
  | "insertEvent"
  | "selectEvents"
  | "selectLastSeq"
  | "insertTrace"
  | "selectLastTraceSeq"
  | "selectTrace"
  | "ping",
  Statement
>;

export function prepareStatements(db: Database): Statements {
  const prepare = (sql: string): Statement => db.prepare(sql);
  return {
    insertSession: prepare(
      "INSERT INTO sessions (id, agent_id, created_at, updated_at, principal, title) VALUES (?, ?, ?, ?, ?, ?)",
    ),
    updateStepMode: prepare("UPDATE sessions SET step_mode = ?, updated_at = ? WHERE id = ?"),
    updateTitle: prepare("UPDATE sessions SET title = ? WHERE id = ?"),
    selectSessionSummary: prepare(`${SELECT_SESSION_SUMMARY} WHERE id = ?`),
    // newest activity first; `principal IS ?` matches NULL (auth off) too; index sessions_by_owner_and_activity
    selectFirstSessions: prepare(
      `${SELECT_SESSION_SUMMARY} WHERE principal IS @principal ORDER BY updated_at DESC, id DESC LIMIT @limit`,
    ),
    selectSessionsAfter: prepare(
      `${SELECT_SESSION_SUMMARY} WHERE principal IS @principal
         AND (updated_at < @updatedAt OR (updated_at = @updatedAt AND id < @id))
       ORDER BY updated_at DESC, id DESC LIMIT @limit`,
    ),
    selectTurnPosition: prepare("SELECT started_at, rowid FROM turns WHERE id = ? AND session_id = ?"),
    selectNewestTurns: prepare(
      `${SELECT_TURN} WHERE session_id = @sessionId ORDER BY started_at DESC, rowid DESC LIMIT @limit`,
    ),
    selectTurnsBefore: prepare(
      `${SELECT_TURN} WHERE session_id = @sessionId
         AND (started_at < @startedAt OR (started_at = @startedAt AND rowid < @rowid))
       ORDER BY started_at DESC, rowid DESC LIMIT @limit`,
    ),
    selectTurnBlocks: prepare(
      `SELECT * FROM history_blocks WHERE session_id = ?
         AND turn_id IN (SELECT value FROM json_each(?)) ORDER BY position`,
    ),
    selectSession: prepare("SELECT * FROM sessions WHERE id = ?"),
    updateSessionPosition: prepare("UPDATE sessions SET next_position = ?, updated_at = ? WHERE id = ?"),
    insertTurn: prepare(
      `INSERT INTO turns (id, session_id, agent_id, provider, model, status, started_at, parent_turn_id, depth)
       VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?)`,
    ),
    selectTurn: prepare(`${SELECT_TURN} WHERE id = ?`),
    // listTurns: a session's turns (index turns_by_session), the running ones (index turns_running,
    // which start-up recovery reads), or every turn with the status asked for (a scan)
    selectTurns: prepare(
      `${SELECT_TURN} WHERE (@status IS NULL OR status = @status) ORDER BY started_at, rowid`,
    ),
    selectSessionTurns: prepare(
      `${SELECT_TURN} WHERE session_id = @sessionId AND (@status IS NULL OR status = @status)
       ORDER BY started_at, rowid`,
    ),
    selectRunningTurns: prepare(`${SELECT_TURN} WHERE status = 'running' ORDER BY started_at, rowid`),
    finishTurn: prepare(
      `UPDATE turns SET status = ?, stop_reason = ?, abort_reason = ?, ended_at = ?, input_tokens = ?, output_tokens = ?,
         tool_call_count = (SELECT COUNT(*) FROM history_blocks WHERE turn_id = ? AND kind = 'tool_call')
       WHERE id = ? AND status = 'running'`,
    ),
    insertBlock: prepare(
      `INSERT OR IGNORE INTO history_blocks
         (session_id, position, turn_id, role, kind, call_id, tool_name, status, content, response_position, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    selectHistory: prepare("SELECT * FROM history_blocks WHERE session_id = ? ORDER BY position"),
    insertEvent: prepare("INSERT INTO turn_events (turn_id, seq, type, at, payload) VALUES (?, ?, ?, ?, ?)"),
    selectEvents: prepare("SELECT payload FROM turn_events WHERE turn_id = ? AND seq > ? ORDER BY seq"),
    selectLastSeq: prepare("SELECT MAX(seq) AS seq FROM turn_events WHERE turn_id = ?"),
    insertTrace: prepare(`INSERT INTO turn_trace ${TRACE_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?)`),
    selectLastTraceSeq: prepare("SELECT MAX(seq) AS seq FROM turn_trace WHERE turn_id = ?"),
    selectTrace: prepare("SELECT * FROM turn_trace WHERE turn_id = ? ORDER BY seq"),
    ping: prepare("SELECT 1 AS ok"),
    // deleting a session: its turns' events and trace, its blocks, its turns, then the session
    deleteSessionEvents: prepare(
      "DELETE FROM turn_events WHERE turn_id IN (SELECT id FROM turns WHERE session_id = ?)",
    ),
    deleteSessionTrace: prepare(
      "DELETE FROM turn_trace WHERE turn_id IN (SELECT id FROM turns WHERE session_id = ?)",
    ),
    // a child turn (in its own session) outlives its deleted parent, no longer linked to it
    detachChildTurns: prepare(
      `UPDATE turns SET parent_turn_id = NULL WHERE session_id != @sessionId
         AND parent_turn_id IN (SELECT id FROM turns WHERE session_id = @sessionId)`,
    ),
    deleteSessionBlocks: prepare("DELETE FROM history_blocks WHERE session_id = ?"),
    deleteSessionTurns: prepare("DELETE FROM turns WHERE session_id = ?"),
    deleteSession: prepare("DELETE FROM sessions WHERE id = ?"),
  };
}

/** Most rows per multi-row INSERT: a batch's events and blocks go in as few statements as this allows. */
const MAX_ROWS_PER_INSERT = 64;

const EVENT_COLUMNS = "(turn_id, seq, type, at, payload)";
const TRACE_COLUMNS = "(turn_id, seq, at, kind, call_id, tool_name, detail)";
const BLOCK_COLUMNS =
  "(session_id, position, turn_id, role, kind, call_id, tool_name, status, content, response_position, created_at)";

/**
 * Multi-row INSERTs for events, blocks and trace rows: the statement for a number of rows, prepared on
 * first use.
 */
export type ChunkStatements = {
  events: (rows: number) => Statement;
  blocks: (rows: number) => Statement;
  traces: (rows: number) => Statement;
};

export function prepareChunkStatements(db: Database): ChunkStatements {
  const byRows = (insert: string, columns: number) => {
    const statements = new Map<number, Statement>();
    const row = `(${Array.from({ length: columns }, () => "?").join(", ")})`;
    return (rows: number): Statement => {
      let statement = statements.get(rows);
      if (!statement) {
        statement = db.prepare(`${insert} VALUES ${Array.from({ length: rows }, () => row).join(", ")}`);
        statements.set(rows, statement);
      }
      return statement;
    };
  };
  return {
    events: byRows(`INSERT INTO turn_events ${EVENT_COLUMNS}`, 5),
    blocks: byRows(`INSERT OR IGNORE INTO history_blocks ${BLOCK_COLUMNS}`, 11),
    traces: byRows(`INSERT INTO turn_trace ${TRACE_COLUMNS}`, 7),
  };
}

type EventOp = Extract<WriteOp, { kind: "event" }>;
type BlockOp = Extract<WriteOp, { kind: "block" }>;
type TraceOp = Extract<WriteOp, { kind: "trace" }>;

function eventParams(op: EventOp): unknown[] {
  return [op.turnId, op.seq, op.type, op.at, op.payload];
}

function traceParams(op: TraceOp): unknown[] {
  return [op.turnId, op.seq, op.at, op.decisionKind, op.callId, op.toolName, op.detail];
}

function blockParams(op: BlockOp): unknown[] {
  const { block } = op;
  return [
    block.sessionId,
    block.position,
    block.turnId,
    block.role,
    block.kind,
    "callId" in block ? block.callId : null,
    "name" in block ? block.name : null,
    block.kind === "tool_response" ? block.status : null,
    op.content,
    op.responsePosition,
    block.createdAt,
  ];
}

/**
 * Writes one batch (call it inside a transaction). Rows go in dependency order — sessions, turns,
 * blocks, the sessions' next positions (the last of each session only), step-mode switches, titles and
 * turn ends, events, trace — and events, blocks and trace rows in multi-row INSERTs. A row that fails is
 * reported and costs only itself.
 */
export function writeBatch(
  statements: Statements,
  chunks: ChunkStatements,
  ops: readonly WriteOp[],
  onError: (error: unknown, row: string) => void,
): void {
  const first: WriteOp[] = [];
  const blocks: BlockOp[] = [];
  const positions = new Map<string, WriteOp>();
  const updates: WriteOp[] = [];
  const events: EventOp[] = [];
  const traces: TraceOp[] = [];
  for (const op of ops) {
    switch (op.kind) {
      case "session":
      case "turn":
        first.push(op);
        break;
      case "block":
        blocks.push(op);
        break;
      case "position":
        positions.set(op.sessionId, op);
        break;
      case "step_mode":
      case "title":
      case "end_turn":
        updates.push(op);
        break;
      case "event":
        events.push(op);
        break;
      case "trace":
        traces.push(op);
        break;
    }
  }
  const one = (op: WriteOp) => {
    try {
      runWrite(statements, op);
    } catch (error) {
      onError(error, `${op.kind} row`);
    }
  };
  first.forEach(one);
  insertChunked(blocks, chunks.blocks, blockParams, one);
  positions.forEach(one);
  updates.forEach(one);
  insertChunked(events, chunks.events, eventParams, one);
  insertChunked(traces, chunks.traces, traceParams, one);
}

function insertChunked<Op extends WriteOp>(
  rows: readonly Op[],
  statementFor: (rows: number) => Statement,
  params: (op: Op) => unknown[],
  one: (op: WriteOp) => void,
): void {
  for (let index = 0; index < rows.length; index += MAX_ROWS_PER_INSERT) {
    const chunk = rows.slice(index, index + MAX_ROWS_PER_INSERT);
    if (chunk.length === 1) {
      one(chunk[0] as Op);
      continue;
    }
    try {
      statementFor(chunk.length).run(chunk.flatMap(params));
    } catch {
      // one bad row fails its whole statement: write the chunk row by row to keep the others
      chunk.forEach(one);
    }
  }
}

/** Runs one write of a batch (inside the batch's transaction). */
export function runWrite(statements: Statements, op: WriteOp): void {
  switch (op.kind) {
    case "session":
      statements.insertSession.run(op.id, op.agentId, op.at, op.at, op.principal, op.title);
      return;
    case "title":
      statements.updateTitle.run(op.title, op.id);
      return;
    case "step_mode":
      statements.updateStepMode.run(op.enabled ? 1 : 0, op.at, op.id);
      return;
    case "turn":
      statements.insertTurn.run(
        op.id,
        op.sessionId,
        op.agentId,
        op.provider,
        op.model,
        op.startedAt,
        op.parentTurnId,
        op.depth,
      );
      return;
    case "block":
      statements.insertBlock.run(blockParams(op));
      return;
    case "position":
      statements.updateSessionPosition.run(op.next, op.at, op.sessionId);
      return;
    case "end_turn":
      statements.finishTurn.run(
        op.status,
        op.stopReason,
        op.abortReason,
        op.endedAt,
        op.inputTokens,
        op.outputTokens,
        op.turnId,
        op.turnId,
      );
      return;
    case "event":
      statements.insertEvent.run(eventParams(op));
      return;
    case "trace":
      statements.insertTrace.run(traceParams(op));
      return;
  }
}

/** The block fields stored as JSON (everything not already a column). */
export function blockPayload(block: BlockContent): Record<string, unknown> {
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

export function toHistoryBlock(row: BlockRow): HistoryBlock {
  const payload = JSON.parse(row.content) as Record<string, unknown>;
  // Made as a live session makes its blocks (the content in the order the turn writes it, then the
  // place, with `withFields`), so a session read back shares hidden classes with one that grew here.
  const place = {
    sessionId: row.session_id,
    turnId: row.turn_id,
    position: row.position,
    createdAt: row.created_at,
  };
  switch (row.kind) {
    case "text":
      return withFields(
        { kind: "text" as const, role: row.role as "user" | "assistant", text: payload.text as string },
        place,
      );
    case "thinking": {
      const thinking: BlockContent & { kind: "thinking" } = {
        kind: "thinking",
        role: "assistant",
        text: payload.text as string,
      };
      if (payload.signature !== undefined) thinking.signature = payload.signature as string;
      if (payload.provider !== undefined) thinking.provider = payload.provider as string;
      if (payload.model !== undefined) thinking.model = payload.model as string;
      return withFields(thinking, place);
    }
    case "tool_call": {
      // the turn writes kind, role, callId, providerCallId, name, input: this builds them in that order
      const call = { kind: "tool_call", role: "assistant", callId: row.call_id } as Record<string, unknown>;
      if (payload.providerCallId !== undefined) call.providerCallId = payload.providerCallId;
      call.name = row.tool_name;
      call.input = payload.input;
      return withFields(call as unknown as ToolCallBlock, place);
    }
    case "tool_response":
      return withFields(
        {
          kind: "tool_response" as const,
          role: "tool" as const,
          callId: row.call_id as string,
          name: row.tool_name as string,
          status: row.status as ToolResponseBlock["status"],
          result: payload.result as string,
          isError: payload.isError as boolean,
        },
        place,
      );
  }
}

export function toTurnRecord(row: TurnRow): TurnRecord {
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
    usage:
      row.input_tokens === null || row.output_tokens === null
        ? null
        : { inputTokens: row.input_tokens, outputTokens: row.output_tokens },
  };
}
