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

/** One id made at each of `times`, in that order. */
function idsMadeAt(times: readonly number[], prefix: string): string[] {
  let index = 0;
  const next = timeOrderedIds(() => times[index]!);
  const ids: string[] = [];
  for (index = 0; index < times.length; index++) ids.push(next(prefix));
  return ids;
}

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
    const ids = idsMadeAt(times, "ses");
    expect(sorted(ids)).toEqual(ids);
  });

  it("sorts by time at every digit: each base-62 digit value at each of the eight places", () => {
    const times: number[] = [];
    for (let place = 0; place < 8; place++) {
      for (let digit = 1; digit < 62; digit++) times.push(digit * 62 ** place);
    }
    times.sort((left, right) => left - right);
    const ids = idsMadeAt(times, "turn");
    expect(sorted(ids)).toEqual(ids);
  });

  it("floors fractions, clamps negatives to 0, and keeps ids unique when the clock goes back", () => {
    expect(timePart(61.9)).toBe("0000000z");
    expect(timePart(-5)).toBe("00000000");
    let clock = 1_000;
    const next = timeOrderedIds(() => clock);
    const later = next("turn");
    clock = 999;
    const earlier = next("turn");
    expect(earlier.slice(5, 13)).toBe(timePart(999));
    expect(earlier < later).toBe(true);
    expect(earlier).not.toBe(later);
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
      // the scripted model's tool call gets the runtime's call id, made on the same clock
      clock += 60_000;
      const tooled = runtime.manager.startTurn({ message: '/tool echo {"text":"x"}', provider: "scripted" });
      await tooled.done;
      const call = runtime.store.getHistory(tooled.sessionId).find((block) => block.kind === "tool_call");
      expect(call && "callId" in call ? call.callId : undefined).toMatch(
        new RegExp(`^call_${timePart(clock)}[0-9A-Za-z]{12}$`),
      );
    } finally {
      runtime.store.close();
    }
  });
});
