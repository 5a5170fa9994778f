/**
 * Time-ordered ids (src/ids.ts, docs/decisions.md #15): later ids sort after earlier ones byte by byte
 * (as SQLite compares TEXT keys), ids made in the same millisecond are still distinct, and the runtime
 * makes its session, turn and call ids this way.
 */
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/index.js";
import { createMemoryHistoryStore } from "../../src/history/index.js";
import { timeOrderedIds, timePart } from "../../src/ids.js";
import { createRuntime } from "../../src/runtime.js";
import pino from "pino";

/** JavaScript's default sort compares UTF-16 code units: for these ASCII ids, SQLite's BINARY order. */
const sorted = (ids: readonly string[]) => [...ids].sort();

describe("timePart", () => {
  it("writes a millisecond in eight base-62 digits, most significant first", () => {
    expect(timePart(0)).toBe("00000000");
    expect(timePart(61)).toBe("0000000z");
    expect(timePart(62)).toBe("00000010");
    expect(timePart(62 ** 8 - 1)).toBe("zzzzzzzz");
  });
});

describe("timeOrderedIds", () => {
  it("makes `<prefix>_` and 20 letters and digits", () => {
    const id = timeOrderedIds(() => Date.UTC(2026, 10, 23))("turn");
    expect(id).toMatch(/^turn_[0-9A-Za-z]{20}$/);
    expect(id.slice(5, 13)).toBe(timePart(Date.UTC(2026, 10, 23)));
  });

  it("sorts ids by the millisecond they were made in, across digit carries and far-apart times", () => {
    const times = [
      0,
      61,
      62,
      3_843,
      3_844,
      Date.UTC(2026, 10, 23),
      Date.UTC(2026, 10, 23) + 1,
      Date.UTC(2200, 0, 1),
    ];
    let index = 0;
    const next = timeOrderedIds(() => times[index]!);
    const ids: string[] = [];
    for (index = 0; index < times.length; index++) ids.push(next("ses"));
    expect(sorted(ids)).toEqual(ids);
    expect(sorted([...ids].reverse())).toEqual(ids);
  });

  it("keeps ids of one millisecond distinct by their random part", () => {
    const next = timeOrderedIds(() => 1_795_000_000_000);
    const ids = Array.from({ length: 10_000 }, () => next("call"));
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids.map((id) => id.slice(-12, -10))).size).toBeGreaterThan(1_000);
  });
});

describe("the runtime's ids", () => {
  it("sort sessions and turns in the order they were started, on the runtime's clock", async () => {
    let clock = Date.UTC(2026, 10, 23);
    const { config } = parseConfig({ logLevel: "silent" });
    const runtime = createRuntime(config, {
      logger: pino({ level: "silent" }),
      store: createMemoryHistoryStore(),
      now: () => clock,
    });
    try {
      const turns = [];
      for (let index = 0; index < 5; index++) {
        clock += 1_000 * (index + 1);
        const turn = runtime.manager.startTurn({ message: "hello", provider: "scripted" });
        await turn.done;
        turns.push(turn);
      }
      const sessionIds = turns.map((turn) => turn.sessionId);
      const turnIds = turns.map((turn) => turn.turnId);
      expect(sorted(sessionIds)).toEqual(sessionIds);
      expect(sorted(turnIds)).toEqual(turnIds);
      expect(turnIds[0]!.slice(5, 13)).toBe(timePart(Date.UTC(2026, 10, 23) + 1_000));
    } finally {
      runtime.store.close();
    }
  });
});
