/**
 * A JSON object with one long array written a slice at a time (src/http/json-stream.ts): the text is
 * exactly `JSON.stringify` of the object, whatever its parts; a long array is written in several slices
 * with a turn of the event loop between them, so other work runs before the last slice is made; a
 * reader that stops early stops the writing. Over the app: a large session's history, whole or a
 * page, is the same JSON, and other work runs before its last slice is written.
 */
import fc from "fast-check";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { parseConfig } from "../../src/config/load.js";
import { createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import { SLICE_CHARACTERS, jsonWithLongArray } from "../../src/http/json-stream.js";
import { createRuntime } from "../../src/runtime.js";

async function chunksOf(stream: ReadableStream<Uint8Array>): Promise<string[]> {
  const decoder = new TextDecoder();
  const chunks: string[] = [];
  for await (const chunk of stream) chunks.push(decoder.decode(chunk));
  return chunks;
}

/** Names, not indices: an object lists integer-like keys first, whatever the order they were set in. */
const record = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 8 }).filter((key) => key !== "__proto__" && !/^\d+$/.test(key)),
  fc.jsonValue({ maxDepth: 2 }),
  { maxKeys: 4 },
);

describe("jsonWithLongArray", () => {
  it("writes exactly JSON.stringify of the object, for any head, items and tail", async () => {
    await fc.assert(
      fc.asyncProperty(
        record,
        fc.array(fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant(undefined)), { maxLength: 20 }),
        record,
        async (head, items, tail) => {
          fc.pre(
            !("blocks" in head) && !("blocks" in tail) && Object.keys(tail).every((key) => !(key in head)),
          );
          const text = (await chunksOf(jsonWithLongArray(head, "blocks", items, tail))).join("");
          expect(text).toBe(JSON.stringify({ ...head, blocks: items, ...tail }));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("writes a long array in slices, and other work runs before the last one is made", async () => {
    const item = { kind: "tool_response", result: "x".repeat(SLICE_CHARACTERS / 4), note: "é😀" };
    const items = Array.from({ length: 20 }, (_, index) => ({ ...item, position: index }));
    let otherWorkRan = false;
    setImmediate(() => (otherWorkRan = true));
    const decoder = new TextDecoder();
    const chunks: string[] = [];
    let otherWorkBeforeLast = false;
    for await (const chunk of jsonWithLongArray({ sessionId: "ses_1" }, "blocks", items, {
      nextBefore: null,
    })) {
      otherWorkBeforeLast = otherWorkRan;
      chunks.push(decoder.decode(chunk));
    }
    expect(chunks.length).toBeGreaterThanOrEqual(5);
    expect(otherWorkBeforeLast).toBe(true);
    expect(JSON.parse(chunks.join(""))).toEqual({ sessionId: "ses_1", blocks: items, nextBefore: null });
  });

  it("stops making slices when its reader cancels", async () => {
    let serialized = 0;
    const items = Array.from({ length: 50 }, () => ({
      toJSON: () => {
        serialized++;
        return "y".repeat(SLICE_CHARACTERS / 2);
      },
    }));
    const reader = jsonWithLongArray({}, "blocks", items).getReader();
    await reader.read();
    await reader.read();
    await reader.cancel();
    await new Promise((resolve) => setImmediate(resolve));
    expect(serialized).toBeLessThan(items.length / 2);
  });
});

describe("GET /api/sessions/:id/history of a large session", () => {
  it("is written in slices, whole or a page, and other work runs before the last one", async () => {
    const { config } = parseConfig({ logLevel: "silent" });
    const runtime = createRuntime(config, {
      store: createMemoryHistoryStore(),
      logger: pino({ level: "silent" }),
    });
    try {
      const app = buildApp(runtime);
      let sessionId: string | undefined;
      for (let turn = 0; turn < 4; turn++) {
        const message = `${turn} ${"z".repeat(SLICE_CHARACTERS / 2)}`;
        const run = runtime.manager.startTurn({ message, ...(sessionId ? { sessionId } : {}) });
        sessionId = run.sessionId;
        await run.done;
      }
      const stored = runtime.store.getHistory(sessionId!);
      for (const query of ["", "?limit=10"]) {
        let otherWorkRan = false;
        setImmediate(() => (otherWorkRan = true));
        const response = await app.request(`/api/sessions/${sessionId}/history${query}`);
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toBe("application/json");
        const decoder = new TextDecoder();
        let text = "";
        let otherWorkBeforeLast = false;
        for await (const chunk of response.body!) {
          otherWorkBeforeLast = otherWorkRan;
          text += decoder.decode(chunk);
        }
        expect(otherWorkBeforeLast, query).toBe(true);
        const body = JSON.parse(text) as { sessionId: string; turns: unknown[]; blocks: unknown[] };
        expect(body.sessionId).toBe(sessionId);
        expect(body.turns).toHaveLength(4);
        expect(body.blocks).toEqual(JSON.parse(JSON.stringify(stored)));
        expect("nextBefore" in body, query).toBe(query !== "");
      }
    } finally {
      await runtime.manager.abortAll("shutdown", 1_000);
      runtime.store.close();
    }
  });
});
