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
import type { HistoryBlock } from "../../src/history/model.js";
import { toHistoryBlock, type BlockRow } from "../../src/history/sqlite-rows.js";
import { withFields } from "../../src/objects.js";
import { TurnEventBus } from "../../src/turns/event-bus.js";
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
      session.respond(
        "turn_1",
        {
          kind: "tool_response",
          role: "tool",
          callId: `call_${index}`,
          name: "echo",
          status: "complete",
          result: `${index}`,
          isError: false,
        },
        index,
      );
    }
    const byKind = (kind: HistoryBlock["kind"]) => session.history.filter((block) => block.kind === kind);
    for (const kind of ["text", "tool_call", "tool_response"] as const) {
      expect(byKind(kind)).toHaveLength(COUNT);
      expect(sharedWithPrevious(byKind(kind)), kind).toBe(COUNT - 1);
    }
  });

  it("blocks read back from rows share one hidden class per kind", () => {
    const rows: BlockRow[] = Array.from({ length: COUNT }, (_, index) => ({
      session_id: "ses_1",
      position: index,
      turn_id: "turn_1",
      role: "assistant",
      kind: "tool_call",
      call_id: `call_${index}`,
      tool_name: "echo",
      status: null,
      content: JSON.stringify({ input: { index }, providerCallId: `p${index}` }),
      response_position: null,
      created_at: index,
    }));
    const blocks = rows.map(toHistoryBlock);
    expect(blocks[0]).toMatchObject({
      kind: "tool_call",
      callId: "call_0",
      providerCallId: "p0",
      position: 0,
    });
    expect(sharedWithPrevious(blocks)).toBe(COUNT - 1);
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
});
