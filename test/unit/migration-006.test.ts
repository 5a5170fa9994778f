/**
 * Migration 006 (cheaper writes) on a populated schema-version-5 database: every row is kept (turn
 * rowids too, which order turns started in the same millisecond), the rules the rebuilt tables check
 * are the same, the queries use their indexes, a migration that breaks a foreign key is rolled back,
 * a batch's rows go in as multi-row INSERTs that cost a bad row only itself, and a file store
 * checkpoints its WAL once it is idle.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3, { type Database } from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { migrate, readMigrations } from "../../src/history/migrate.js";
import { prepareStatements } from "../../src/history/sqlite-rows.js";
import { SqliteHistoryStore } from "../../src/history/sqlite-store.js";
import { migrateTo, queryPlan } from "../support/history-store.js";

let directory: string;
let file: string;
const opened: SqliteHistoryStore[] = [];
const closing: Database[] = [];

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), "reins-migration-006-"));
  file = join(directory, "reins.db");
});
afterEach(() => {
  vi.useRealTimers();
  for (const store of opened.splice(0)) store.close();
  for (const db of closing.splice(0)) db.close();
  rmSync(directory, { recursive: true, force: true });
});

function open(onWriteError?: (error: unknown, detail: string) => void): SqliteHistoryStore {
  const store = new SqliteHistoryStore(file, onWriteError ? { onWriteError } : {});
  opened.push(store);
  return store;
}

/** A store with session ses_1 and its running turn turn_1, committed. */
function withTurn(onWriteError?: (error: unknown, detail: string) => void): SqliteHistoryStore {
  const store = open(onWriteError);
  store.createSession("ses_1", "default");
  store.beginTurn({
    id: "turn_1",
    sessionId: "ses_1",
    agentId: "default",
    provider: "scripted",
    model: "m",
    startedAt: 1,
    userMessage: "go",
  });
  store.flush();
  return store;
}

/** A schema-version-5 database with two sessions: ended, running and child turns, every block kind. */
function writeVersion5Database(): void {
  const db = new BetterSqlite3(file);
  db.pragma("foreign_keys = ON");
  migrateTo(db, 5);
  db.exec(`
    INSERT INTO sessions (id, agent_id, created_at, updated_at, next_position, principal, step_mode, title)
      VALUES ('ses_a', 'default', 100, 900, 9, 'alice', 1, 'first'),
             ('ses_b', 'helper', 200, 800, 2, NULL, 0, NULL);
    -- turn_a2 and turn_a3 start in the same millisecond: their rowids order them
    INSERT INTO turns (id, session_id, agent_id, provider, model, status, stop_reason, abort_reason, started_at,
        ended_at, tool_call_count, parent_turn_id, depth, input_tokens, output_tokens)
      VALUES ('turn_a1', 'ses_a', 'default', 'scripted', 'm', 'completed', 'end_turn', NULL, 300, 350, 2, NULL, 0, 10, 20),
             ('turn_a3', 'ses_a', 'default', 'scripted', 'm', 'aborted', NULL, 'user', 400, 450, 0, NULL, 0, NULL, NULL),
             ('turn_a2', 'ses_a', 'default', 'scripted', 'm', 'running', NULL, NULL, 400, NULL, 0, NULL, 0, NULL, NULL),
             ('turn_b1', 'ses_b', 'helper', 'scripted', 'm', 'interrupted', NULL, 'interrupted', 360, 370, 1,
               'turn_a1', 1, NULL, NULL);
    INSERT INTO history_blocks (session_id, position, turn_id, role, kind, call_id, tool_name, status, content,
        response_position, created_at)
      VALUES ('ses_a', 0, 'turn_a1', 'user', 'text', NULL, NULL, NULL, '{"text":"go"}', NULL, 300),
             ('ses_a', 1, 'turn_a1', 'assistant', 'thinking', NULL, NULL, NULL, '{"text":"hm"}', NULL, 310),
             ('ses_a', 2, 'turn_a1', 'assistant', 'tool_call', 'c1', 'echo', NULL, '{"input":{}}', 4, 310),
             ('ses_a', 3, 'turn_a1', 'assistant', 'tool_call', 'c2', 'exec', NULL, '{"input":{}}', 5, 310),
             ('ses_a', 4, 'turn_a1', 'tool', 'tool_response', 'c1', 'echo', 'complete', '{"result":"ok"}', NULL, 320),
             ('ses_a', 5, 'turn_a1', 'tool', 'tool_response', 'c2', 'exec', 'rejected', '{"result":"no"}', NULL, 330),
             ('ses_a', 6, 'turn_a3', 'user', 'text', NULL, NULL, NULL, '{"text":"again"}', NULL, 400),
             ('ses_a', 7, 'turn_a2', 'user', 'text', NULL, NULL, NULL, '{"text":"and again"}', NULL, 400),
             ('ses_a', 8, 'turn_a2', 'assistant', 'tool_call', 'c3', 'echo', NULL, '{"input":{}}', 9, 410),
             ('ses_b', 0, 'turn_b1', 'user', 'text', NULL, NULL, NULL, '{"text":"child"}', NULL, 360),
             ('ses_b', 1, 'turn_b1', 'tool', 'tool_response', 'c9', 'echo', 'interrupted', '{"result":"x"}', NULL, 370);
    INSERT INTO turn_events (turn_id, seq, type, at, payload)
      VALUES ('turn_a1', 1, 'turn_start', 300, '{}'), ('turn_a1', 2, 'turn_complete', 350, '{}'),
             ('turn_a2', 1, 'turn_start', 400, '{}');
    INSERT INTO turn_trace (turn_id, seq, at, kind, call_id, tool_name, detail)
      VALUES ('turn_a1', 1, 320, 'classification', 'c1', 'echo', '{}');
  `);
  db.close();
}

