/**
 * The SQLite history store on a real temporary file: WAL, migrations, idempotent tool results,
 * reserved result slots, turn-boundary transactions, the event log, and reading an old database.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import { migrate } from "../../src/history/migrate.js";
import type { BlockContent, ToolResponseBlock } from "../../src/history/model.js";
import { SqliteHistoryStore } from "../../src/history/sqlite-store.js";
import { startTurn } from "../support/history-store.js";

const FIXTURE_V1 = new URL("../fixtures/db-v1.sql", import.meta.url);

let directory: string;
let file: string;
const opened: SqliteHistoryStore[] = [];
let writeErrors: string[] = [];

function open(): SqliteHistoryStore {
  let clock = 1_000;
  writeErrors = [];
  const store = new SqliteHistoryStore(file, {
    now: () => clock++,
    onWriteError: (_error, detail) => writeErrors.push(detail),
  });
  opened.push(store);
  return store;
}

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), "reins-store-"));
  file = join(directory, "reins.db");
});
afterEach(() => {
  for (const store of opened.splice(0)) store.close();
  rmSync(directory, { recursive: true, force: true });
});

const call = (callId: string, name = "echo"): BlockContent => ({
  kind: "tool_call",
  role: "assistant",
  callId,
  name,
  input: { text: callId },
});
const response = (callId: string, result: string, name = "echo"): ToolResponseBlock => ({
  kind: "tool_response",
  role: "tool",
  callId,
  name,
  status: "complete",
  result,
  isError: false,
});

/** Condensed history: kind, call id and (for responses) result. */
function summary(store: SqliteHistoryStore, sessionId = "ses_1") {
  return store.getHistory(sessionId).map((block) => {
    switch (block.kind) {
      case "text":
        return `${block.position} ${block.role}: ${block.text}`;
      case "thinking":
        return `${block.position} thinking: ${block.text}`;
      case "tool_call":
        return `${block.position} call ${block.callId}`;
      case "tool_response":
        return `${block.position} result ${block.callId} ${block.status}: ${block.result}`;
    }
  });
}

