/**
 * The store's session methods on a real SQLite file: an owner's sessions newest activity first, keyset
 * pages that stay stable while sessions are added, titles (given or the first user message cut to 80
 * characters), renames, deleting a session with everything of it, history paged by turn, and the
 * token usage a turn record keeps.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import { SqliteHistoryStore } from "../../src/history/sqlite-store.js";
import type { SessionPosition } from "../../src/history/store.js";
import { startTurn } from "../support/history-store.js";

let directory: string;
let file: string;
let clock: number;
const opened: SqliteHistoryStore[] = [];

function open(): SqliteHistoryStore {
  const store = new SqliteHistoryStore(file, { now: () => clock });
  opened.push(store);
  return store;
}

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), "reins-sessions-"));
  file = join(directory, "reins.db");
  clock = 1_000;
});
afterEach(() => {
  for (const store of opened.splice(0)) store.close();
  rmSync(directory, { recursive: true, force: true });
});

function runTurn(store: SqliteHistoryStore, sessionId: string, turnId: string, message = "hello") {
  startTurn(store, turnId, sessionId, { startedAt: clock, userMessage: message });
  store.appendAssistant(sessionId, turnId, [{ kind: "text", role: "assistant", text: `re: ${message}` }]);
  store.appendEvent({ type: "text_delta", text: "x", turnId, seq: 1, at: clock } as TurnEvent);
  store.appendTrace(turnId, { kind: "abort", reason: "user", closedCalls: 0 });
  store.endTurn(turnId, { status: "completed", stopReason: "end_turn" });
}

/** Every page of the owner's sessions, `limit` at a time. */
function allPages(store: SqliteHistoryStore, principal: string | null, limit: number) {
  const pages: string[][] = [];
  let after: SessionPosition | undefined;
  do {
    const page = store.listSessions(principal, limit, after);
    pages.push(page.sessions.map((session) => session.id));
    after = page.next ?? undefined;
  } while (after);
  return pages;
}

describe("listing an owner's sessions", () => {
  it("lists only the owner's sessions, newest activity first, ties broken by id", () => {
    const store = open();
    store.createSession("ses_a", "default", "alice");
    clock++;
    store.createSession("ses_b", "default", "alice");
    store.createSession("ses_c", "default", "alice"); // same millisecond as ses_b
    store.createSession("ses_bob", "default", "bob");
    store.createSession("ses_anon", "default", null);
    clock++;
    runTurn(store, "ses_a", "turn_a1");

    const page = store.listSessions("alice", 10);
    expect(page.sessions.map((session) => session.id)).toEqual(["ses_a", "ses_c", "ses_b"]);
    expect(page.next).toBeNull();
    expect(page.sessions[0]).toMatchObject({ turnCount: 1, title: "hello", updatedAt: 1_002 });
    expect(store.listSessions(null, 10).sessions.map((session) => session.id)).toEqual(["ses_anon"]);
  });

  it("pages through 45 sessions 20 at a time: 20, 20, 5, no duplicates", () => {
    const store = open();
    for (let index = 0; index < 45; index++) {
      clock += index % 3 === 0 ? 1 : 0; // many share a millisecond
      store.createSession(`ses_${String(index).padStart(2, "0")}`, "default", "alice");
    }
    const pages = allPages(store, "alice", 20);
    expect(pages.map((page) => page.length)).toEqual([20, 20, 5]);
    const ids = pages.flat();
    expect(new Set(ids).size).toBe(45);
    expect(ids[0]).toBe("ses_44");
    expect(ids.at(-1)).toBe("ses_00");
  });

  it("keeps its place when sessions are created or become active between pages", () => {
    const store = open();
    for (let index = 0; index < 10; index++) {
      clock++;
      store.createSession(`ses_${index}`, "default", "alice");
    }
    const first = store.listSessions("alice", 4);
    expect(first.sessions.map((session) => session.id)).toEqual(["ses_9", "ses_8", "ses_7", "ses_6"]);
    // a new session and new activity in one already seen: both go to the front, behind the cursor
    clock++;
    store.createSession("ses_new", "default", "alice");
    clock++;
    runTurn(store, "ses_8", "turn_8");
    const rest: string[] = [];
    let after = first.next ?? undefined;
    while (after) {
      const page = store.listSessions("alice", 4, after);
      rest.push(...page.sessions.map((session) => session.id));
      after = page.next ?? undefined;
    }
    expect(rest).toEqual(["ses_5", "ses_4", "ses_3", "ses_2", "ses_1", "ses_0"]);
    expect(store.listSessions("alice", 2).sessions.map((session) => session.id)).toEqual([
      "ses_8",
      "ses_new",
    ]);
  });
});

