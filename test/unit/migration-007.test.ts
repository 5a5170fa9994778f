/**
 * Migration 007 (history and events in runs) on a populated schema-version-6 database: every block
 * and event reads back as it was (a call's reserved result slot too), a running turn's calls are still
 * counted; afterwards a commit stores one row per turn for its blocks and one for its events, and a
 * row that cannot be stored costs only the blocks or events that fail.
 */
import { beforeEach, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import {
  blocksOfRuns,
  prepareChunkStatements,
  prepareStatements,
  writeBatch,
  type WriteOp,
} from "../../src/history/sqlite-rows.js";
import {
  databaseFilePerTest,
  migrateTo,
  queryPlan,
  startTurn,
  storedBlocks,
  storedEvents,
} from "../support/history-store.js";

const database = databaseFilePerTest("reins-migration-007-");
const { open, openDatabase } = database;

/**
 * A schema-version-6 database: session ses_a with an ended turn (text, thinking, two calls and their
 * results, one of them stored before the other) and a running one whose call has no result yet.
 */
function writeVersion6Database(): void {
  const db = openDatabase();
  migrateTo(db, 6);
  db.exec(`
    INSERT INTO sessions (id, agent_id, created_at, updated_at, next_position, principal, step_mode, title)
      VALUES ('ses_a', 'default', 100, 900, 10, 'alice', 0, 'first');
    INSERT INTO turns (id, session_id, agent_id, provider, model, status, stop_reason, abort_reason, started_at,
        ended_at, tool_call_count, parent_turn_id, depth, input_tokens, output_tokens)
      VALUES ('turn_a1', 'ses_a', 'default', 'scripted', 'm', 'completed', 'end_turn', NULL, 300, 350, 2, NULL, 0, 10, 20),
             ('turn_a2', 'ses_a', 'default', 'scripted', 'm', 'running', NULL, NULL, 400, NULL, 0, NULL, 0, NULL, NULL);
    INSERT INTO history_blocks (session_id, position, turn_id, role, kind, call_id, tool_name, status, content,
        response_position, created_at)
      VALUES ('ses_a', 0, 'turn_a1', 'user', 'text', NULL, NULL, NULL, '{"text":"go \\"now\\"\\n"}', NULL, 300),
             ('ses_a', 1, 'turn_a1', 'assistant', 'thinking', NULL, NULL, NULL,
               '{"text":"hm","signature":"sig","provider":"anthropic","model":"m"}', NULL, 310),
             ('ses_a', 2, 'turn_a1', 'assistant', 'tool_call', 'c1', 'echo', NULL,
               '{"input":{"text":"é 🌍"},"providerCallId":"toolu_1"}', 4, 310),
             ('ses_a', 3, 'turn_a1', 'assistant', 'tool_call', 'c2', 'exec', NULL, '{"input":{}}', 5, 310),
             ('ses_a', 5, 'turn_a1', 'tool', 'tool_response', 'c2', 'exec', 'rejected',
               '{"result":"no","isError":true}', NULL, 320),
             ('ses_a', 4, 'turn_a1', 'tool', 'tool_response', 'c1', 'echo', 'complete',
               '{"result":"é 🌍","isError":false}', NULL, 330),
             ('ses_a', 6, 'turn_a1', 'assistant', 'text', NULL, NULL, NULL, '{"text":"done"}', NULL, 340),
             ('ses_a', 7, 'turn_a2', 'user', 'text', NULL, NULL, NULL, '{"text":"again"}', NULL, 400),
             ('ses_a', 8, 'turn_a2', 'assistant', 'tool_call', 'c3', 'echo', NULL, '{"input":{"n":1}}', 9, 410);
    INSERT INTO turn_events (turn_id, seq, type, at, payload)
      VALUES ('turn_a1', 1, 'turn_start', 300, '{"type":"turn_start","turnId":"turn_a1","seq":1,"at":300}'),
             ('turn_a1', 2, 'turn_complete', 350, '{"type":"turn_complete","turnId":"turn_a1","seq":2,"at":350}'),
             ('turn_a2', 1, 'turn_start', 400, '{"type":"turn_start","turnId":"turn_a2","seq":1,"at":400}');
  `);
  db.close();
}

const place = (turnId: string, position: number, createdAt: number) => ({
  sessionId: "ses_a",
  turnId,
  position,
  createdAt,
});

describe("migration 007 on a populated schema-version-6 database", () => {
  beforeEach(writeVersion6Database);

  it("reads every block back as it was, in position order", () => {
    const store = open();
    expect(store.getHistory("ses_a")).toEqual([
      { kind: "text", role: "user", text: 'go "now"\n', ...place("turn_a1", 0, 300) },
      {
        kind: "thinking",
        role: "assistant",
        text: "hm",
        signature: "sig",
        provider: "anthropic",
        model: "m",
        ...place("turn_a1", 1, 310),
      },
      {
        kind: "tool_call",
        role: "assistant",
        callId: "c1",
        providerCallId: "toolu_1",
        name: "echo",
        input: { text: "é 🌍" },
        ...place("turn_a1", 2, 310),
      },
      {
        kind: "tool_call",
        role: "assistant",
        callId: "c2",
        name: "exec",
        input: {},
        ...place("turn_a1", 3, 310),
      },
      {
        kind: "tool_response",
        role: "tool",
        callId: "c1",
        name: "echo",
        status: "complete",
        result: "é 🌍",
        isError: false,
        ...place("turn_a1", 4, 330),
      },
      {
        kind: "tool_response",
        role: "tool",
        callId: "c2",
        name: "exec",
        status: "rejected",
        result: "no",
        isError: true,
        ...place("turn_a1", 5, 320),
      },
      { kind: "text", role: "assistant", text: "done", ...place("turn_a1", 6, 340) },
      { kind: "text", role: "user", text: "again", ...place("turn_a2", 7, 400) },
      {
        kind: "tool_call",
        role: "assistant",
        callId: "c3",
        name: "echo",
        input: { n: 1 },
        ...place("turn_a2", 8, 410),
      },
    ]);
    expect(store.pageTurns("ses_a", 1)?.blocks.map((block) => block.position)).toEqual([7, 8]);
  });

  it("keeps the running turn's open call, its reserved slot and its count", () => {
    const store = open();
    expect(store.getTurn("turn_a2")?.toolCallCount).toBe(1);
    expect(store.getTurn("turn_a1")?.toolCallCount).toBe(2);
    expect(store.openCalls("turn_a2")).toEqual([{ callId: "c3", name: "echo" }]);
    // its result lands in the slot reserved when the call was stored, before the next free position
    const closed = store.endTurn("turn_a2", { status: "interrupted", abortReason: "interrupted" }, () => ({
      status: "interrupted",
      result: "[INTERRUPTED]",
      isError: true,
    }));
    expect(closed.map((block) => block.callId)).toEqual(["c3"]);
    expect(store.getHistory("ses_a").map((block) => block.position)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(store.getTurn("turn_a2")).toMatchObject({ status: "interrupted", toolCallCount: 1 });
    store.close();
    expect(open().getHistory("ses_a").at(-1)).toMatchObject({
      callId: "c3",
      position: 9,
      status: "interrupted",
    });
  });

  it("keeps a content that is not JSON (another program's) as a string, and starts", () => {
    const db = openDatabase();
    db.prepare(
      `INSERT INTO history_blocks (session_id, position, turn_id, role, kind, content, created_at)
       VALUES ('ses_a', 10, 'turn_a2', 'assistant', 'text', 'not json', 420)`,
    ).run();
    db.close();
    const history = open().getHistory("ses_a");
    expect(history.map((block) => block.position)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 10]);
    expect(history[0]).toMatchObject({ kind: "text", text: 'go "now"\n' });
  });

  it("reads the events back, after a sequence number too, and numbers new ones after them", () => {
    const store = open();
    expect(store.listEvents("turn_a1").map((event) => event.type)).toEqual(["turn_start", "turn_complete"]);
    expect(store.listEvents("turn_a1", 1).map((event) => event.seq)).toEqual([2]);
    expect(store.lastEventSeq("turn_a1")).toBe(2);
    expect(store.lastEventSeq("turn_a2")).toBe(1);
    store.appendEvent({ type: "text_delta", text: "x", turnId: "turn_a2", seq: 2, at: 420 } as TurnEvent);
    expect(store.listEvents("turn_a2").map((event) => event.seq)).toEqual([1, 2]);
  });
});

describe("runs", () => {
  it("reads a turn's events after any sequence number from the run that holds it, by key", () => {
    const store = open();
    startTurn(store);
    for (let seq = 1; seq <= 9; seq++) {
      store.appendEvent({ type: "text_delta", text: `${seq}`, turnId: "turn_1", seq, at: seq } as TurnEvent);
      // runs 1–3, 4–6, 7–9
      if (seq % 3 === 0) store.flush();
    }
    expect(store.db.prepare("SELECT seq, last_seq FROM turn_events").all()).toEqual([
      { seq: 1, last_seq: 3 },
      { seq: 4, last_seq: 6 },
      { seq: 7, last_seq: 9 },
    ]);
    for (let afterSeq = 0; afterSeq <= 10; afterSeq++) {
      const expected = Array.from({ length: Math.max(0, 9 - afterSeq) }, (_, index) => afterSeq + 1 + index);
      expect(
        store.listEvents("turn_1", afterSeq).map((event) => event.seq),
        `after ${afterSeq}`,
      ).toEqual(expected);
    }
    // pages of at most two runs, each read on after the last event of the one before
    for (let afterSeq = 0; afterSeq <= 9; afterSeq++) {
      const pages: number[][] = [];
      for (let after = afterSeq; ;) {
        const page = store.listEvents("turn_1", after, 2).map((event) => event.seq);
        if (page.length === 0) break;
        pages.push(page);
        after = page.at(-1)!;
      }
      expect(pages.flat(), `paged after ${afterSeq}`).toEqual(
        Array.from({ length: 9 - afterSeq }, (_, index) => afterSeq + 1 + index),
      );
      expect(pages.every((page) => page.length <= 6)).toBe(true);
    }
    expect(store.listEvents("turn_1", 0, 1).map((event) => event.seq)).toEqual([1, 2, 3]);
    expect(store.lastEventSeq("turn_1")).toBe(9);
    // neither read visits the turn's earlier runs or sorts them, however long the turn
    const plan = (source: string, parameters: unknown) => queryPlan(store.db, source, parameters);
    const statements = prepareStatements(store.db);
    expect(plan(statements.selectEvents.source, { turnId: "turn_1", afterSeq: 5, limit: -1 })).toMatch(
      /^SEARCH turn_events USING INDEX turn_events_by_seq \(turn_id=\? AND seq>\?\)/,
    );
    expect(plan(statements.selectLastSeq.source, ["turn_1"])).toBe(
      "SEARCH turn_events USING INDEX turn_events_by_seq (turn_id=?)",
    );
  });

  it("reads one block per position, should a position have been written twice", () => {
    const line = (position: number, text: string) =>
      JSON.stringify([position, "assistant", "text", null, null, null, null, 1, { text }]);
    const stored = blocksOfRuns([
      { session_id: "ses_1", turn_id: "turn_1", blocks: [line(0, "a"), line(2, "first")].join("\n") },
      { session_id: "ses_1", turn_id: "turn_1", blocks: [line(1, "b"), line(2, "second")].join("\n") },
    ]);
    expect(stored.map(({ block }) => [block.position, block.kind === "text" && block.text])).toEqual([
      [0, "a"],
      [1, "b"],
      [2, "first"],
    ]);
  });

  it("stores one row per turn for the blocks of a commit and one for its events", () => {
    const store = open();
    startTurn(store, "turn_1", "ses_1");
    startTurn(store, "turn_2", "ses_2");
    store.flush();
    // one commit: three calls and their results in each of two sessions, and four events of each turn
    for (const [sessionId, turnId] of [
      ["ses_1", "turn_1"],
      ["ses_2", "turn_2"],
    ] as const) {
      const calls = ["a", "b", "c"].map((id) => ({
        kind: "tool_call" as const,
        role: "assistant" as const,
        callId: `${turnId}_${id}`,
        name: "echo",
        input: { id },
      }));
      store.appendAssistant(sessionId, turnId, calls);
      // results in another order than their calls
      for (const call of calls.reverse()) {
        store.recordToolResult(sessionId, turnId, {
          kind: "tool_response",
          role: "tool",
          callId: call.callId,
          name: "echo",
          status: "complete",
          result: call.callId,
          isError: false,
        });
      }
      for (let seq = 1; seq <= 4; seq++) {
        store.appendEvent({ type: "text_delta", text: `${seq}`, turnId, seq, at: seq } as TurnEvent);
      }
    }
    store.flush();
    const rows = (sql: string) => store.db.prepare(sql).all();
    expect(
      rows(
        "SELECT session_id, position, turn_id, tool_calls FROM history_blocks ORDER BY session_id, position",
      ),
    ).toEqual([
      { session_id: "ses_1", position: 0, turn_id: "turn_1", tool_calls: 0 },
      { session_id: "ses_1", position: 1, turn_id: "turn_1", tool_calls: 3 },
      { session_id: "ses_2", position: 0, turn_id: "turn_2", tool_calls: 0 },
      { session_id: "ses_2", position: 1, turn_id: "turn_2", tool_calls: 3 },
    ]);
    expect(rows("SELECT turn_id, seq, last_seq FROM turn_events ORDER BY turn_id")).toEqual([
      { turn_id: "turn_1", seq: 1, last_seq: 4 },
      { turn_id: "turn_2", seq: 1, last_seq: 4 },
    ]);
    expect(store.getTurn("turn_1")?.toolCallCount).toBe(3);
    store.close();
    // read back in position order: the user message, the calls, then their results in call order
    const reopened = open();
    expect(
      reopened
        .getHistory("ses_1")
        .map((block) => [block.position, block.kind, "callId" in block && block.callId]),
    ).toEqual([
      [0, "text", false],
      [1, "tool_call", "turn_1_a"],
      [2, "tool_call", "turn_1_b"],
      [3, "tool_call", "turn_1_c"],
      [4, "tool_response", "turn_1_a"],
      [5, "tool_response", "turn_1_b"],
      [6, "tool_response", "turn_1_c"],
    ]);
    expect(reopened.listEvents("turn_2", 2).map((event) => event.seq)).toEqual([3, 4]);
  });

  it("a run that cannot be stored costs only the blocks or events that fail", () => {
    const seed = open();
    startTurn(seed, "turn_1", "ses_1");
    seed.appendEvent({ type: "text_delta", text: "stored", turnId: "turn_1", seq: 2, at: 2 } as TurnEvent);
    seed.close();
    const db = openDatabase();
    const errors: string[] = [];
    const block = (turnId: string, position: number, text: string): WriteOp => ({
      kind: "block",
      block: { kind: "text", role: "assistant", text, sessionId: "ses_1", turnId, position, createdAt: 5 },
      content: JSON.stringify({ text }),
      responsePosition: null,
    });
    const event = (turnId: string, seq: number, text: string): WriteOp => ({
      kind: "event",
      turnId,
      seq,
      payload: JSON.stringify({ type: "text_delta", text, turnId, seq, at: seq }),
    });
    db.transaction(() =>
      writeBatch(
        prepareStatements(db),
        prepareChunkStatements(db),
        [
          // position 0 holds the user message already: the run keyed by it fails, block by block
          block("turn_1", 0, "taken"),
          block("turn_1", 1, "kept"),
          // a turn that does not exist: its run fails, and so does each of its blocks
          block("turn_nobody", 2, "orphan"),
          // seq 2 is stored already: the run fails, and only that event is lost
          event("turn_1", 1, "one"),
          event("turn_1", 2, "again"),
          event("turn_1", 3, "three"),
        ],
        (_error, row) => errors.push(row),
      ),
    )();
    expect(errors).toEqual(["block row", "block row", "event row"]);
    expect(
      storedBlocks(db, "ses_1").map((stored) => [stored.position, "text" in stored && stored.text]),
    ).toEqual([
      [0, "go"],
      [1, "kept"],
    ]);
    expect(storedEvents(db, "turn_1").map((stored) => [stored.seq, "text" in stored && stored.text])).toEqual(
      [
        [1, "one"],
        [2, "stored"],
        [3, "three"],
      ],
    );
  });
});
