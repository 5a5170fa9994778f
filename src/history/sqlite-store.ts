/**
 * The SQLite history store: the single write boundary for sessions, turns, canonical history blocks,
 * the per-turn event log and the trace.
 *
 * Live sessions are held in memory (`LiveSession`) and written through: a write changes the session
 * in memory at once — so a turn reads its history without touching the database, and a second result
 * for a call is refused at once — and queues its rows. Everything queued in one tick is committed in
 * one transaction (`WriteQueue`); an event is handed to its listeners only after the commit that holds
 * it, so what a client was sent is always durable. Reads from the database first commit what is
 * queued, so they see every write.
 *
 * A file store holds the database for its process (`lockDatabase`) and leaves WAL checkpoints to a
 * worker thread (`WalCheckpointer`), so a commit never waits for one.
 *
 * Tool results are written the moment they are known (a crash loses nothing that finished and was
 * sent), yet history reads back in call order: storing an assistant message reserves one position per
 * call for its response.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import BetterSqlite3, { type Database } from "better-sqlite3";
import type { TurnEvent } from "../events.js";
import type { Decision, TraceEntry } from "../observability/decision.js";
import { LiveSession } from "./live-session.js";
import { migrate } from "./migrate.js";
import type {
  BlockContent,
  HistoryBlock,
  SessionRecord,
  SessionSummary,
  ToolResponseBlock,
  TurnRecord,
  TurnStatus,
} from "./model.js";
import {
  blockPayload,
  blocksOfRuns,
  eventsOfRuns,
  isDatabaseFailure,
  prepareChunkStatements,
  prepareStatements,
  writeBatch,
  toTurnRecord,
  type BlockRunRow,
  type SessionRow,
  type SessionSummaryRow,
  type Statements,
  type TurnRow,
  type WriteOp,
} from "./sqlite-rows.js";
import {
  AUTOMATIC_TITLE_CHARS,
  type CloseOpenCall,
  type HistoryStore,
  type NewTurn,
  type OpenCall,
  type SessionPage,
  type SessionPosition,
  type TurnOutcome,
  type TurnPage,
} from "./store.js";
import { lockDatabase, type ProcessLock } from "./process-lock.js";
import { WalCheckpointer, type CheckpointReport } from "./wal-checkpointer.js";
import { WriteQueue } from "./write-queue.js";

/** Sessions kept in memory beyond those with a running turn (least recently used go first). */
const DEFAULT_CACHED_SESSIONS = 1_000;
/**
 * Characters of stored history the sessions in memory may hold together (least recently used idle
 * ones go first): a thousand sessions of a few hundred kilobytes each would otherwise hold gigabytes.
 */
const DEFAULT_CACHED_CHARACTERS = 64 * 1024 * 1024;

/** What the sessions in memory hold now (`/metrics`). */
export type HistoryCacheStats = { sessions: number; characters: number };

/** How often the WAL checkpointer copies the log into the database file while there are commits. */
const CHECKPOINT_INTERVAL_MS = 1_000;
/**
 * WAL pages (4 KiB each) past which the server's connection copies the last few itself so the log
 * starts over (see wal-checkpointer.ts); the WAL file is cut back to WAL_FILE_LIMIT_BYTES then.
 */
const WAL_LIMIT_PAGES = 16_000;
const WAL_FILE_LIMIT_BYTES = 64 * 1024 * 1024;

export type SqliteStoreOptions = {
  now?: () => number;
  /** Told about a batch (or trace row) that could not be written; the turn goes on. */
  onWriteError?: (error: unknown, detail: string) => void;
  /** How many idle sessions stay in memory. */
  cachedSessions?: number;
  /**
   * How many characters of stored history (serialised blocks) the sessions in memory may hold together;
   * idle sessions are dropped past it, least recently used first, and sessions with a running turn stay.
   */
  cachedCharacters?: number;
  /** File stores: how often the WAL is checkpointed while there are commits (default 1 s). */
  checkpointIntervalMs?: number;
  /** File stores: WAL pages past which the server's connection catches up itself (default 16,000). */
  walLimitPages?: number;
  /** File stores: told after each background checkpoint. */
  onCheckpoint?: (report: CheckpointReport) => void;
  /**
   * Runs before each slice of a burst's writes is committed (`WriteQueueOptions.beforeSlice`):
   * `createRuntime` fires the tool deadlines due by then there.
   */
  beforeCommitSlice?: () => void;
};

