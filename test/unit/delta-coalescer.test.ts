/**
 * The delta coalescer (docs/semantics.md#isolation-and-limits) with fake timers: deltas of one kind are
 * merged until the size threshold or the end of the time window that starts with the first of them; a change
 * of kind and `flush()` send what has gathered at once; a window of 0 sends every delta; no timer outlives a
 * flush.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { EventBody } from "../../src/events.js";
import { DeltaCoalescer, type CoalesceSettings } from "../../src/turns/delta-coalescer.js";

const WINDOW_MS = 30;
const MAX_CHARS = 10;

function coalescer(settings: CoalesceSettings = { windowMs: WINDOW_MS, maxChars: MAX_CHARS }) {
  const emitted: EventBody[] = [];
  return { deltas: new DeltaCoalescer((body) => emitted.push(body), settings), emitted };
}

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe("DeltaCoalescer", () => {
  it("sends nothing before the window ends and everything gathered when it ends", async () => {
    const { deltas, emitted } = coalescer();
    deltas.push("text_delta", "a ");
    await vi.advanceTimersByTimeAsync(10);
    deltas.push("text_delta", "b ");
    // the window runs from the first delta; later ones neither extend nor restart it
    await vi.advanceTimersByTimeAsync(WINDOW_MS - 10 - 1);
    expect(emitted).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(emitted).toEqual([{ type: "text_delta", text: "a b " }]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("starts a new window with the next delta after a send", async () => {
    const { deltas, emitted } = coalescer();
    deltas.push("text_delta", "one ");
    await vi.advanceTimersByTimeAsync(WINDOW_MS);
    deltas.push("text_delta", "two ");
    await vi.advanceTimersByTimeAsync(WINDOW_MS - 1);
    expect(emitted).toEqual([{ type: "text_delta", text: "one " }]);
    await vi.advanceTimersByTimeAsync(1);
    expect(emitted.map((body) => (body.type === "text_delta" ? body.text : ""))).toEqual(["one ", "two "]);
  });

  it("sends at once when the gathered text reaches the size threshold, leaving no timer", () => {
    const { deltas, emitted } = coalescer();
    deltas.push("text_delta", "12345");
    deltas.push("text_delta", "6789");
    expect(emitted).toEqual([]);
    deltas.push("text_delta", "0");
    expect(emitted).toEqual([{ type: "text_delta", text: "1234567890" }]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("sends a single delta longer than the threshold whole, not split", () => {
    const { deltas, emitted } = coalescer();
    const long = "x".repeat(MAX_CHARS * 3);
    deltas.push("thinking_delta", long);
    expect(emitted).toEqual([{ type: "thinking_delta", text: long }]);
  });

  it("flushes the previous kind first when the kind changes", async () => {
    const { deltas, emitted } = coalescer();
    deltas.push("thinking_delta", "hmm ");
    deltas.push("thinking_delta", "ok ");
    deltas.push("text_delta", "Answer");
    expect(emitted).toEqual([{ type: "thinking_delta", text: "hmm ok " }]);
    await vi.advanceTimersByTimeAsync(WINDOW_MS);
    expect(emitted).toEqual([
      { type: "thinking_delta", text: "hmm ok " },
      { type: "text_delta", text: "Answer" },
    ]);
  });

  it("flush() sends the remainder and clears the window's timer; a second flush sends nothing", async () => {
    const { deltas, emitted } = coalescer();
    deltas.push("text_delta", "rest");
    expect(vi.getTimerCount()).toBe(1);
    deltas.flush();
    expect(emitted).toEqual([{ type: "text_delta", text: "rest" }]);
    expect(vi.getTimerCount()).toBe(0);
    deltas.flush();
    await vi.advanceTimersByTimeAsync(WINDOW_MS * 2);
    expect(emitted).toHaveLength(1);
  });

  it("with a window of 0 sends every delta as its own event and never arms a timer", () => {
    const { deltas, emitted } = coalescer({ windowMs: 0, maxChars: MAX_CHARS });
    for (const word of ["a ", "b ", "c"]) deltas.push("text_delta", word);
    expect(emitted).toEqual([
      { type: "text_delta", text: "a " },
      { type: "text_delta", text: "b " },
      { type: "text_delta", text: "c" },
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("ignores empty deltas: they neither send an event nor arm a timer", () => {
    const { deltas, emitted } = coalescer();
    deltas.push("text_delta", "");
    deltas.flush();
    expect(emitted).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("keeps every character, in order, whatever the split", async () => {
    const { deltas, emitted } = coalescer();
    const text = "The quick brown fox jumps over the lazy dog, again and again.";
    for (const word of text.match(/\S+\s*/g) ?? []) {
      deltas.push("text_delta", word);
      await vi.advanceTimersByTimeAsync(7);
    }
    deltas.flush();
    expect(emitted.map((body) => (body.type === "text_delta" ? body.text : "")).join("")).toBe(text);
    expect(emitted.length).toBeLessThan(text.split(" ").length);
  });
});