describe("SqliteHistoryStore", () => {
  it("uses WAL mode on a file database", () => {
    const store = open();
    expect(store.db.pragma("journal_mode", { simple: true })).toBe("wal");
  });

  it("records applied migrations and applies none again on reopen", () => {
    const first = open();
    const versions = () =>
      first.db.prepare("SELECT version, name FROM schema_migrations ORDER BY version").all() as {
        version: number;
        name: string;
      }[];
    expect(versions()).toEqual([
      { version: 1, name: "001_initial.sql" },
      { version: 2, name: "002_turn_trace.sql" },
      { version: 3, name: "003_session_owner_and_step_mode.sql" },
      { version: 4, name: "004_session_titles_and_usage.sql" },
      { version: 5, name: "005_rejected_results.sql" },
      { version: 6, name: "006_cheaper_writes.sql" },
      { version: 7, name: "007_runs.sql" },
      { version: 8, name: "008_runs_in_rowid_tables.sql" },
    ]);
    startTurn(first);
    first.close();

    const second = open();
    expect(second.db.prepare("SELECT version, name FROM schema_migrations ORDER BY version").all()).toEqual([
      { version: 1, name: "001_initial.sql" },
      { version: 2, name: "002_turn_trace.sql" },
      { version: 3, name: "003_session_owner_and_step_mode.sql" },
      { version: 4, name: "004_session_titles_and_usage.sql" },
      { version: 5, name: "005_rejected_results.sql" },
      { version: 6, name: "006_cheaper_writes.sql" },
      { version: 7, name: "007_runs.sql" },
      { version: 8, name: "008_runs_in_rowid_tables.sql" },
    ]);
    expect(migrate(second.db)).toEqual([]);
    expect(summary(second)).toEqual(["0 user: go"]);
  });

  it("keeps the first result of a call and refuses a second one", () => {
    const store = open();
    startTurn(store);
    store.appendAssistant("ses_1", "turn_1", [call("c1")]);

    expect(store.recordToolResult("ses_1", "turn_1", response("c1", "first"))).toBe(true);
    expect(
      store.recordToolResult("ses_1", "turn_1", {
        ...response("c1", "[CANCELLED] Turn aborted by user."),
        status: "cancelled",
        isError: true,
      }),
    ).toBe(false);

    expect(summary(store)).toEqual(["0 user: go", "1 call c1", "2 result c1 complete: first"]);
  });

  it("refuses a result for a call it does not know", () => {
    const store = open();
    startTurn(store);
    expect(() => store.recordToolResult("ses_1", "turn_1", response("nope", "x"))).toThrow(/nope/);
    expect(summary(store)).toEqual(["0 user: go"]);
  });

  it("reads results back in call order whatever order they were written in", () => {
    const store = open();
    startTurn(store);
    store.appendAssistant("ses_1", "turn_1", [
      { kind: "text", role: "assistant", text: "calling" },
      call("a"),
      call("b"),
      call("c"),
    ]);
    store.recordToolResult("ses_1", "turn_1", response("c", "C"));
    store.recordToolResult("ses_1", "turn_1", response("a", "A"));
    // the next assistant message lands after every reserved slot, even one still empty
    store.appendAssistant("ses_1", "turn_1", [{ kind: "text", role: "assistant", text: "next" }]);
    store.recordToolResult("ses_1", "turn_1", response("b", "B"));

    expect(summary(store)).toEqual([
      "0 user: go",
      "1 assistant: calling",
      "2 call a",
      "3 call b",
      "4 call c",
      "5 result a complete: A",
      "6 result b complete: B",
      "7 result c complete: C",
      "8 assistant: next",
    ]);
  });

  it("ends a turn by closing its open calls and recording the outcome", () => {
    const store = open();
    startTurn(store);
    store.appendAssistant("ses_1", "turn_1", [call("a"), call("b", "hang"), call("c", "hang")]);
    store.recordToolResult("ses_1", "turn_1", response("a", "done"));
    expect(store.openCalls("turn_1")).toEqual([
      { callId: "b", name: "hang" },
      { callId: "c", name: "hang" },
    ]);

    const closed = store.endTurn("turn_1", { status: "aborted", abortReason: "user", endedAt: 99 }, () => ({
      status: "cancelled",
      result: "[CANCELLED] Turn aborted by user.",
      isError: true,
    }));

    expect(closed.map((block) => [block.callId, block.name, block.status])).toEqual([
      ["b", "hang", "cancelled"],
      ["c", "hang", "cancelled"],
    ]);
    expect(store.openCalls("turn_1")).toEqual([]);
    expect(summary(store)).toEqual([
      "0 user: go",
      "1 call a",
      "2 call b",
      "3 call c",
      "4 result a complete: done",
      "5 result b cancelled: [CANCELLED] Turn aborted by user.",
      "6 result c cancelled: [CANCELLED] Turn aborted by user.",
    ]);
    expect(store.getTurn("turn_1")).toMatchObject({
      status: "aborted",
      abortReason: "user",
      stopReason: null,
      endedAt: 99,
      toolCallCount: 3,
    });
  });

  it("writes nothing of an endTurn that fails midway (one transaction)", () => {
    const store = open();
    startTurn(store);
    store.appendAssistant("ses_1", "turn_1", [call("a"), call("b")]);
    let made = 0;
    expect(() =>
      store.endTurn("turn_1", { status: "aborted", abortReason: "user" }, () => {
        if (++made === 2) throw new Error("disk on fire");
        return { status: "cancelled", result: "[CANCELLED] Turn aborted by user.", isError: true };
      }),
    ).toThrow("disk on fire");

    expect(store.getTurn("turn_1")?.status).toBe("running");
    expect(store.openCalls("turn_1").map((open) => open.callId)).toEqual(["a", "b"]);
  });

  it("leaves an already-ended turn as it is", () => {
    const store = open();
    startTurn(store);
    store.appendAssistant("ses_1", "turn_1", [call("a")]);
    store.endTurn("turn_1", { status: "completed", stopReason: "end_turn", endedAt: 50 });

    const closed = store.endTurn("turn_1", { status: "aborted", abortReason: "user", endedAt: 60 }, () => ({
      status: "cancelled",
      result: "[CANCELLED] Turn aborted by user.",
      isError: true,
    }));

    expect(closed).toEqual([]);
    expect(store.getTurn("turn_1")).toMatchObject({
      status: "completed",
      stopReason: "end_turn",
      abortReason: null,
      endedAt: 50,
    });
    expect(summary(store)).toEqual(["0 user: go", "1 call a"]);
  });

  it("round-trips events and lists exactly those after a sequence number", () => {
    const store = open();
    startTurn(store);
    startTurn(store, "turn_2", "ses_2");
    const events: TurnEvent[] = [
      {
        type: "turn_start",
        sessionId: "ses_1",
        agentId: "default",
        provider: "scripted",
        model: "scripted-1",
        startedAt: 1,
        turnId: "turn_1",
        seq: 1,
        at: 10,
      },
      { type: "text_delta", text: "héllo 🌍\n", turnId: "turn_1", seq: 2, at: 11 },
      {
        type: "tool_start",
        toolId: "c1",
        toolName: "echo",
        input: { text: "x", nested: [1, null] },
        timeoutMs: 120_000,
        idleTimeoutMs: 0,
        turnId: "turn_1",
        seq: 3,
        at: 12,
      },
      {
        type: "turn_complete",
        stopReason: "end_turn",
        durationMs: 5,
        toolCallCount: 1,
        usage: { inputTokens: 0, outputTokens: 0 },
        turnId: "turn_1",
        seq: 4,
        at: 13,
      },
    ];
    for (const event of events) store.appendEvent(event);
    store.appendEvent({ type: "text_delta", text: "other turn", turnId: "turn_2", seq: 1, at: 20 });

    expect(store.listEvents("turn_1")).toEqual(events);
    expect(store.listEvents("turn_1", 2)).toEqual(events.slice(2));
    expect(store.listEvents("turn_1", 4)).toEqual([]);
    expect(store.lastEventSeq("turn_1")).toBe(4);
    expect(store.lastEventSeq("turn_9")).toBe(0);
    // a sequence number is written once: a second write of it is refused and reported
    store.appendEvent({ ...events[1]!, text: "again" } as TurnEvent);
    expect(store.listEvents("turn_1", 1)[0]).toEqual(events[1]);
    expect(writeErrors).toEqual([expect.stringContaining("event")]);
  });

  it("counts a running turn's calls live and keeps the count recorded at its end", () => {
    const store = open();
    startTurn(store);
    expect(store.getTurn("turn_1")?.toolCallCount).toBe(0);
    store.appendAssistant("ses_1", "turn_1", [call("a"), call("b")]);
    expect(store.getTurn("turn_1")?.toolCallCount).toBe(2);
    store.appendAssistant("ses_1", "turn_1", [call("c")]);
    expect(store.getTurn("turn_1")?.toolCallCount).toBe(3);

    store.endTurn("turn_1", { status: "completed", stopReason: "end_turn" });
    expect(store.getTurn("turn_1")?.toolCallCount).toBe(3);
    expect(store.listTurns({ sessionId: "ses_1" }).map((turn) => turn.toolCallCount)).toEqual([3]);
  });

  it("numbers a turn's trace 1, 2, 3… while it runs, after its end (a zombie's late decision) and after a reopen", () => {
    const store = open();
    startTurn(store);
    const kinds = (turnId: string, from: SqliteHistoryStore) =>
      from.listTrace(turnId).map((entry) => `${entry.seq} ${entry.kind}`);
    // one tick's decisions commit together, in order
    store.appendTrace("turn_1", {
      kind: "skipped",
      callId: "c1",
      toolName: "echo",
      dependency: 0,
      usedDefault: false,
    });
    store.appendTrace("turn_1", { kind: "zombie", state: "started", callId: "c2", toolName: "echo" });
    store.endTurn("turn_1", { status: "completed", stopReason: "end_turn" });
    store.appendTrace("turn_1", { kind: "zombie", state: "settled", callId: "c2", toolName: "echo" });
    expect(kinds("turn_1", store)).toEqual(["1 skipped", "2 zombie", "3 zombie"]);
    store.close();
    const reopened = open();
    reopened.appendTrace("turn_1", { kind: "abort", reason: "user", closedCalls: 0 });
    expect(kinds("turn_1", reopened)).toEqual(["1 skipped", "2 zombie", "3 zombie", "4 abort"]);
    expect(writeErrors).toEqual([]);
  });

  it("keeps what it wrote across a reopen", () => {
    const first = open();
    startTurn(first);
    first.appendAssistant("ses_1", "turn_1", [call("a")]);
    first.recordToolResult("ses_1", "turn_1", response("a", "kept"));
    first.close();

    const second = open();
    expect(summary(second)).toEqual(["0 user: go", "1 call a", "2 result a complete: kept"]);
    expect(second.getTurn("turn_1")?.status).toBe("running");
  });

  it("keeps each thinking block of a message, signed or redacted, unchanged and in order across a reopen", () => {
    const origin = { provider: "anthropic", model: "claude-test" };
    const thinking: BlockContent[] = [
      { kind: "thinking", role: "assistant", text: "one", signature: "S-one", ...origin },
      { kind: "thinking", role: "assistant", text: "two", signature: "S-two", ...origin },
      { kind: "thinking", role: "assistant", text: "", redacted: "ENCRYPTED-DATA", ...origin },
    ];
    const first = open();
    startTurn(first);
    first.appendAssistant("ses_1", "turn_1", [...thinking, call("a")]);
    first.close();

    expect(open().getHistory("ses_1").slice(1, 4)).toStrictEqual(
      thinking.map((content, index) => ({
        ...content,
        sessionId: "ses_1",
        turnId: "turn_1",
        position: index + 1,
        createdAt: expect.any(Number) as number,
      })),
    );
  });
});

