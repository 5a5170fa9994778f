/**
 * An ended turn's replay when its log cannot be read (docs/events.md#replay-and-reconnection): the first
 * page is read while the request is answered, so the route fails (500) and gives its place back; a later
 * page that fails ends the stream, and the client reconnects from its last event. Neither leaves a stream
 * open with nothing coming, nor a promise rejected with nobody to hear it. And a replay read as fast as
 * it is written lets the event loop run between its pages.
 */
import { describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import { REPLAY_PAGE_RUNS, streamTurnEvents, type TurnStreamDeps } from "../../src/http/turn-stream.js";

const event = (seq: number): TurnEvent =>
  ({ type: "text_delta", text: `${seq}`, turnId: "turn_1", seq, at: seq }) as TurnEvent;

/** An ended turn whose log gives `pages` and then fails; `onRead` hears each page being read. */
function endedTurn(pages: TurnEvent[][], onRead: () => void = () => {}): TurnStreamDeps {
  const remaining = [...pages];
  return {
    manager: { get: () => undefined },
    store: {
      getTurn: () => ({ id: "turn_1" }),
      listEvents: (_turnId: string, _afterSeq: number, maxRuns?: number) => {
        expect(maxRuns).toBe(REPLAY_PAGE_RUNS);
        onRead();
        const page = remaining.shift();
        if (!page) throw new Error("SQLITE_CORRUPT: database disk image is malformed");
        return page;
      },
    },
    pingIntervalMs: 60_000,
  } as unknown as TurnStreamDeps;
}

describe("a replay whose log cannot be read", () => {
  it("fails the request when the first page cannot be read, and gives the place back", () => {
    let closes = 0;
    expect(() => streamTurnEvents(endedTurn([]), "turn_1", 0, () => closes++)).toThrow(/SQLITE_CORRUPT/);
    expect(closes).toBe(1);
  });

  it("ends the stream after what it sent when a later page cannot be read", async () => {
    let closes = 0;
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on("unhandledRejection", onRejection);
    try {
      const response = streamTurnEvents(endedTurn([[event(1), event(2)]]), "turn_1", 0, () => closes++);
      const text = await response.text();
      expect([...text.matchAll(/^id: (\d+)$/gm)].map((match) => match[1])).toEqual(["1", "2"]);
      expect(closes).toBe(1);
      await new Promise((resolve) => setImmediate(resolve));
      expect(rejections).toEqual([]);
    } finally {
      process.off("unhandledRejection", onRejection);
    }
  });

  it("lets the event loop run between the pages of a replay its client reads as fast as it is written", async () => {
    const order: string[] = [];
    const pages = [[event(1)], [event(2)], [event(3)], []];
    const response = streamTurnEvents(
      endedTurn(pages, () => order.push("page")),
      "turn_1",
      0,
      () => {},
    );
    setImmediate(() => order.push("other work"));
    expect(await response.text()).toContain("id: 3");
    expect(order.slice(0, 3)).toEqual(["page", "other work", "page"]);
  });
});
