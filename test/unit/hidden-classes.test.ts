/**
 * Objects made on hot paths share hidden classes (src/objects.ts, docs/decisions.md #16): on Node 20's
 * V8 a literal that spreads an object and then adds properties gets a hidden class of its own nearly
 * every time, which made each stored block and each event cost microseconds to make and every later
 * read of them (the renderer's above all) miss its inline caches. Checked with V8's own
 * `%HaveSameMap`, enabled for this file only.
 */
import { setFlagsFromString } from "node:v8";
import { describe, expect, it } from "vitest";
import { LiveSession } from "../../src/history/live-session.js";
import type { HistoryBlock, ToolResponseBlock } from "../../src/history/model.js";
import { blocksOfRuns, type BlockRunRow } from "../../src/history/sqlite-rows.js";
import { createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import { withFields } from "../../src/objects.js";
import { TurnEventBus } from "../../src/turns/event-bus.js";
import { startTurn } from "../support/history-store.js";
import type { TurnEvent } from "../../src/events.js";

setFlagsFromString("--allow-natives-syntax");
// compiled after the flag is set: the only way to reach the intrinsic from a module
const haveSameMap = new Function("a", "b", "return %HaveSameMap(a, b);") as (a: object, b: object) => boolean;

/** How many of `objects` have the hidden class of the one before them. */
function sharedWithPrevious(objects: readonly object[]): number {
  let shared = 0;
  for (let index = 1; index < objects.length; index++) {
    if (haveSameMap(objects[index]!, objects[index - 1]!)) shared++;
  }
  return shared;
}

const COUNT = 500;

/** The complete result of call `call_<index>`. */
function completeResult(index: number): ToolResponseBlock {
  return {
    kind: "tool_response",
    role: "tool",
    callId: `call_${index}`,
    name: "echo",
    status: "complete",
    result: `${index}`,
    isError: false,
  };
}

const record = {
  id: "ses_1",
  agentId: "default",
  createdAt: 0,
  updatedAt: 0,
  principal: null,
  stepMode: false,
  title: null,
};

describe("hidden classes of hot-path objects", () => {
  it("the probe tells a spread-then-add literal (a class per object) from withFields (one class)", () => {
    const spread = (index: number) => ({ ...{ kind: "text", text: `t${index}` }, position: index });
    const assigned = (index: number) => withFields({ kind: "text", text: `t${index}` }, { position: index });
    const spreadObjects = Array.from({ length: COUNT }, (_, index) => spread(index));
    const assignedObjects = Array.from({ length: COUNT }, (_, index) => assigned(index));
    expect(sharedWithPrevious(spreadObjects)).toBeLessThan(COUNT / 10);
    expect(sharedWithPrevious(assignedObjects)).toBe(COUNT - 1);
  });

  it("a live session's blocks of one kind share one hidden class: calls, results, texts", () => {
    const session = new LiveSession({ ...record }, 0);
    for (let index = 0; index < COUNT; index++) {
      session.append("turn_1", [{ kind: "text", role: "user", text: `question ${index}` }], index);
      session.append(
        "turn_1",
        [{ kind: "tool_call", role: "assistant", callId: `call_${index}`, name: "echo", input: { index } }],
        index,
      );
      session.respond("turn_1", completeResult(index), index);
    }
    const byKind = (kind: HistoryBlock["kind"]) => session.history.filter((block) => block.kind === kind);
    for (const kind of ["text", "tool_call", "tool_response"] as const) {
      expect(byKind(kind)).toHaveLength(COUNT);
      expect(sharedWithPrevious(byKind(kind)), kind).toBe(COUNT - 1);
    }
  });

  it("blocks read back from rows share one hidden class per kind, the class of blocks a live session makes", () => {
    const store = createMemoryHistoryStore();
    startTurn(store);
    for (let index = 0; index < COUNT; index++) {
      store.appendAssistant("ses_1", "turn_1", [
        { kind: "text", role: "user", text: `question ${index}` },
        {
          kind: "thinking",
          role: "assistant",
          text: "hmm",
          signature: `sig${index}`,
          provider: "p",
          model: "m",
        },
        { kind: "text", role: "assistant", text: `answer ${index}` },
        {
          kind: "tool_call",
          role: "assistant",
          callId: `call_${index}`,
          providerCallId: `p${index}`,
          name: "echo",
          input: { index },
        },
      ]);
      store.recordToolResult("ses_1", "turn_1", completeResult(index));
      // runs of one commit and of many
      if (index % 7 === 0) store.flush();
    }
    store.flush();
    const live = store.getHistory("ses_1");
    const runs = store.db
      .prepare(
        "SELECT session_id, turn_id, blocks FROM history_blocks WHERE session_id = 'ses_1' ORDER BY position",
      )
      .all() as BlockRunRow[];
    const readBack = blocksOfRuns(runs).map(({ block }) => block);
    expect(readBack).toEqual(live);
    for (const kind of ["text", "thinking", "tool_call", "tool_response"] as const) {
      const blocks = readBack.filter((block) => block.kind === kind);
      expect(sharedWithPrevious(blocks), kind).toBe(blocks.length - 1);
    }
    // a restored session mixes both: each read-back block has its live twin's class
    const liveByPosition = new Map(live.map((block) => [block.position, block]));
    const unlike = readBack.filter((block) => !haveSameMap(block, liveByPosition.get(block.position)!));
    expect(unlike.map((block) => `${block.kind}@${block.position}`)).toEqual([]);
    store.close();
  });

  it("a turn's events of one type share one hidden class", () => {
    const bus = new TurnEventBus("turn_1", { appendEvent: () => {}, afterCommit: () => {} }, () => 0);
    const events: TurnEvent[] = [];
    for (let index = 0; index < COUNT; index++) {
      const event = bus.emit({ type: "text_delta", text: `word ${index}` });
      if (event) events.push(event);
    }
    expect(events).toHaveLength(COUNT);
    expect(sharedWithPrevious(events)).toBe(COUNT - 1);
  });

  it("withFields gives what the spread gives, also for an own __proto__ key (which Object.assign would follow)", () => {
    const source = JSON.parse('{"a":1,"__proto__":{"sessionId":"someone else"},"b":2}') as Record<
      string,
      unknown
    >;
    const made = withFields(source, { c: 3 });
    expect(Object.getPrototypeOf(made)).toBe(Object.prototype);
    expect((made as Record<string, unknown>).sessionId).toBeUndefined();
    expect(JSON.stringify(made)).toBe(JSON.stringify({ ...source, c: 3 }));
    expect(withFields({ a: 1, b: 2 }, { b: 3, c: undefined })).toEqual({ a: 1, b: 3, c: undefined });
  });
});
