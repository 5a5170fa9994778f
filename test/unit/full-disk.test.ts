/**
 * A database that refuses writes — a full disk (here SQLite's own: `max_page_count` reached, the same
 * SQLITE_FULL), an I/O error — and then takes them again. A batch commits whole or not at all; it is kept
 * and committed again, ahead of the writes made since, once the database takes writes; meanwhile the
 * store says it cannot take writes, so no turn or session starts (503 `store_unavailable`, /readyz 503).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { buildApp } from "../../src/app.js";
import { parseConfig } from "../../src/config/load.js";
import { SqliteHistoryStore } from "../../src/history/sqlite-store.js";
import { RETRY_FIRST_DELAY_MS, WriteQueue } from "../../src/history/write-queue.js";
import { createRuntime } from "../../src/runtime.js";
import { StoreUnavailableError } from "../../src/turns/errors.js";
import { TurnEventBus } from "../../src/turns/event-bus.js";
import { startTurn, storedBlocks } from "../support/history-store.js";

const cleanups: (() => void)[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), "reins-full-"));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

/** The database takes no new page from now on (SQLITE_FULL), until `makeRoom`. */
function fillUp(store: SqliteHistoryStore) {
  store.db.pragma(`max_page_count = ${store.db.pragma("page_count", { simple: true }) as number}`);
  return { makeRoom: () => store.db.pragma("max_page_count = 1073741823") };
}

const BIG = "x".repeat(200_000);

describe("the write queue when commits fail", () => {
  function failingQueue(retryable: boolean) {
    let failures = 1;
    const committed: number[][] = [];
    const errors: unknown[] = [];
    const queue = new WriteQueue<number>({
      commit: (ops) => {
        if (failures-- > 0) throw new Error("disk full");
        committed.push(ops);
      },
      onError: (error) => errors.push(error),
      retryable: () => retryable,
    });
    cleanups.push(() => queue.close());
    return { queue, committed, errors, failWith: (count: number) => (failures = count) };
  }

  it("keeps a failed batch with its callbacks, and commits it again ahead of later writes, only on the retry", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const { queue, committed, errors, failWith } = failingQueue(true);
    const delivered: string[] = [];
    queue.push(1);
    queue.push(2);
    queue.afterCommit(() => delivered.push("after 2"));
    queue.flush();
    expect(errors).toHaveLength(1);
    expect(queue.failing).toBe(true);
    // an event goes out only once it is durable
    expect(delivered).toEqual([]);

    queue.push(3);
    queue.afterCommit(() => delivered.push("after 3"));
    queue.flush();
    // nothing but the retry tries while writes are failing
    expect(errors).toHaveLength(1);
    expect(delivered).toEqual([]);

    failWith(1);
    vi.advanceTimersByTime(RETRY_FIRST_DELAY_MS);
    expect(errors).toHaveLength(2);
    expect(queue.failing).toBe(true);
    expect(delivered).toEqual([]);
    vi.advanceTimersByTime(RETRY_FIRST_DELAY_MS * 2);
    expect(committed).toEqual([[1, 2, 3]]);
    expect(queue.failing).toBe(false);
    expect(delivered).toEqual(["after 2", "after 3"]);

    queue.push(4);
    queue.flush();
    expect(committed).toEqual([[1, 2, 3], [4]]);
  });

  it("gives up a failure that cannot pass, and kept writes when it closes, running their callbacks", () => {
    const cannot = failingQueue(false);
    const delivered: number[] = [];
    cannot.queue.push(1);
    cannot.queue.afterCommit(() => delivered.push(1));
    cannot.queue.flush();
    expect([cannot.queue.failing, delivered]).toEqual([false, [1]]);
    cannot.queue.push(2);
    cannot.queue.flush();
    expect(cannot.committed).toEqual([[2]]);

    const closing = failingQueue(true);
    closing.failWith(2);
    closing.queue.push(1);
    closing.queue.afterCommit(() => delivered.push(2));
    closing.queue.flush();
    expect(closing.queue.failing).toBe(true);
    closing.queue.close();
    expect([closing.queue.failing, delivered]).toEqual([false, [1, 2]]);
    expect(String(closing.errors.at(-1))).toContain("closed while writes were failing");
  });
});