describe("sessions held in memory", () => {
  const KB = 1024;
  const openWithCache = (cachedCharacters: number) => {
    const store = new SqliteHistoryStore(file, { cachedCharacters });
    opened.push(store);
    return store;
  };
  /** One ended turn with one call and a result of `resultCharacters` characters. */
  const turnWithResult = (store: SqliteHistoryStore, sessionId: string, resultCharacters: number) => {
    const turnId = `turn_${sessionId}`;
    startTurn(store, turnId, sessionId);
    store.appendAssistant(sessionId, turnId, [call(`c_${sessionId}`)]);
    store.recordToolResult(sessionId, turnId, response(`c_${sessionId}`, "x".repeat(resultCharacters)));
    store.endTurn(turnId, { status: "completed", stopReason: "end_turn" });
  };

  it("holds at most cachedCharacters of idle history, dropping the least recently used sessions", () => {
    const store = openWithCache(256 * KB);
    for (let index = 0; index < 20; index++) turnWithResult(store, `ses_${index}`, 50 * KB);
    const { sessions, characters } = store.cacheStats;
    expect(characters).toBeLessThanOrEqual(256 * KB);
    // the newest stay: 20 sessions of 50 KB each could not
    expect(sessions).toBeGreaterThanOrEqual(4);
    expect(sessions).toBeLessThanOrEqual(5);
    // a dropped session reads back whole, writes still queued for it included
    expect(summary(store, "ses_0")).toEqual([
      "0 user: go",
      "1 call c_ses_0",
      `2 result c_ses_0 complete: ${"x".repeat(50 * KB)}`,
    ]);
  });

  it("keeps a session with a running turn however large, and lets it go once the turn ends", () => {
    const store = openWithCache(64 * KB);
    startTurn(store, "turn_big", "ses_big");
    store.appendAssistant("ses_big", "turn_big", [call("a"), call("b")]);
    store.recordToolResult("ses_big", "turn_big", response("a", "y".repeat(200 * KB)));
    turnWithResult(store, "ses_other", 10 * KB);
    // still running, still held: the next result lands in its slot, after the first
    store.recordToolResult("ses_big", "turn_big", response("b", "done"));
    expect(store.cacheStats.characters).toBeGreaterThan(200 * KB);
    const heads = () => summary(store, "ses_big").map((line) => line.split(":")[0]);
    expect(heads()).toEqual(["0 user", "1 call a", "2 call b", "3 result a complete", "4 result b complete"]);
    store.endTurn("turn_big", { status: "completed", stopReason: "end_turn" });
    expect(store.cacheStats.characters).toBeLessThanOrEqual(64 * KB);
    // a new turn of it loads it again and goes on after its last position
    turnWithResult(store, "ses_big", 1);
    expect(heads().slice(5)).toEqual(["5 user", "6 call c_ses_big", "7 result c_ses_big complete"]);
  });
});