/** Every row of every table, turns with their rowids. */
function dump(db: Database): Record<string, unknown[]> {
  return {
    sessions: db.prepare("SELECT * FROM sessions ORDER BY id").all(),
    turns: db.prepare("SELECT rowid, * FROM turns ORDER BY rowid").all(),
    history_blocks: db.prepare("SELECT * FROM history_blocks ORDER BY session_id, position").all(),
    turn_events: db.prepare("SELECT * FROM turn_events ORDER BY turn_id, seq").all(),
    turn_trace: db.prepare("SELECT * FROM turn_trace ORDER BY turn_id, seq").all(),
  };
}

describe("migration 006 on a populated schema-version-5 database", () => {
  beforeEach(writeVersion5Database);

  it("keeps every row, turn rowids included", () => {
    const before = new BetterSqlite3(file);
    const rows = dump(before);
    before.close();

    const db = new BetterSqlite3(file);
    db.pragma("foreign_keys = ON");
    expect(migrateTo(db, 6)).toEqual(["006_cheaper_writes.sql"]);
    expect(dump(db)).toEqual(rows);
    expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
    db.close();
  });

  it("reads the old turns through the new indexes, in the old order", () => {
    const store = open();
    expect(store.listTurns({ status: "running" }).map((turn) => turn.id)).toEqual(["turn_a2"]);
    expect(store.listTurns({ sessionId: "ses_a" }).map((turn) => turn.id)).toEqual([
      "turn_a1",
      "turn_a3",
      "turn_a2",
    ]);
    expect(store.listTurns({ sessionId: "ses_a", status: "aborted" }).map((turn) => turn.id)).toEqual([
      "turn_a3",
    ]);
    expect(store.listTurns({ status: "interrupted" }).map((turn) => turn.id)).toEqual(["turn_b1"]);
    expect(store.listTurns().map((turn) => turn.id)).toEqual(["turn_a1", "turn_b1", "turn_a3", "turn_a2"]);
    expect(store.getTurn("turn_a2")?.toolCallCount).toBe(1);
    const page = store.pageTurns("ses_a", 2);
    expect(page?.turns.map((turn) => turn.id)).toEqual(["turn_a3", "turn_a2"]);
    expect(page?.blocks.map((block) => block.position)).toEqual([6, 7, 8]);
    expect(store.pageTurns("ses_a", 2, "turn_a3")?.turns.map((turn) => turn.id)).toEqual(["turn_a1"]);
  });

  it("ends a turn left running, and the index of running turns forgets it", () => {
    const store = open();
    store.endTurn("turn_a2", { status: "interrupted", abortReason: "interrupted" });
    expect(store.listTurns({ status: "running" })).toEqual([]);
    expect(store.getTurn("turn_a2")).toMatchObject({ status: "interrupted", toolCallCount: 1 });
  });
});

