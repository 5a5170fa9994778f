/** Store fixtures shared by the history-store tests. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3, { type Database } from "better-sqlite3";
import { afterEach, beforeEach } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import type { HistoryBlock } from "../../src/history/model.js";
import { migrate, readMigrations } from "../../src/history/migrate.js";
import { blocksOfRuns, type BlockRunRow } from "../../src/history/sqlite-rows.js";
import { SqliteHistoryStore } from "../../src/history/sqlite-store.js";

export type DatabaseFile = {
  /** `reins.db` in this test's own directory. */
  readonly file: string;
  /** A store on the file (migrating it), closed after the test. */
  open(): SqliteHistoryStore;
  /** A plain connection to the file with foreign keys enforced, closed after the test. */
  openDatabase(): Database;
};

/**
 * A database file of its own for each test of the calling file: a fresh directory before each test,
 * and after it every store and connection opened on the file is closed and the directory removed.
 */
export function databaseFilePerTest(prefix: string): DatabaseFile {
  let directory = "";
  const opened: { close(): void }[] = [];
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), prefix));
  });
  afterEach(() => {
    for (const handle of opened.splice(0)) handle.close();
    rmSync(directory, { recursive: true, force: true });
  });
  const database: DatabaseFile = {
    get file() {
      return join(directory, "reins.db");
    },
    open() {
      const store = new SqliteHistoryStore(database.file);
      opened.push(store);
      return store;
    },
    openDatabase() {
      const db = new BetterSqlite3(database.file);
      opened.push(db);
      db.pragma("foreign_keys = ON");
      return db;
    },
  };
  return database;
}

/**
 * Applies the project's migrations up to and including `version` to `db` (an older schema for a
 * migration's own test to start from); returns the files applied.
 */
export function migrateTo(db: Database, version: number): string[] {
  return migrate(
    db,
    readMigrations().filter((migration) => migration.version <= version),
  );
}

/** SQLite's plan for the statement `source` with `parameters` bound, its steps joined by " | ". */
export function queryPlan(db: Database, source: string, parameters: unknown): string {
  return (db.prepare(`EXPLAIN QUERY PLAN ${source}`).all(parameters) as { detail: string }[])
    .map((row) => row.detail)
    .join(" | ");
}

/** The blocks the database holds, of one session or of all, read as the store reads them. */
export function storedBlocks(db: Database, sessionId?: string): HistoryBlock[] {
  const runs = (
    sessionId === undefined
      ? db
          .prepare("SELECT session_id, turn_id, blocks FROM history_blocks ORDER BY session_id, position")
          .all()
      : db
          .prepare(
            "SELECT session_id, turn_id, blocks FROM history_blocks WHERE session_id = ? ORDER BY position",
          )
          .all(sessionId)
  ) as BlockRunRow[];
  return blocksOfRuns(runs).map(({ block }) => block);
}

/**
 * A turn's events as the database holds them now (nothing queued is committed first): its rows are
 * runs of events, one JSON document a line.
 */
export function storedEvents(db: Database, turnId: string): TurnEvent[] {
  const runs = db.prepare("SELECT payload FROM turn_events WHERE turn_id = ? ORDER BY seq").all(turnId) as {
    payload: string;
  }[];
  return runs.flatMap(({ payload }) => payload.split("\n").map((line) => JSON.parse(line) as TurnEvent));
}

/** A session (created when it does not exist) with one running turn. */
export function startTurn(
  store: SqliteHistoryStore,
  turnId = "turn_1",
  sessionId = "ses_1",
  { startedAt = 1, userMessage = "go" }: { startedAt?: number; userMessage?: string } = {},
): void {
  if (!store.getSession(sessionId)) store.createSession(sessionId, "default");
  store.beginTurn({
    id: turnId,
    sessionId,
    agentId: "default",
    provider: "scripted",
    model: "scripted-1",
    startedAt,
    userMessage,
  });
}