describe("a database built by schema version 1", () => {
  beforeEach(() => {
    const db = new BetterSqlite3(file);
    db.exec(readFileSync(FIXTURE_V1, "utf8"));
    db.close();
  });

  it("opens with only the newer migrations applied and reads its history", () => {
    const store = open();
    expect(store.db.prepare("SELECT version FROM schema_migrations ORDER BY version").all()).toEqual([
      { version: 1 },
      { version: 2 },
      { version: 3 },
      { version: 4 },
      { version: 5 },
      { version: 6 },
      { version: 7 },
      { version: 8 },
    ]);
    expect(store.getSession("ses_v1")).toEqual({
      id: "ses_v1",
      agentId: "default",
      createdAt: 1700000001000,
      updatedAt: 1700000009000,
      principal: null,
      stepMode: false,
      title: null,
    });
    expect(store.getHistory("ses_v1").map(({ createdAt: _createdAt, ...block }) => block)).toEqual([
      {
        sessionId: "ses_v1",
        turnId: "turn_v1a",
        position: 0,
        kind: "text",
        role: "user",
        text: '/think checking\n/tool echo {"text":"hi"}',
      },
      {
        sessionId: "ses_v1",
        turnId: "turn_v1a",
        position: 1,
        kind: "thinking",
        role: "assistant",
        text: "checking",
      },
      {
        sessionId: "ses_v1",
        turnId: "turn_v1a",
        position: 2,
        kind: "tool_call",
        role: "assistant",
        callId: "call_v1a1",
        providerCallId: "scripted_0_1",
        name: "echo",
        input: { text: "hi" },
      },
      {
        sessionId: "ses_v1",
        turnId: "turn_v1a",
        position: 3,
        kind: "tool_response",
        role: "tool",
        callId: "call_v1a1",
        name: "echo",
        status: "complete",
        result: "hi",
        isError: false,
      },
      {
        sessionId: "ses_v1",
        turnId: "turn_v1a",
        position: 4,
        kind: "text",
        role: "assistant",
        text: "echo: hi",
      },
      {
        sessionId: "ses_v1",
        turnId: "turn_v1b",
        position: 5,
        kind: "text",
        role: "user",
        text: "/tool hang {}",
      },
      {
        sessionId: "ses_v1",
        turnId: "turn_v1b",
        position: 6,
        kind: "tool_call",
        role: "assistant",
        callId: "call_v1b1",
        providerCallId: "scripted_0_0",
        name: "hang",
        input: {},
      },
      {
        sessionId: "ses_v1",
        turnId: "turn_v1b",
        position: 7,
        kind: "tool_response",
        role: "tool",
        callId: "call_v1b1",
        name: "hang",
        status: "cancelled",
        result: "[CANCELLED] Turn aborted by user.",
        isError: true,
      },
    ]);
  });

  it("reads its turns and event log", () => {
    const store = open();
    expect(store.listTurns({ sessionId: "ses_v1" })).toEqual([
      {
        id: "turn_v1a",
        sessionId: "ses_v1",
        agentId: "default",
        provider: "scripted",
        model: "scripted-1",
        status: "completed",
        stopReason: "end_turn",
        abortReason: null,
        startedAt: 1700000001000,
        endedAt: 1700000002000,
        toolCallCount: 1,
        parentTurnId: null,
        depth: 0,
        usage: null,
      },
      {
        id: "turn_v1b",
        sessionId: "ses_v1",
        agentId: "default",
        provider: "scripted",
        model: "scripted-1",
        status: "aborted",
        stopReason: null,
        abortReason: "user",
        startedAt: 1700000005000,
        endedAt: 1700000009000,
        toolCallCount: 1,
        parentTurnId: null,
        depth: 0,
        usage: null,
      },
    ]);
    expect(store.listTurns({ status: "running" })).toEqual([]);
    expect(store.listEvents("turn_v1b", 2).map((event) => [event.seq, event.type])).toEqual([
      [3, "tool_result"],
      [4, "turn_abort"],
    ]);
    expect(store.lastEventSeq("turn_v1b")).toBe(4);
  });

  it("continues the session after its last position", () => {
    const store = open();
    startTurn(store, "turn_new", "ses_v1");
    store.appendAssistant("ses_v1", "turn_new", [call("call_new")]);
    store.recordToolResult("ses_v1", "turn_new", response("call_new", "fresh"));
    expect(summary(store, "ses_v1").slice(-4)).toEqual([
      "7 result call_v1b1 cancelled: [CANCELLED] Turn aborted by user.",
      "8 user: go",
      "9 call call_new",
      "10 result call_new complete: fresh",
    ]);
  });
});

describe("listTurns", () => {
  it("counts a running turn's calls live, as getTurn does", () => {
    const store = open();
    startTurn(store);
    store.appendAssistant("ses_1", "turn_1", [call("call_a")]);
    expect(store.getTurn("turn_1")?.toolCallCount).toBe(1);
    expect(store.listTurns()[0]?.toolCallCount).toBe(1);
  });
});
