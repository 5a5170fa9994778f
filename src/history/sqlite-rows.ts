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

/** A row of history_blocks: a run of one turn's blocks, one `BlockLine` a line (migration 007). */
export type BlockRunRow = { session_id: string; turn_id: string; blocks: string };

/** One block of a run, as stored. `content` holds the fields `blockPayload` gives. */
export type BlockLine = [
  position: number,
  role: HistoryBlock["role"],
  kind: HistoryBlock["kind"],
  callId: string | null,
  toolName: string | null,
  status: string | null,
  responsePosition: number | null,
  createdAt: number,
  content: Record<string, unknown>,
];

/** A block as the store holds it: with the position reserved for its result, when it is a call. */
export type StoredBlock = { block: HistoryBlock; responsePosition: number | null };

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
      /**
       * Set by `writeBatch` (never by the store) when the same batch also moves the new session's next
       * position: the INSERT carries it, and when it was moved, instead of an UPDATE after it.
       */
      next?: number;
      updatedAt?: number;
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
  /** One event of a turn, `payload` its JSON; a batch stores a turn's events as one run (one row). */
  | { kind: "event"; turnId: string; seq: number; payload: string }
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
      THEN (SELECT COALESCE(SUM(tool_calls), 0) FROM history_blocks WHERE turn_id = turns.id)
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
      `INSERT INTO sessions (id, agent_id, created_at, updated_at, principal, title, next_position)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
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
      `SELECT session_id, turn_id, blocks FROM history_blocks WHERE session_id = ?
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
         tool_call_count = (SELECT COALESCE(SUM(tool_calls), 0) FROM history_blocks WHERE turn_id = ?)
       WHERE id = ? AND status = 'running'`,
    ),
    // history and events are stored in runs (migration 007): a row holds a turn's blocks, or its
    // events seq..last_seq, that one commit wrote, a line each
    insertBlock: prepare(`INSERT INTO history_blocks ${BLOCK_COLUMNS} VALUES (?, ?, ?, ?, ?)`),
    selectHistory: prepare(
      "SELECT session_id, turn_id, blocks FROM history_blocks WHERE session_id = ? ORDER BY position",
    ),
    insertEvent: prepare(`INSERT INTO turn_events ${EVENT_COLUMNS} VALUES (?, ?, ?, ?)`),
    // the runs from the one holding the event after @afterSeq on: a key range, however long the turn
    selectEvents: prepare(
      `SELECT payload FROM turn_events WHERE turn_id = @turnId AND last_seq > @afterSeq
         AND seq >= COALESCE((SELECT seq FROM turn_events WHERE turn_id = @turnId AND seq <= @afterSeq
                              ORDER BY seq DESC LIMIT 1), 0)
       ORDER BY seq LIMIT @limit`,
    ),
    // the last run's end (by the key: an alias named seq would order by last_seq, and sort the turn)
    selectLastSeq: prepare(
      "SELECT last_seq FROM turn_events WHERE turn_id = ? ORDER BY turn_events.seq DESC LIMIT 1",
    ),
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

/** Most rows per multi-row INSERT: a batch's runs and trace rows go in as few statements as this allows. */
const MAX_ROWS_PER_INSERT = 64;

const EVENT_COLUMNS = "(turn_id, seq, last_seq, payload)";
const TRACE_COLUMNS = "(turn_id, seq, at, kind, call_id, tool_name, detail)";
const BLOCK_COLUMNS = "(session_id, position, turn_id, tool_calls, blocks)";

/**
 * Multi-row INSERTs for runs of events and of blocks, and for trace rows: the statement for a number of
 * rows, prepared on first use.
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
    events: byRows(`INSERT INTO turn_events ${EVENT_COLUMNS}`, 4),
    blocks: byRows(`INSERT INTO history_blocks ${BLOCK_COLUMNS}`, 5),
    traces: byRows(`INSERT INTO turn_trace ${TRACE_COLUMNS}`, 7),
  };
}

type EventOp = Extract<WriteOp, { kind: "event" }>;
type BlockOp = Extract<WriteOp, { kind: "block" }>;
type TraceOp = Extract<WriteOp, { kind: "trace" }>;
type SessionOp = Extract<WriteOp, { kind: "session" }>;

/** A batch's writes grouped by turn, each group in batch order: one run, stored as one row. */
function runsByTurn<Op>(ops: readonly Op[], turnOf: (op: Op) => string): Op[][] {
  const runs = new Map<string, Op[]>();
  for (const op of ops) {
    const run = runs.get(turnOf(op));
    if (run) run.push(op);
    else runs.set(turnOf(op), [op]);
  }
  return [...runs.values()];
}

/** A run of one turn's events (in seq order) as a row: its first and last seq, a line per event. */
function eventRunParams(run: readonly EventOp[]): unknown[] {
  const first = run[0] as EventOp;
  if (run.length === 1) return [first.turnId, first.seq, first.seq, first.payload];
  const last = run[run.length - 1] as EventOp;
  return [first.turnId, first.seq, last.seq, run.map((op) => op.payload).join("\n")];
}

/** A run of one turn's blocks as a row: keyed by its lowest position, with its number of calls. */
function blockRunParams(run: readonly BlockOp[]): unknown[] {
  let first = (run[0] as BlockOp).block;
  let toolCalls = 0;
  for (const { block } of run) {
    if (block.position < first.position) first = block;
    if (block.kind === "tool_call") toolCalls++;
  }
  return [first.sessionId, first.position, first.turnId, toolCalls, run.map(blockLine).join("\n")];
}

/** A block as a line of its run (`BlockLine`); its content, serialised when it was stored, goes in as it is. */
function blockLine({ block, content, responsePosition }: BlockOp): string {
  const head = JSON.stringify([
    block.position,
    block.role,
    block.kind,
    "callId" in block ? block.callId : null,
    "name" in block ? block.name : null,
    block.kind === "tool_response" ? block.status : null,
    responsePosition,
    block.createdAt,
  ]);
  return `${head.slice(0, -1)},${content}]`;
}

/** The blocks of stored runs (rows), in position order. */
export function blocksOfRuns(rows: readonly BlockRunRow[]): StoredBlock[] {
  const stored: StoredBlock[] = [];
  for (const row of rows) {
    for (const line of row.blocks.split("\n")) stored.push(toStoredBlock(row, JSON.parse(line) as BlockLine));
  }
  // runs come by their lowest position, and a call's result may lie beyond blocks a later run holds
  stored.sort((a, b) => a.block.position - b.block.position);
  // a position holds one block: the live session never writes one twice, and should a second reach the
  // database (another writer, a bug), one is kept, as the key of a row per block kept one
  return stored.filter(
    (entry, index) => index === 0 || entry.block.position !== stored[index - 1]?.block.position,
  );
}

/** The events after `afterSeq` in stored runs (rows in seq order), parsed. */
export function eventsOfRuns<Event extends { seq: number }>(
  rows: readonly { payload: string }[],
  afterSeq: number,
): Event[] {
  const events: Event[] = [];
  for (const { payload } of rows) {
    for (const line of payload.split("\n")) {
      const event = JSON.parse(line) as Event;
      if (event.seq > afterSeq) events.push(event);
    }
  }
  return events;
}

function traceParams(op: TraceOp): unknown[] {
  return [op.turnId, op.seq, op.at, op.decisionKind, op.callId, op.toolName, op.detail];
}

/**
 * Writes one batch (call it inside a transaction). Rows go in dependency order — sessions, turns,
 * blocks, the sessions' next positions (the last of each session only), step-mode switches, titles and
 * turn ends, events, trace — and blocks and events (a row per turn: its run) and trace rows in multi-row
 * INSERTs. A session the batch creates is inserted with the title and next position the batch's later
 * writes give it, not updated after. A row that fails is reported and costs only itself; a run that fails
 * is written block by block (event by event), so it costs only what fails. A failure of the database
 * itself (a full disk, an I/O error: `isDatabaseFailure`) is no row's fault and fails the whole batch,
 * which is rolled back and committed again later (write-queue.ts): a batch commits whole or not at all.
 */
export function writeBatch(
  statements: Statements,
  chunks: ChunkStatements,
  ops: readonly WriteOp[],
  onError: (error: unknown, row: string) => void,
): void {
  const first: WriteOp[] = [];
  /** Sessions this batch creates: their INSERT takes the batch's later title and position for them. */
  const newSessions = new Map<string, SessionOp>();
  const blocks: BlockOp[] = [];
  const positions = new Map<string, WriteOp>();
  const updates: WriteOp[] = [];
  const events: EventOp[] = [];
  const traces: TraceOp[] = [];
  for (const op of ops) {
    switch (op.kind) {
      case "session": {
        const session = { ...op };
        newSessions.set(op.id, session);
        first.push(session);
        break;
      }
      case "turn":
        first.push(op);
        break;
      case "block":
        blocks.push(op);
        break;
      case "title": {
        const session = newSessions.get(op.id);
        if (session) session.title = op.title;
        else updates.push(op);
        break;
      }
      case "position": {
        const session = newSessions.get(op.sessionId);
        if (session) {
          session.next = op.next;
          session.updatedAt = op.at;
        } else {
          positions.set(op.sessionId, op);
        }
        break;
      }
      case "step_mode":
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
      if (isDatabaseFailure(error)) throw error;
      onError(error, `${op.kind} row`);
    }
  };
  first.forEach(one);
  insertRuns(
    runsByTurn(blocks, (op) => op.block.turnId),
    chunks.blocks,
    blockRunParams,
    one,
  );
  positions.forEach(one);
  updates.forEach(one);
  insertRuns(
    runsByTurn(events, (op) => op.turnId),
    chunks.events,
    eventRunParams,
    one,
  );
  insertChunked(traces, chunks.traces, traceParams, one);
}

/**
 * Inserts runs, a row each, in multi-row INSERTs. A run that fails is written op by op (each a run of
 * its own, through `one`), so a bad block or event costs only itself.
 */
function insertRuns<Op extends WriteOp>(
  runs: readonly Op[][],
  statementFor: (rows: number) => Statement,
  params: (run: readonly Op[]) => unknown[],
  one: (op: WriteOp) => void,
): void {
  insertChunked(runs, statementFor, params, (run) => {
    if (run.length === 1) return one(run[0] as Op);
    try {
      statementFor(1).run(params(run));
    } catch (error) {
      if (isDatabaseFailure(error)) throw error;
      run.forEach(one);
    }
  });
}

function insertChunked<Row>(
  rows: readonly Row[],
  statementFor: (rows: number) => Statement,
  params: (row: Row) => unknown[],
  one: (row: Row) => void,
): void {
  for (let index = 0; index < rows.length; index += MAX_ROWS_PER_INSERT) {
    const chunk = rows.slice(index, index + MAX_ROWS_PER_INSERT);
    if (chunk.length === 1) {
      one(chunk[0] as Row);
      continue;
    }
    try {
      statementFor(chunk.length).run(chunk.flatMap(params));
    } catch (error) {
      if (isDatabaseFailure(error)) throw error;
      // one bad row fails its whole statement: write the chunk row by row to keep the others
      chunk.forEach(one);
    }
  }
}

/**
 * SQLite's answers that the database cannot take writes now, which may pass: a full disk, an I/O
 * error, a busy or locked database, no memory, a read-only file (its permissions may be mended).
 */
const PASSING_FAILURE_CODE = /^SQLITE_(FULL|IOERR|BUSY|LOCKED|NOMEM|READONLY)(_|$)/;

/**
 * Whether `error` is the database failing rather than a row — another row would fail the same way, so
 * the batch cannot go on, and may commit later. (A row's own errors — a constraint, a value SQLite
 * cannot bind — and a database that is broken for good, corrupt or not a database, are not this.)
 */
export function isDatabaseFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && PASSING_FAILURE_CODE.test(code);
}

/** Runs one write of a batch (inside the batch's transaction). */
export function runWrite(statements: Statements, op: WriteOp): void {
  switch (op.kind) {
    case "session":
      statements.insertSession.run(
        op.id,
        op.agentId,
        op.at,
        op.updatedAt ?? op.at,
        op.principal,
        op.title,
        op.next ?? 0,
      );
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
      statements.insertBlock.run(blockRunParams([op]));
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
      statements.insertEvent.run(eventRunParams([op]));
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
      return {
        text: block.text,
        signature: block.signature,
        redacted: block.redacted,
        provider: block.provider,
        model: block.model,
      };
    case "tool_call":
      return { input: block.input, providerCallId: block.providerCallId };
    case "tool_response":
      return { result: block.result, isError: block.isError };
  }
}

/** One line of a stored run as the block it stores, and the slot reserved for its result. */
function toStoredBlock(row: BlockRunRow, line: BlockLine): StoredBlock {
  const [position, role, kind, callId, toolName, status, responsePosition, createdAt, payload] = line;
  // Made as a live session makes its blocks (the content in the order the turn writes it, then the
  // place, with `withFields`), so a session read back shares hidden classes with one that grew here.
  const place = { sessionId: row.session_id, turnId: row.turn_id, position, createdAt };
  return { block: toHistoryBlock(kind, role, callId, toolName, status, payload, place), responsePosition };
}

function toHistoryBlock(
  kind: HistoryBlock["kind"],
  role: HistoryBlock["role"],
  callId: string | null,
  toolName: string | null,
  status: string | null,
  payload: Record<string, unknown>,
  place: { sessionId: string; turnId: string; position: number; createdAt: number },
): HistoryBlock {
  switch (kind) {
    case "text":
      return withFields(
        { kind: "text" as const, role: role as "user" | "assistant", text: payload.text as string },
        place,
      );
    case "thinking": {
      const thinking: BlockContent & { kind: "thinking" } = {
        kind: "thinking",
        role: "assistant",
        text: payload.text as string,
      };
      if (payload.signature !== undefined) thinking.signature = payload.signature as string;
      if (payload.redacted !== undefined) thinking.redacted = payload.redacted as string;
      if (payload.provider !== undefined) thinking.provider = payload.provider as string;
      if (payload.model !== undefined) thinking.model = payload.model as string;
      return withFields(thinking, place);
    }
    case "tool_call": {
      // the turn writes kind, role, callId, providerCallId, name, input: this builds them in that order
      const call = { kind: "tool_call", role: "assistant", callId } as Record<string, unknown>;
      if (payload.providerCallId !== undefined) call.providerCallId = payload.providerCallId;
      call.name = toolName;
      call.input = payload.input;
      return withFields(call as unknown as ToolCallBlock, place);
    }
    case "tool_response":
      return withFields(
        {
          kind: "tool_response" as const,
          role: "tool" as const,
          callId: callId as string,
          name: toolName as string,
          status: status as ToolResponseBlock["status"],
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