describe("titles", () => {
  it("takes the first user message cut to 80 characters when none was given, and keeps it", () => {
    const store = open();
    store.createSession("ses_1", "default", null);
    const message = `${"word ".repeat(30)}end`;
    runTurn(store, "ses_1", "turn_1", message);
    runTurn(store, "ses_1", "turn_2", "a later message");
    const expected = message.slice(0, 80);
    expect(expected).toHaveLength(80);
    expect(store.getSession("ses_1")?.title).toBe(expected);
    store.close();
    expect(open().getSession("ses_1")?.title).toBe(expected);
  });

  it("takes none from a message of white space only, and the first that says something", () => {
    const store = open();
    store.createSession("ses_1", "default", null);
    runTurn(store, "ses_1", "turn_1", " \n\t ");
    expect(store.getSession("ses_1")?.title).toBeNull();
    runTurn(store, "ses_1", "turn_2", "  second  try ");
    expect(store.getSession("ses_1")?.title).toBe("second try");
    store.close();
    expect(open().getSession("ses_1")?.title).toBe("second try");
  });

  it("never splits a character and folds line breaks into spaces", () => {
    const store = open();
    store.createSession("ses_1", "default", null);
    runTurn(store, "ses_1", "turn_1", `line one\n\nline two ${"🙂".repeat(100)}`);
    const title = store.getSession("ses_1")?.title ?? "";
    expect(Array.from(title)).toHaveLength(80);
    expect(title.startsWith("line one line two 🙂")).toBe(true);
    expect(title.endsWith("🙂")).toBe(true);
  });

  it("writes a session made, titled and written to in one commit as one row, and later changes as updates", () => {
    const store = open();
    // count the updates of session rows the store's commits make
    store.db.exec(`CREATE TEMP TABLE session_updates (id TEXT);
      CREATE TEMP TRIGGER count_session_updates AFTER UPDATE ON main.sessions
      BEGIN INSERT INTO session_updates VALUES (new.id); END;`);
    const updates = () =>
      store.db.prepare("SELECT COUNT(*) AS n FROM session_updates").get() as { n: number };
    store.createSession("ses_1", "default", null);
    clock = 1_005;
    runTurn(store, "ses_1", "turn_1", "first message");
    expect(store.getSessionSummary("ses_1")).toMatchObject({ title: "first message", turnCount: 1 });
    expect(updates().n).toBe(0);
    const stored = () =>
      store.db
        .prepare("SELECT title, next_position, created_at, updated_at FROM sessions WHERE id = ?")
        .get("ses_1");
    expect(stored()).toEqual({
      title: "first message",
      next_position: 2,
      created_at: 1_000,
      updated_at: 1_005,
    });

    clock = 1_010;
    runTurn(store, "ses_1", "turn_2", "second message");
    store.renameSession("ses_1", "Renamed");
    store.flush();
    expect(updates().n).toBeGreaterThan(0);
    expect(stored()).toEqual({ title: "Renamed", next_position: 4, created_at: 1_000, updated_at: 1_010 });
    store.close();
    expect(open().getSessionSummary("ses_1")).toMatchObject({ title: "Renamed", turnCount: 2 });
  });

  it("keeps a given title and a rename, in memory and on disk", () => {
    const store = open();
    store.createSession("ses_1", "default", null, "Planning");
    runTurn(store, "ses_1", "turn_1", "first message");
    expect(store.getSession("ses_1")?.title).toBe("Planning");
    expect(store.renameSession("ses_1", "Renamed")).toBe(true);
    expect(store.renameSession("ses_unknown", "x")).toBe(false);
    expect(store.getSession("ses_1")?.title).toBe("Renamed");
    store.close();
    expect(open().getSessionSummary("ses_1")).toMatchObject({ title: "Renamed", turnCount: 1 });
  });
});

