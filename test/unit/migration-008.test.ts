/**
 * Migration 008 (runs of blocks and events in rowid tables) on a populated schema-version-7 database:
 * every block and event reads back as it was, a running turn's open call and count are kept and it goes
 * on; the old primary keys, now unique indexes, still refuse a second run at a position and a run of
 * events on another's seq, and every column keeps its NOT NULL, CHECK and foreign key; a run of a few
 * kilobytes stays on its leaf page (in the WITHOUT ROWID tables of 007 it took an overflow page of its
 * own); and history and events are still read by index, never scanned or sorted.
 */
import type { Database } from "better-sqlite3";
import { beforeEach, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import { prepareStatements } from "../../src/history/sqlite-rows.js";
import { databaseFilePerTest, migrateTo, queryPlan } from "../support/history-store.js";

const database = databaseFilePerTest("reins-migration-008-");
const { open, openDatabase } = database;

/** A line of a block run (migration 007): position, role, kind, call id, tool, status, result slot, time, content. */
function blockLine(
  position: number,
  role: string,
  kind: string,
  content: object,
  call: { callId?: string; toolName?: string; status?: string; responsePosition?: number } = {},
): string {
  return JSON.stringify([
    position,
    role,
    kind,
    call.callId ?? null,
    call.toolName ?? null,
    call.status ?? null,
    call.responsePosition ?? null,
    100 + position,
    content,
  ]);
}

const event = (turnId: string, seq: number, type: string, fields: object = {}) =>
  JSON.stringify({ type, turnId, seq, at: 100 + seq, ...fields });

/** Two kilobytes of text: a run holding it is longer than a WITHOUT ROWID leaf keeps inline. */
const LONG_TEXT = "long ".repeat(400);

/**
 * A schema-version-7 database: session ses_a with an ended turn (a user text, a call and its result, a
 * long answer; its events in two runs) and a running turn whose call has a reserved result slot.
 */
function writeVersion7Database(): void {
  const db = openDatabase();
  migrateTo(db, 7);
  db.exec(`
    INSERT INTO sessions (id, agent_id, created_at, updated_at, next_position, principal, step_mode, title)
      VALUES ('ses_a', 'default', 100, 900, 7, NULL, 0, 'first');
    INSERT INTO turns (id, session_id, agent_id, provider, model, status, stop_reason, started_at, ended_at,
        tool_call_count, depth)
      VALUES ('turn_a1', 'ses_a', 'default', 'scripted', 'm', 'completed', 'end_turn', 100, 200, 1, 0),
             ('turn_a2', 'ses_a', 'default', 'scripted', 'm', 'running', NULL, 300, NULL, 0, 0);
  `);
  const insertRun = db.prepare(
    "INSERT INTO history_blocks (session_id, position, turn_id, tool_calls, blocks) VALUES (?, ?, ?, ?, ?)",
  );
  insertRun.run(
    "ses_a",
    0,
    "turn_a1",
    1,
    [
      blockLine(0, "user", "text", { text: "go" }),
      blockLine(
        1,
        "assistant",
        "tool_call",
        { input: { text: "x" } },
        { callId: "c1", toolName: "echo", responsePosition: 2 },
      ),
    ].join("\n"),
  );
  insertRun.run(
    "ses_a",
    2,
    "turn_a1",
    0,
    [
      blockLine(
        2,
        "tool",
        "tool_response",
        { result: "x", isError: false },
        { callId: "c1", toolName: "echo", status: "complete" },
      ),
      blockLine(3, "assistant", "text", { text: LONG_TEXT }),
    ].join("\n"),
  );
  insertRun.run(
    "ses_a",
    4,
    "turn_a2",
    1,
    [
      blockLine(4, "user", "text", { text: "again" }),
      blockLine(
        5,
        "assistant",
        "tool_call",
        { input: {} },
        { callId: "c2", toolName: "echo", responsePosition: 6 },
      ),
    ].join("\n"),
  );
  const insertEvents = db.prepare(
    "INSERT INTO turn_events (turn_id, seq, last_seq, payload) VALUES (?, ?, ?, ?)",
  );
  insertEvents.run(
    "turn_a1",
    1,
    2,
    [event("turn_a1", 1, "turn_start"), event("turn_a1", 2, "tool_start")].join("\n"),
  );
  insertEvents.run(
    "turn_a1",
    3,
    4,
    [event("turn_a1", 3, "text_delta", { text: LONG_TEXT }), event("turn_a1", 4, "turn_complete")].join("\n"),
  );
  insertEvents.run("turn_a2", 1, 1, event("turn_a2", 1, "turn_start"));
  db.close();
}

/** Pages of the runs' tables that hold the part of a row its leaf could not. */
function overflowPages(db: Database): number {
  const row = db
    .prepare(
      "SELECT COUNT(*) AS pages FROM dbstat WHERE name IN ('history_blocks', 'turn_events') AND pagetype = 'overflow'",
    )
    .get() as { pages: number };
  return row.pages;
}

/** A statement to run on `db`, for `expect(…).toThrow`. */
const refusalOn = (db: Database) => (sql: string) => () => db.prepare(sql).run();

const place = (turnId: string, position: number) => ({
  sessionId: "ses_a",
  turnId,
  position,
  createdAt: 100 + position,
});

describe("migration 008 on a populated schema-version-7 database", () => {
  beforeEach(writeVersion7Database);

  it("reads every block and event back as it was", () => {
    const store = open();
    expect(store.getHistory("ses_a")).toEqual([
      { kind: "text", role: "user", text: "go", ...place("turn_a1", 0) },
      {
        kind: "tool_call",
        role: "assistant",
        callId: "c1",
        name: "echo",
        input: { text: "x" },
        ...place("turn_a1", 1),
      },
      {
        kind: "tool_response",
        role: "tool",
        callId: "c1",
        name: "echo",
        status: "complete",
        result: "x",
        isError: false,
        ...place("turn_a1", 2),
      },
      { kind: "text", role: "assistant", text: LONG_TEXT, ...place("turn_a1", 3) },
      { kind: "text", role: "user", text: "again", ...place("turn_a2", 4) },
      { kind: "tool_call", role: "assistant", callId: "c2", name: "echo", input: {}, ...place("turn_a2", 5) },
    ]);
    expect(store.listEvents("turn_a1").map((stored) => stored.type)).toEqual([
      "turn_start",
      "tool_start",
      "text_delta",
      "turn_complete",
    ]);
    for (let afterSeq = 0; afterSeq <= 4; afterSeq++) {
      expect(
        store.listEvents("turn_a1", afterSeq).map((stored) => stored.seq),
        `after ${afterSeq}`,
      ).toEqual([1, 2, 3, 4].filter((seq) => seq > afterSeq));
    }
    expect(store.lastEventSeq("turn_a1")).toBe(4);
    expect(store.getTurn("turn_a1")).toMatchObject({ status: "completed", toolCallCount: 1 });
  });

  it("keeps the running turn's open call, its reserved slot and its count, and goes on after them", () => {
    const store = open();
    expect(store.getTurn("turn_a2")?.toolCallCount).toBe(1);
    expect(store.openCalls("turn_a2")).toEqual([{ callId: "c2", name: "echo" }]);
    store.appendEvent({ type: "text_delta", text: "y", turnId: "turn_a2", seq: 2, at: 310 } as TurnEvent);
    store.endTurn("turn_a2", { status: "interrupted", abortReason: "interrupted" }, () => ({
      status: "interrupted",
      result: "[INTERRUPTED]",
      isError: true,
    }));
    store.close();
    const reopened = open();
    expect(reopened.getHistory("ses_a").map((block) => block.position)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(reopened.getHistory("ses_a").at(-1)).toMatchObject({ callId: "c2", status: "interrupted" });
    expect(reopened.listEvents("turn_a2").map((stored) => stored.seq)).toEqual([1, 2]);
    expect(reopened.getTurn("turn_a2")).toMatchObject({ status: "interrupted", toolCallCount: 1 });
  });

  it("still refuses a second run at a position and a run of events that overlaps a stored one", () => {
    open().close();
    const refusal = refusalOn(openDatabase());
    expect(
      refusal(
        "INSERT INTO history_blocks (session_id, position, turn_id, tool_calls, blocks) VALUES ('ses_a', 4, 'turn_a2', 0, '[]')",
      ),
    ).toThrow(/UNIQUE constraint failed: history_blocks.session_id, history_blocks.position/);
    expect(
      refusal("INSERT INTO turn_events (turn_id, seq, last_seq, payload) VALUES ('turn_a1', 4, 5, '{}')"),
    ).toThrow(/stored already/);
    expect(
      refusal("INSERT INTO turn_events (turn_id, seq, last_seq, payload) VALUES ('turn_a1', 3, 3, '{}')"),
    ).toThrow(/stored already/);
    // the trigger guards inserts; a run moved onto another's first seq meets the unique index
    expect(
      refusal("UPDATE turn_events SET seq = 3, last_seq = 4 WHERE turn_id = 'turn_a1' AND seq = 1"),
    ).toThrow(/UNIQUE constraint failed: turn_events.turn_id, turn_events.seq/);
  });

  it("keeps every column's constraints: no nulls, counts and ranges checked, runs of known turns only", () => {
    open().close();
    const refusal = refusalOn(openDatabase());
    const block = (values: string) =>
      refusal(
        `INSERT INTO history_blocks (session_id, position, turn_id, tool_calls, blocks) VALUES (${values})`,
      );
    const events = (values: string) =>
      refusal(`INSERT INTO turn_events (turn_id, seq, last_seq, payload) VALUES (${values})`);
    expect(block("'ses_a', 20, 'turn_a2', 0, NULL")).toThrow(
      /NOT NULL constraint failed: history_blocks.blocks/,
    );
    expect(block("'ses_a', 20, 'turn_a2', -1, '[]'")).toThrow(/CHECK constraint failed/);
    expect(block("'ses_a', 20, 'turn_nobody', 0, '[]'")).toThrow(/FOREIGN KEY constraint failed/);
    expect(block("'ses_nobody', 20, 'turn_a2', 0, '[]'")).toThrow(/FOREIGN KEY constraint failed/);
    expect(events("'turn_a2', 5, NULL, '{}'")).toThrow(/NOT NULL constraint failed: turn_events.last_seq/);
    expect(events("'turn_a2', 5, 4, '{}'")).toThrow(/CHECK constraint failed/);
    expect(events("'turn_nobody', 1, 1, '{}'")).toThrow(/FOREIGN KEY constraint failed/);
  });

  it("keeps a run of a few kilobytes on its leaf page, where 007 gave it an overflow page", () => {
    const before = openDatabase();
    expect(overflowPages(before)).toBeGreaterThan(0);
    before.close();
    const store = open();
    const after = openDatabase();
    expect(overflowPages(after)).toBe(0);
    // a new run of about three kilobytes, written by the store, stays on its leaf too
    for (let seq = 2; seq <= 4; seq++) {
      store.appendEvent({
        type: "text_delta",
        text: LONG_TEXT.slice(0, 1_000),
        turnId: "turn_a2",
        seq,
        at: 310,
      } as TurnEvent);
    }
    store.flush();
    const run = after
      .prepare(
        "SELECT last_seq, length(payload) AS length FROM turn_events WHERE turn_id = 'turn_a2' AND seq = 2",
      )
      .get();
    expect(run).toEqual({ last_seq: 4, length: expect.any(Number) });
    expect((run as { length: number }).length).toBeGreaterThan(3_000);
    expect(overflowPages(after)).toBe(0);
  });

  it("reads history and events by index, never scanning or sorting them", () => {
    const store = open();
    const statements = prepareStatements(store.db);
    const plan = (source: string, parameters: unknown) => queryPlan(store.db, source, parameters);
    expect(plan(statements.selectHistory.source, ["ses_a"])).toBe(
      "SEARCH history_blocks USING INDEX history_by_position (session_id=?)",
    );
    expect(plan(statements.selectEvents.source, { turnId: "turn_a1", afterSeq: 2, limit: -1 })).toMatch(
      /^SEARCH turn_events USING INDEX turn_events_by_seq \(turn_id=\? AND seq>\?\)/,
    );
    expect(plan(statements.selectLastSeq.source, ["turn_a1"])).toBe(
      "SEARCH turn_events USING INDEX turn_events_by_seq (turn_id=?)",
    );
    for (const name of [
      "selectTurnBlocks",
      "deleteSessionEvents",
      "deleteSessionBlocks",
      "finishTurn",
    ] as const) {
      const source = statements[name].source;
      const detail = plan(
        source,
        Array.from({ length: (source.match(/\?/g) ?? []).length }, () => "x"),
      );
      expect(detail, name).not.toMatch(/SCAN (history_blocks|turn_events)|TEMP B-TREE/);
    }
  });
});