describe("a full database", () => {
  it("commits a batch whole or not at all, keeps it, and commits it with what came after once there is room", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const file = join(temporaryDirectory(), "reins.db");
    const errors: string[] = [];
    const store = new SqliteHistoryStore(file, {
      onWriteError: (error) => errors.push(String((error as { code?: string }).code ?? error)),
    });
    cleanups.unshift(() => store.close());
    const disk = new BetterSqlite3(file, { readonly: true });
    cleanups.unshift(() => disk.close());
    const count = (table: string) =>
      (disk.prepare(`SELECT COUNT(*) AS count FROM ${table}`).get() as { count: number }).count;

    store.createSession("ses_before", "default");
    startTurn(store, "turn_before", "ses_before");
    store.flush();
    expect(store.acceptsWrites()).toBe(true);

    const room = fillUp(store);
    store.createSession("ses_full", "default");
    startTurn(store, "turn_full", "ses_full");
    store.appendAssistant("ses_full", "turn_full", [{ kind: "text", role: "assistant", text: BIG }]);
    store.flush();
    expect(errors).toContain("SQLITE_FULL");
    expect(store.acceptsWrites()).toBe(false);
    // nothing of the failed batch, not even its small rows (the session's, the turn's)
    expect([count("sessions"), count("turns")]).toEqual([1, 1]);

    store.appendAssistant("ses_full", "turn_full", [{ kind: "text", role: "assistant", text: "more" }]);
    const bus = new TurnEventBus("turn_full", store, () => 5);
    const received: number[] = [];
    bus.subscribe((event) => received.push(event.seq));
    bus.emit({ type: "text_delta", text: "more" });
    store.flush();
    expect(count("history_blocks")).toBe(1);
    // sent only once durable, and what a read sees agrees with what was sent
    expect([received, store.listEvents("turn_full")]).toEqual([[], []]);

    room.makeRoom();
    vi.advanceTimersByTime(RETRY_FIRST_DELAY_MS);
    expect(store.acceptsWrites()).toBe(true);
    expect([count("sessions"), count("turns")]).toEqual([2, 2]);
    expect(received).toEqual([1]);
    expect(store.listEvents("turn_full").map((event) => event.seq)).toEqual([1]);
    expect(
      storedBlocks(disk, "ses_full").map((block) => (block.kind === "text" ? block.text.slice(0, 4) : "")),
    ).toEqual(["go", "xxxx", "more"]);
  });

  it("refuses turns, sessions and session changes while it cannot take writes (503 store_unavailable), and /readyz says so", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const dataDir = temporaryDirectory();
    const runtime = createRuntime(parseConfig({ logLevel: "silent", dataDir }).config, {
      logger: pino({ level: "silent" }),
    });
    cleanups.unshift(() => runtime.store.close());
    const app = buildApp(runtime);
    const store = runtime.store as SqliteHistoryStore;
    const post = (path: string, body: unknown) =>
      app.request(path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });

    const kept = (await (await post("/api/sessions", { title: "kept" })).json()) as { sessionId: string };
    const room = fillUp(store);
    store.createSession("ses_filled", "default", null, BIG);
    store.flush();
    expect(store.acceptsWrites()).toBe(false);

    const turn = await post("/api/sessions/stream", { message: "hello" });
    expect(turn.status).toBe(503);
    expect(turn.headers.get("retry-after")).toBe("5");
    expect(await turn.json()).toMatchObject({ code: "store_unavailable" });
    expect((await post("/api/sessions", {})).status).toBe(503);
    expect(() => runtime.manager.startTurn({ message: "hi" })).toThrow(StoreUnavailableError);
    // a change it could not store is not answered as done
    const change = (method: string, path: string, body?: unknown) =>
      app.request(`/api/sessions/${kept.sessionId}${path}`, {
        method,
        ...(body === undefined
          ? {}
          : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
      });
    expect((await change("POST", "/step-mode", { enabled: true })).status).toBe(503);
    expect((await change("PATCH", "", { title: "renamed" })).status).toBe(503);
    expect((await change("DELETE", "")).status).toBe(503);
    const ready = await app.request("/readyz");
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ code: "store_unavailable" });

    room.makeRoom();
    vi.advanceTimersByTime(RETRY_FIRST_DELAY_MS);
    expect((await app.request("/readyz")).status).toBe(200);
    expect((await post("/api/sessions", {})).status).toBe(201);
    expect((await change("PATCH", "", { title: "renamed" })).status).toBe(200);
  });
});