describe("deleting a session", () => {
  it("removes its turns, history, events and trace and nothing of another session", () => {
    const store = open();
    store.createSession("ses_1", "default", null);
    store.createSession("ses_2", "default", null);
    runTurn(store, "ses_1", "turn_1");
    runTurn(store, "ses_1", "turn_2");
    runTurn(store, "ses_2", "turn_3");
    expect(store.deleteSession("ses_1")).toBe(true);
    expect(store.getSession("ses_1")).toBeUndefined();
    expect(store.getHistory("ses_1")).toEqual([]);
    expect(store.deleteSession("ses_1")).toBe(false);
    store.close();

    const db = new BetterSqlite3(file, { readonly: true });
    const count = (sql: string) => (db.prepare(sql).get() as { count: number }).count;
    try {
      expect(count("SELECT COUNT(*) AS count FROM sessions WHERE id = 'ses_1'")).toBe(0);
      expect(count("SELECT COUNT(*) AS count FROM turns WHERE session_id = 'ses_1'")).toBe(0);
      expect(count("SELECT COUNT(*) AS count FROM history_blocks WHERE session_id = 'ses_1'")).toBe(0);
      expect(count("SELECT COUNT(*) AS count FROM turn_events WHERE turn_id IN ('turn_1','turn_2')")).toBe(0);
      expect(count("SELECT COUNT(*) AS count FROM turn_trace WHERE turn_id IN ('turn_1','turn_2')")).toBe(0);
      expect(count("SELECT COUNT(*) AS count FROM turn_events WHERE turn_id = 'turn_3'")).toBe(1);
      expect(count("SELECT COUNT(*) AS count FROM history_blocks WHERE session_id = 'ses_2'")).toBe(1);
    } finally {
      db.close();
    }
    expect(open().getHistory("ses_2")).toHaveLength(2);
  });

  it("refuses while a turn runs, and forgets a cached session so its id is free again", () => {
    const store = open();
    store.createSession("ses_1", "default", null);
    startTurn(store, "turn_1", "ses_1", { startedAt: clock, userMessage: "hi" });
    expect(() => store.deleteSession("ses_1")).toThrow(/running turn/);
    store.endTurn("turn_1", { status: "completed", stopReason: "end_turn" });
    expect(store.deleteSession("ses_1")).toBe(true);
    // the in-memory copy is gone too: the same id can be created anew, empty
    store.createSession("ses_1", "default", null);
    expect(store.getHistory("ses_1")).toEqual([]);
  });

  it("keeps a child turn of another session, unlinked from its deleted parent", () => {
    const store = open();
    store.createSession("ses_parent", "default", null);
    store.createSession("ses_child", "default", null);
    runTurn(store, "ses_parent", "turn_parent");
    store.beginTurn({
      id: "turn_child",
      sessionId: "ses_child",
      agentId: "default",
      provider: "scripted",
      model: "scripted-1",
      startedAt: clock,
      userMessage: "sub task",
      parentTurnId: "turn_parent",
      depth: 1,
    });
    store.endTurn("turn_child", { status: "completed", stopReason: "end_turn" });
    expect(store.deleteSession("ses_parent")).toBe(true);
    expect(store.getTurn("turn_child")).toMatchObject({ parentTurnId: null, sessionId: "ses_child" });
  });
});

describe("history by turn", () => {
  it("pages the newest turns first, each page oldest first with its blocks", () => {
    const store = open();
    store.createSession("ses_1", "default", null);
    for (let index = 1; index <= 5; index++) runTurn(store, "ses_1", `turn_${index}`, `message ${index}`);
    const first = store.pageTurns("ses_1", 2);
    expect(first?.turns.map((turn) => turn.id)).toEqual(["turn_4", "turn_5"]);
    expect(first?.blocks.map((block) => block.kind === "text" && block.text)).toEqual([
      "message 4",
      "re: message 4",
      "message 5",
      "re: message 5",
    ]);
    expect(first?.nextBefore).toBe("turn_4");
    const second = store.pageTurns("ses_1", 2, "turn_4");
    expect(second?.turns.map((turn) => turn.id)).toEqual(["turn_2", "turn_3"]);
    const third = store.pageTurns("ses_1", 2, second?.nextBefore ?? "");
    expect(third?.turns.map((turn) => turn.id)).toEqual(["turn_1"]);
    expect(third?.nextBefore).toBeNull();
    expect(store.pageTurns("ses_1", 2, "turn_unknown")).toBeUndefined();
  });
});

describe("token usage", () => {
  it("is kept on the turn record when the turn ends with it, null otherwise", () => {
    const store = open();
    store.createSession("ses_1", "default", null);
    runTurn(store, "ses_1", "turn_1");
    store.beginTurn({
      id: "turn_2",
      sessionId: "ses_1",
      agentId: "default",
      provider: "anthropic",
      model: "m",
      startedAt: clock,
      userMessage: "hi",
    });
    store.endTurn("turn_2", {
      status: "completed",
      stopReason: "end_turn",
      usage: { inputTokens: 120, outputTokens: 7 },
    });
    expect(store.getTurn("turn_1")?.usage).toBeNull();
    expect(store.getTurn("turn_2")?.usage).toEqual({ inputTokens: 120, outputTokens: 7 });
  });
});