export class SqliteHistoryStore implements HistoryStore {
  readonly db: Database;
  private readonly now: () => number;
  private readonly statements: Statements;
  private readonly queue: WriteQueue<WriteOp>;
  /** Live sessions, least recently used first. */
  private readonly sessions = new Map<string, LiveSession>();
  /** The session of each running turn this process started or ended. */
  private readonly runningTurns = new Map<string, string>();
  /** The last trace seq of each turn running here (others ask the database). */
  private readonly traceSeqs = new Map<string, number>();
  private readonly cachedSessions: number;
  private readonly maxCachedCharacters: number;
  /** Characters of stored history the sessions in memory hold (`LiveSession.storedCharacters` summed). */
  private cachedCharacters = 0;
  /** Removes a session and everything of it, in one transaction. */
  private readonly removeSession: (id: string) => boolean;
  /** File stores: this process's hold on the database, and its WAL checkpoints. */
  private readonly lock: ProcessLock | undefined;
  private readonly checkpointer: WalCheckpointer | undefined;

  /** Opens (creating if needed) the database at `filename` and applies pending migrations. */
  constructor(filename: string, options: SqliteStoreOptions = {}) {
    const opened = openDatabase(filename);
    this.db = opened.db;
    this.lock = opened.lock;
    this.now = options.now ?? Date.now;
    this.cachedSessions = options.cachedSessions ?? DEFAULT_CACHED_SESSIONS;
    this.maxCachedCharacters = options.cachedCharacters ?? DEFAULT_CACHED_CHARACTERS;
    this.statements = prepareStatements(this.db);
    const onWriteError = options.onWriteError ?? (() => {});
    const statements = this.statements;
    // One failed row (say, a turn id the database does not know) must not cost the rest of the batch.
    const chunks = prepareChunkStatements(this.db);
    const commitBatch = this.db.transaction((ops: readonly WriteOp[]) =>
      writeBatch(statements, chunks, ops, onWriteError),
    );
    const walLimitPages = options.walLimitPages ?? WAL_LIMIT_PAGES;
    this.checkpointer = this.lock
      ? new WalCheckpointer(filename, {
          intervalMs: options.checkpointIntervalMs ?? CHECKPOINT_INTERVAL_MS,
          walLimitPages,
          onStopped: (error) => {
            onWriteError(error, "WAL checkpointer (checkpoints are back on the server's connection)");
            if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${walLimitPages}`);
          },
          catchUp: () => {
            try {
              if (this.db.open) this.db.pragma("wal_checkpoint(PASSIVE)");
            } catch (error) {
              onWriteError(error, "WAL checkpoint");
            }
          },
          onError: (error) => onWriteError(error, "WAL checkpoint"),
          onCheckpoint: options.onCheckpoint,
        })
      : undefined;
    this.queue = new WriteQueue<WriteOp>({
      commit: (ops) => {
        if (!this.db.open) throw new Error("the database is closed");
        commitBatch(ops);
        this.checkpointer?.noteCommit();
      },
      onError: (error, ops) => onWriteError(error, `batch of ${ops.length} writes`),
      beforeSlice: options.beforeCommitSlice,
      // a full disk or an I/O error may pass: the batch is kept and tried again (a closed store's is not)
      retryable: (error) => this.db.open && isDatabaseFailure(error),
    });
    this.removeSession = this.db.transaction((id: string): boolean => {
      statements.deleteSessionEvents.run(id);
      statements.deleteSessionTrace.run(id);
      statements.detachChildTurns.run({ sessionId: id });
      statements.deleteSessionBlocks.run(id);
      statements.deleteSessionTurns.run(id);
      return statements.deleteSession.run(id).changes > 0;
    });
  }

  createSession(id: string, agentId: string, principal: string | null = null, title?: string): SessionRecord {
    const at = this.now();
    if (this.sessions.has(id)) throw new Error(`Session ${id} already exists`);
    this.queue.push({ kind: "session", id, agentId, at, principal, title: title ?? null });
    const record = {
      id,
      agentId,
      createdAt: at,
      updatedAt: at,
      principal,
      stepMode: false,
      title: title ?? null,
    };
    this.remember(new LiveSession(record, 0));
    return { ...record };
  }

  listSessions(principal: string | null, limit: number, after?: SessionPosition): SessionPage {
    this.flush();
    // one more than asked for tells whether another page follows
    const rows = (
      after
        ? this.statements.selectSessionsAfter.all({ principal, limit: limit + 1, ...after })
        : this.statements.selectFirstSessions.all({ principal, limit: limit + 1 })
    ) as SessionSummaryRow[];
    const sessions = rows.slice(0, limit).map(toSessionSummary);
    const last = sessions.at(-1);
    return {
      sessions,
      next: rows.length > limit && last ? { updatedAt: last.updatedAt, id: last.id } : null,
    };
  }

  getSessionSummary(id: string): SessionSummary | undefined {
    this.flush();
    const row = this.statements.selectSessionSummary.get(id) as SessionSummaryRow | undefined;
    return row && toSessionSummary(row);
  }

  renameSession(id: string, title: string): boolean {
    if (!this.selectSession(id)) return false;
    const cached = this.sessions.get(id);
    if (cached) cached.record.title = title;
    this.queue.push({ kind: "title", id, title });
    this.flush();
    return true;
  }

  deleteSession(id: string): boolean {
    for (const sessionId of this.runningTurns.values()) {
      if (sessionId === id) throw new Error(`Session ${id} has a running turn`);
    }
    // what is queued for it is written first, so nothing of it arrives after the delete
    this.flush();
    const removed = this.removeSession(id);
    this.forget(id);
    return removed;
  }

  pageTurns(sessionId: string, limit: number, before?: string): TurnPage | undefined {
    this.flush();
    let rows: TurnRow[];
    if (before === undefined) {
      rows = this.statements.selectNewestTurns.all({ sessionId, limit: limit + 1 }) as TurnRow[];
    } else {
      const position = this.statements.selectTurnPosition.get(before, sessionId) as
        { started_at: number; rowid: number } | undefined;
      if (!position) return undefined;
      rows = this.statements.selectTurnsBefore.all({
        sessionId,
        limit: limit + 1,
        startedAt: position.started_at,
        rowid: position.rowid,
      }) as TurnRow[];
    }
    const turns = rows.slice(0, limit).reverse().map(toTurnRecord);
    const runs = this.statements.selectTurnBlocks.all(
      sessionId,
      JSON.stringify(turns.map((turn) => turn.id)),
    ) as BlockRunRow[];
    return {
      turns,
      blocks: blocksOfRuns(runs).map(({ block }) => block),
      nextBefore: rows.length > limit ? (turns[0]?.id ?? null) : null,
    };
  }

  setSessionStepMode(id: string, enabled: boolean): void {
    const at = this.now();
    const cached = this.sessions.get(id);
    if (cached) Object.assign(cached.record, { stepMode: enabled, updatedAt: at });
    this.queue.push({ kind: "step_mode", id, enabled, at });
  }

  getSession(id: string): SessionRecord | undefined {
    const cached = this.sessions.get(id);
    if (cached) return { ...cached.record };
    const row = this.selectSession(id);
    return row && toSessionRecord(row);
  }

  sessionOwner(id: string): string | null | undefined {
    return this.selectSession(id)?.principal;
  }

  beginTurn(turn: NewTurn): void {
    const session = this.live(turn.sessionId);
    this.queue.push({
      kind: "turn",
      id: turn.id,
      sessionId: turn.sessionId,
      agentId: turn.agentId,
      provider: turn.provider,
      model: turn.model,
      startedAt: turn.startedAt,
      parentTurnId: turn.parentTurnId ?? null,
      depth: turn.depth ?? 0,
    });
    this.runningTurns.set(turn.id, turn.sessionId);
    this.traceSeqs.set(turn.id, 0);
    this.append(session, turn.id, [{ kind: "text", role: "user", text: turn.userMessage }]);
    const title = session.record.title === null ? automaticTitle(turn.userMessage) : null;
    if (title !== null) {
      session.record.title = title;
      this.queue.push({ kind: "title", id: turn.sessionId, title });
    }
  }

  appendAssistant(sessionId: string, turnId: string, blocks: BlockContent[]): void {
    this.append(this.live(sessionId), turnId, blocks);
  }

  recordToolResult(sessionId: string, turnId: string, response: ToolResponseBlock): boolean {
    return this.respond(this.live(sessionId), turnId, response) !== undefined;
  }

  openCalls(turnId: string): OpenCall[] {
    const sessionId = this.sessionOf(turnId);
    return sessionId === undefined ? [] : this.live(sessionId).openCalls(turnId);
  }

  endTurn(turnId: string, outcome: TurnOutcome, closeOpen?: CloseOpenCall): ToolResponseBlock[] {
    const sessionId = this.runningSessionOf(turnId);
    if (sessionId === undefined) return [];
    const closed = closeOpen ? this.closeOpen(this.live(sessionId), turnId, closeOpen) : [];
    this.queue.push({
      kind: "end_turn",
      turnId,
      status: outcome.status,
      stopReason: outcome.stopReason ?? null,
      abortReason: outcome.abortReason ?? null,
      endedAt: outcome.endedAt ?? this.now(),
      inputTokens: outcome.usage?.inputTokens ?? null,
      outputTokens: outcome.usage?.outputTokens ?? null,
    });
    this.runningTurns.delete(turnId);
    this.traceSeqs.delete(turnId);
    // its session may now be idle, and over what the cache holds
    this.trimCache();
    return closed;
  }

  appendEvent(event: TurnEvent): void {
    const payload = JSON.stringify(event);
    this.queue.push({ kind: "event", turnId: event.turnId, seq: event.seq, payload });
  }

  afterCommit(callback: () => void): void {
    this.queue.afterCommit(callback);
  }

  /** Commits everything queued now (reads do this themselves; so does `close`). */
  flush(): void {
    void this.queue.flush();
  }

  listEvents(turnId: string, afterSeq = 0, maxRuns?: number): TurnEvent[] {
    this.flush();
    // SQLite's LIMIT -1: no limit
    const limit = maxRuns ?? -1;
    return eventsOfRuns<TurnEvent>(
      this.statements.selectEvents.all({ turnId, afterSeq, limit }) as { payload: string }[],
      afterSeq,
    );
  }

  lastEventSeq(turnId: string): number {
    this.flush();
    const row = this.statements.selectLastSeq.get(turnId) as { last_seq: number } | undefined;
    return row?.last_seq ?? 0;
  }

  /** Queues one decision for the turn's trace; it is committed with the tick's other writes. */
  appendTrace(turnId: string, decision: Decision): void {
    const { kind, ...detail } = decision;
    this.queue.push({
      kind: "trace",
      turnId,
      seq: this.nextTraceSeq(turnId),
      at: this.now(),
      decisionKind: kind,
      callId: "callId" in decision ? (decision.callId ?? null) : null,
      toolName: "toolName" in decision ? decision.toolName : null,
      detail: JSON.stringify(detail),
    });
  }

  /**
   * The seq of a turn's next trace row: counted in memory while the turn runs here; after its end (a
   * zombie's late decision) or for a turn of an earlier process, one more than the database's last.
   */
  private nextTraceSeq(turnId: string): number {
    const last = this.traceSeqs.get(turnId);
    if (last !== undefined) {
      this.traceSeqs.set(turnId, last + 1);
      return last + 1;
    }
    this.flush();
    const row = this.statements.selectLastTraceSeq.get(turnId) as { seq: number | null };
    return (row.seq ?? 0) + 1;
  }

  listTrace(turnId: string): TraceEntry[] {
    this.flush();
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
    this.flush();
    const row = this.statements.selectTurn.get(turnId) as TurnRow | undefined;
    return row && toTurnRecord(row);
  }

  listTurns(filter: { status?: TurnStatus; sessionId?: string } = {}): TurnRecord[] {
    this.flush();
    const status = filter.status ?? null;
    const rows = (
      filter.sessionId !== undefined
        ? this.statements.selectSessionTurns.all({ sessionId: filter.sessionId, status })
        : status === "running"
          ? this.statements.selectRunningTurns.all()
          : this.statements.selectTurns.all({ status })
    ) as TurnRow[];
    return rows.map(toTurnRecord);
  }

  getHistory(sessionId: string): readonly HistoryBlock[] {
    const cached = this.sessions.get(sessionId);
    if (cached) return cached.history;
    this.flush();
    return blocksOfRuns(this.statements.selectHistory.all(sessionId) as BlockRunRow[]).map(
      ({ block }) => block,
    );
  }

  acceptsWrites(): boolean {
    return !this.queue.failing;
  }

  isReachable(): boolean {
    try {
      return this.db.open && (this.statements.ping.get() as { ok: number }).ok === 1;
    } catch {
      return false;
    }
  }

  close(): void {
    if (!this.db.open) return;
    this.queue.close();
    // the checkpointer's connection closes first, so this one, the last, checkpoints and removes the WAL
    this.checkpointer?.close();
    this.db.close();
    this.lock?.release();
  }

  private selectSession(id: string): SessionRow | undefined {
    this.flush();
    return this.statements.selectSession.get(id) as SessionRow | undefined;
  }

  /** The sessions in memory and the characters of stored history they hold. */
  get cacheStats(): HistoryCacheStats {
    return { sessions: this.sessions.size, characters: this.cachedCharacters };
  }

  /** The session in memory, loaded from the database on first use; throws when it does not exist. */
  private live(sessionId: string): LiveSession {
    const cached = this.sessions.get(sessionId);
    if (cached) {
      // most recently used last
      this.sessions.delete(sessionId);
      this.sessions.set(sessionId, cached);
      return cached;
    }
    // (selectSession commits what is queued first: a session dropped from memory may have writes queued)
    const row = this.selectSession(sessionId);
    if (!row) throw new Error(`Unknown session ${sessionId}`);
    const runs = this.statements.selectHistory.all(sessionId) as BlockRunRow[];
    const session = LiveSession.restore(toSessionRecord(row), row.next_position, blocksOfRuns(runs));
    for (const run of runs) session.storedCharacters += run.blocks.length;
    return this.remember(session);
  }

  private remember(session: LiveSession): LiveSession {
    this.sessions.set(session.sessionId, session);
    this.cachedCharacters += session.storedCharacters;
    this.trimCache(session.sessionId);
    return session;
  }

  /** A session's stored history grew by `characters`. */
  private grew(session: LiveSession, characters: number): void {
    session.storedCharacters += characters;
    if (this.sessions.get(session.sessionId) !== session) return;
    this.cachedCharacters += characters;
    this.trimCache(session.sessionId);
  }

  private forget(sessionId: string): void {
    const session = this.sessions.get(sessionId);
    if (!session) return;
    this.sessions.delete(sessionId);
    this.cachedCharacters -= session.storedCharacters;
  }

  /**
   * Drops idle sessions, least recently used first, while the sessions in memory are more than
   * `cachedSessions` beyond the running ones or hold more than `cachedCharacters` (a dropped session
   * reloads when used again). A session with a running turn stays, however large, and so does `inUse`,
   * the one being used now.
   */
  private trimCache(inUse?: string): void {
    const fits = () =>
      this.sessions.size <= this.cachedSessions + this.runningTurns.size &&
      this.cachedCharacters <= this.maxCachedCharacters;
    // nothing to drop while every session held could be a running turn's (each write asks again)
    if (fits() || this.sessions.size <= this.runningTurns.size) return;
    const busy = new Set(this.runningTurns.values());
    for (const sessionId of this.sessions.keys()) {
      if (sessionId !== inUse && !busy.has(sessionId)) this.forget(sessionId);
      if (fits()) return;
    }
  }

  /** The session of a turn: from memory while it runs here, else from the database. */
  private sessionOf(turnId: string): string | undefined {
    const running = this.runningTurns.get(turnId);
    if (running !== undefined) return running;
    this.flush();
    return (this.statements.selectTurn.get(turnId) as TurnRow | undefined)?.session_id;
  }

  /** The session of a turn that is still running (one left running by a crash included). */
  private runningSessionOf(turnId: string): string | undefined {
    const running = this.runningTurns.get(turnId);
    if (running !== undefined) return running;
    this.flush();
    const row = this.statements.selectTurn.get(turnId) as TurnRow | undefined;
    return row?.status === "running" ? row.session_id : undefined;
  }

  private append(session: LiveSession, turnId: string, contents: readonly BlockContent[]): void {
    // Serialise first: content that cannot be stored (e.g. a cycle) fails here, before anything changes.
    const serialised = contents.map((content) => JSON.stringify(blockPayload(content)));
    const at = this.now();
    const stored = session.append(turnId, contents, at);
    let characters = 0;
    stored.forEach(({ block, responsePosition }, index) => {
      const content = serialised[index] as string;
      characters += content.length;
      this.queue.push({ kind: "block", block, content, responsePosition });
    });
    this.queue.push({ kind: "position", sessionId: session.sessionId, next: session.nextPosition, at });
    // the position write moves updated_at in the database; the record in memory follows it
    session.record.updatedAt = at;
    this.grew(session, characters);
  }

  private respond(
    session: LiveSession,
    turnId: string,
    response: ToolResponseBlock,
  ): HistoryBlock | undefined {
    const content = JSON.stringify(blockPayload(response));
    const block = session.respond(turnId, response, this.now());
    if (block) {
      this.queue.push({ kind: "block", block, content, responsePosition: null });
      this.grew(session, content.length);
    }
    return block;
  }

  private closeOpen(session: LiveSession, turnId: string, make: CloseOpenCall): ToolResponseBlock[] {
    // Every response is made before any is stored, so a failure stores none of them.
    const responses = session.openCalls(turnId).map((call): ToolResponseBlock => ({
      kind: "tool_response",
      role: "tool",
      callId: call.callId,
      name: call.name,
      ...make(call),
    }));
    return responses.filter((response) => this.respond(session, turnId, response) !== undefined);
  }
}

function toSessionRecord(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    agentId: row.agent_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    principal: row.principal,
    stepMode: row.step_mode === 1,
    title: row.title,
  };
}

function toSessionSummary(row: SessionSummaryRow): SessionSummary {
  return { ...toSessionRecord(row), turnCount: row.turn_count };
}

/**
 * Opens the database — a file one only once this process holds its lock (a second server on the same
 * DATA_DIR fails here, before touching it) — sets it up and migrates it; on failure nothing stays open.
 */
function openDatabase(filename: string): { db: Database; lock: ProcessLock | undefined } {
  const inFile = filename !== ":memory:";
  if (inFile) mkdirSync(dirname(filename), { recursive: true });
  const lock = inFile ? lockDatabase(filename) : undefined;
  let db: Database | undefined;
  try {
    db = new BetterSqlite3(filename);
    db.pragma("journal_mode = WAL");
    // NORMAL in WAL mode: a committed transaction survives a process crash (kill -9), which is the
    // failure this server must tolerate; only an OS crash or power loss may lose the commits not yet
    // checkpointed (the WAL is fsynced when it is checkpointed, about once a second).
    db.pragma("synchronous = NORMAL");
    // checkpoints run on the checkpointer's connection, never inside one of this connection's commits
    db.pragma("wal_autocheckpoint = 0");
    db.pragma(`journal_size_limit = ${WAL_FILE_LIMIT_BYTES}`);
    db.pragma("foreign_keys = ON");
    db.pragma("busy_timeout = 1000");
    migrate(db);
    return { db, lock };
  } catch (error) {
    db?.close();
    lock?.release();
    throw error;
  }
}

/**
 * A session's title from its first user message: white space collapsed to single spaces, cut to
 * `AUTOMATIC_TITLE_CHARS` characters (code points, so a character is never split in half), each lone
 * UTF-16 surrogate replaced by U+FFFD. The message may hold one (it is stored as JSON, which escapes it),
 * but the title goes to a TEXT column as UTF-8, which cannot: it would read back as three U+FFFD, unlike
 * the title the session holds in memory. None for a message of white space only: the session keeps no
 * title until a message says something (a title set by hand is never blank either).
 */
export function automaticTitle(message: string): string | null {
  const characters = Array.from(message.toWellFormed().replace(/\s+/g, " ").trim());
  return characters.length === 0 ? null : characters.slice(0, AUTOMATIC_TITLE_CHARS).join("");
}

/** An in-memory store for programs that run turns in-process: the same SQLite code, no file. */
export function createMemoryHistoryStore(options: SqliteStoreOptions = {}): SqliteHistoryStore {
  return new SqliteHistoryStore(":memory:", options);
}