describe("the rebuilt tables check the same rules", () => {
  const block = (values: { role?: string; kind?: string; status?: string | null }) => [
    "ses_1",
    Math.floor(Math.random() * 1e9),
    "turn_1",
    values.role ?? "user",
    values.kind ?? "text",
    null,
    null,
    values.status === undefined ? null : values.status,
    "{}",
    null,
    1,
  ];

  /**
   * A schema-version-6 database, as this migration left it (migration 007 stores blocks in runs), with
   * session ses_1 and its running turn turn_1.
   */
  function withTurn(): Database {
    const db = new BetterSqlite3(file);
    closing.push(db);
    db.pragma("foreign_keys = ON");
    migrateTo(db, 6);
    db.exec(`
      INSERT INTO sessions (id, agent_id, created_at, updated_at) VALUES ('ses_1', 'default', 1, 1);
      INSERT INTO turns (id, session_id, agent_id, provider, model, status, started_at)
        VALUES ('turn_1', 'ses_1', 'default', 'scripted', 'm', 'running', 1);
    `);
    return db;
  }

  function insertBlock(db: Database, values: Parameters<typeof block>[0]): void {
    db.prepare(
      `INSERT INTO history_blocks (session_id, position, turn_id, role, kind, call_id, tool_name, status, content,
           response_position, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(block(values));
  }

  it.each([
    { role: "user" },
    { role: "assistant" },
    { role: "tool" },
    { kind: "thinking" },
    { kind: "tool_call" },
    { kind: "tool_response" },
    ...["complete", "error", "cancelled", "timeout", "interrupted", "rejected", null].map((status) => ({
      status,
    })),
  ])("accepts a block with %o", (values) => {
    expect(() => insertBlock(withTurn(), values)).not.toThrow();
  });

  it.each([{ role: "system" }, { kind: "image" }, { status: "done" }, { role: "User" }])(
    "refuses a block with %o",
    (values) => {
      expect(() => insertBlock(withTurn(), values)).toThrow(/CHECK constraint failed/);
    },
  );

  it.each(["running", "completed", "aborted", "interrupted"])("accepts a turn with status %s", (status) => {
    const db = withTurn();
    expect(() => db.prepare("UPDATE turns SET status = ?").run(status)).not.toThrow();
  });

  it("refuses a turn with another status, a block of an unknown turn and a turn of an unknown session", () => {
    const db = withTurn();
    expect(() => db.prepare("UPDATE turns SET status = 'paused'").run()).toThrow(/CHECK constraint failed/);
    expect(() =>
      db
        .prepare(
          `INSERT INTO history_blocks (session_id, position, turn_id, role, kind, content, created_at)
           VALUES ('ses_1', 99, 'turn_nobody', 'user', 'text', '{}', 1)`,
        )
        .run(),
    ).toThrow(/FOREIGN KEY constraint failed/);
    expect(() =>
      db
        .prepare(
          `INSERT INTO turns (id, session_id, agent_id, provider, model, status, started_at)
           VALUES ('turn_2', 'ses_nobody', 'default', 'p', 'm', 'running', 1)`,
        )
        .run(),
    ).toThrow(/FOREIGN KEY constraint failed/);
  });
});

describe("query plans", () => {
  function plans(): Map<string, string> {
    const store = open();
    const result = new Map<string, string>();
    for (const [name, statement] of Object.entries(prepareStatements(store.db))) {
      const named = [
        ...new Set([...statement.source.matchAll(/@(\w+)/g)].map((match) => match[1] as string)),
      ];
      const parameters =
        named.length > 0
          ? Object.fromEntries(named.map((parameter) => [parameter, 1]))
          : Array.from({ length: (statement.source.match(/\?/g) ?? []).length }, () => 1);
      result.set(name, queryPlan(store.db, statement.source, parameters));
    }
    return result;
  }

  it("finds running turns (start-up recovery) and a session's turns by index, without sorting", () => {
    const plan = plans();
    expect(plan.get("selectRunningTurns")).toMatch(/^SCAN turns USING INDEX turns_running/);
    expect(plan.get("selectSessionTurns")).toMatch(/^SEARCH turns USING INDEX turns_by_session/);
    expect(plan.get("selectRunningTurns")).not.toMatch(/TEMP B-TREE/);
    expect(plan.get("selectSessionTurns")).not.toMatch(/TEMP B-TREE/);
  });

  it("never scans history, events or trace, and counts calls by index", () => {
    const plan = plans();
    const scanning = [...plan].filter(([, detail]) =>
      /SCAN (history_blocks|turn_events|turn_trace)/.test(detail),
    );
    expect(scanning).toEqual([]);
    expect(plan.get("finishTurn")).toMatch(/history_blocks USING COVERING INDEX history_by_turn/);
  });
});

describe("migrate", () => {
  it("rolls back a migration that leaves a foreign key pointing nowhere, and turns enforcement back on", () => {
    const db = new BetterSqlite3(file);
    db.pragma("foreign_keys = ON");
    migrate(db);
    const broken = {
      version: 999,
      name: "999_broken.sql",
      sql: "INSERT INTO turns (id, session_id, agent_id, provider, model, status, started_at) VALUES ('t', 'nobody', 'a', 'p', 'm', 'running', 1)",
    };
    expect(() => migrate(db, [broken])).toThrow(
      /999_broken\.sql leaves 1 rows whose foreign key points nowhere \(the first in turns, to sessions\)/,
    );
    expect(db.prepare("SELECT COUNT(*) AS count FROM turns").get()).toEqual({ count: 0 });
    expect(db.prepare("SELECT MAX(version) AS version FROM schema_migrations").get()).toEqual({
      version: readMigrations().at(-1)?.version,
    });
    expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
    db.close();
  });
});

describe("multi-row INSERTs", () => {
  it.each([2, 6, 64, 65, 130])("write %i events of one batch, a bad one costing only itself", (count) => {
    const errors: string[] = [];
    const store = withTurn((_error, detail) => errors.push(detail));
    const event = (seq: number, text: string) =>
      ({ type: "text_delta", text, turnId: "turn_1", seq, at: seq }) as const;
    store.appendEvent(event(2, "first"));
    store.flush();

    for (let seq = 1; seq <= count + 1; seq++) store.appendEvent(event(seq, seq === 2 ? "again" : "new"));
    store.flush();

    const stored = store.listEvents("turn_1");
    expect(stored.map((row) => row.seq)).toEqual(Array.from({ length: count + 1 }, (_, index) => index + 1));
    expect(stored[1]).toMatchObject({ text: "first" });
    expect(errors).toEqual(["event row"]);
  });
});
