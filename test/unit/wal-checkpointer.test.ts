/**
 * WAL checkpoints off the event loop (src/history/wal-checkpointer.ts) on a real file store: the
 * server's connection never checkpoints inside a commit, a worker thread's connection copies the log
 * into the database file while there are commits, the server's connection catches up only past the WAL
 * limit, closing leaves no WAL behind, and one process holds the database.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { SqliteHistoryStore, type SqliteStoreOptions } from "../../src/history/sqlite-store.js";
import type { CheckpointReport } from "../../src/history/wal-checkpointer.js";

let directory: string;
let file: string;
const opened: SqliteHistoryStore[] = [];

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), "reins-wal-"));
  file = join(directory, "reins.db");
});
afterEach(() => {
  vi.restoreAllMocks();
  for (const store of opened.splice(0)) store.close();
  rmSync(directory, { recursive: true, force: true });
});

function open(options: SqliteStoreOptions = {}): { store: SqliteHistoryStore; reports: CheckpointReport[] } {
  const reports: CheckpointReport[] = [];
  const store = new SqliteHistoryStore(file, {
    checkpointIntervalMs: 10,
    onCheckpoint: (report) => reports.push(report),
    ...options,
  });
  opened.push(store);
  return { store, reports };
}

/** Checkpoints the server's own connection ran. */
function ownCheckpoints(store: SqliteHistoryStore) {
  const pragma = vi.spyOn(store.db, "pragma");
  return () => pragma.mock.calls.filter(([source]) => source.startsWith("wal_checkpoint")).length;
}

function commitSessions(store: SqliteHistoryStore, count: number, prefix: string): void {
  for (let index = 0; index < count; index++) store.createSession(`${prefix}_${index}`, "default");
  store.flush();
}

describe("WAL checkpoints", () => {
  it("are run by the worker's connection while there are commits, never inside the server's", async () => {
    const { store, reports } = open();
    const checkpoints = ownCheckpoints(store);
    expect(store.db.pragma("wal_autocheckpoint", { simple: true })).toBe(0);

    commitSessions(store, 50, "ses");
    await vi.waitFor(() => expect(reports.length).toBeGreaterThan(0));
    expect(reports[0]?.logPages).toBeGreaterThan(0);
    expect(reports[0]?.checkpointedPages).toBe(reports[0]?.logPages);
    expect(checkpoints()).toBe(0);

    // nothing committed since: no more checkpoints, however long it waits
    const before = reports.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reports.length).toBe(before);

    commitSessions(store, 5, "more");
    await vi.waitFor(() => expect(reports.length).toBe(before + 1));
    expect(checkpoints()).toBe(0);
  });

  it.each([
    { walLimitPages: 0, own: 1 },
    { walLimitPages: 1_000_000, own: 0 },
  ])(
    "with a WAL limit of $walLimitPages pages, the server's connection copies what is left $own time(s), right after the worker",
    async ({ walLimitPages, own }) => {
      const { store, reports } = open({ walLimitPages });
      const checkpoints = ownCheckpoints(store);
      commitSessions(store, 20, "ses");
      await vi.waitFor(() => expect(reports.length).toBe(1));
      expect(checkpoints()).toBe(own);
    },
  );

  it("closing stops the worker first, so the server's connection removes the WAL and the data stays", async () => {
    const { store, reports } = open();
    commitSessions(store, 10, "ses");
    await vi.waitFor(() => expect(reports.length).toBe(1));
    commitSessions(store, 10, "late");
    opened.splice(0);
    store.close();
    expect(existsSync(`${file}-wal`)).toBe(false);

    const reopened = open().store;
    expect(reopened.getSession("late_9")).toBeDefined();
    expect(reopened.getSession("ses_0")).toBeDefined();
  });
});

describe("one process per database", () => {
  it("refuses a second store on the same file while the first is open, and accepts one after", () => {
    const first = open().store;
    expect(() => new SqliteHistoryStore(file)).toThrow(expect.objectContaining({ code: "SQLITE_BUSY" }));
    opened.splice(0);
    first.close();
    expect(open().store.isReachable()).toBe(true);
  });
});
