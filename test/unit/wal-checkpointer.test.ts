/**
 * WAL checkpoints off the event loop (src/history/wal-checkpointer.ts) on a real file store: the
 * server's connection never checkpoints inside a commit, a worker thread's connection copies the log
 * into the database file while there are commits, the server's connection catches up only past the WAL
 * limit, closing leaves no WAL behind, a failed worker hands checkpoints back and holds up nothing,
 * a store never closed does not keep its process alive, and one process holds the database.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { SqliteHistoryStore, type SqliteStoreOptions } from "../../src/history/sqlite-store.js";
import { CLOSE_WAIT_MS, type CheckpointReport } from "../../src/history/wal-checkpointer.js";
import { PROJECT_ROOT } from "../helpers/server.js";

/** A worker thread must start and load better-sqlite3 first: on a busy machine that takes a while. */
const WORKER_WAIT = { timeout: 10_000 };

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
    await vi.waitFor(() => expect(reports.length).toBeGreaterThan(0), WORKER_WAIT);
    expect(reports[0]?.logPages).toBeGreaterThan(0);
    expect(reports[0]?.checkpointedPages).toBe(reports[0]?.logPages);
    expect(checkpoints()).toBe(0);

    // nothing committed since: no more checkpoints, however long it waits
    const before = reports.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reports.length).toBe(before);

    commitSessions(store, 5, "more");
    await vi.waitFor(() => expect(reports.length).toBe(before + 1), WORKER_WAIT);
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
      await vi.waitFor(() => expect(reports.length).toBe(1), WORKER_WAIT);
      expect(checkpoints()).toBe(own);
    },
  );

  it("closing stops the worker first, so the server's connection removes the WAL and the data stays", async () => {
    const { store, reports } = open();
    commitSessions(store, 10, "ses");
    await vi.waitFor(() => expect(reports.length).toBe(1), WORKER_WAIT);
    commitSessions(store, 10, "late");
    opened.splice(0);
    store.close();
    expect(existsSync(`${file}-wal`)).toBe(false);

    const reopened = open().store;
    expect(reopened.getSession("late_9")).toBeDefined();
    expect(reopened.getSession("ses_0")).toBeDefined();
  });
});

describe("when the worker cannot run", () => {
  /** Opens a store whose worker fails: the path it opens is a directory by the time it starts. */
  function storeWithFailingWorker(errors: string[]) {
    const { store } = open({ walLimitPages: 123, onWriteError: (_error, detail) => errors.push(detail) });
    renameSync(file, `${file}.moved`);
    mkdirSync(file);
    return store;
  }

  it("checkpoints go back to the server's connection, so the WAL stays bounded", async () => {
    const errors: string[] = [];
    const store = storeWithFailingWorker(errors);
    await vi.waitFor(() => expect(errors.join()).toContain("WAL checkpointer"), WORKER_WAIT);
    expect(store.db.pragma("wal_autocheckpoint", { simple: true })).toBe(123);
  });

  it("closing does not wait for a worker that has died before it could say so", () => {
    const store = storeWithFailingWorker([]);
    // the worker dies while this thread is busy, so its error cannot reach it before close()
    const busyUntil = performance.now() + 500;
    while (performance.now() < busyUntil);
    opened.splice(0);
    const startedAt = performance.now();
    store.close();
    // a close that waited for word from the dead worker would block this thread for CLOSE_WAIT_MS
    expect(performance.now() - startedAt).toBeLessThan(CLOSE_WAIT_MS / 2);
    expect(store.isReachable()).toBe(false);
  });
});

describe("a store that is never closed", () => {
  it("lets its process exit", () => {
    const script = `
      import { SqliteHistoryStore } from "./src/history/sqlite-store.ts";
      const store = new SqliteHistoryStore(${JSON.stringify(join(directory, "unclosed.db"))});
      store.createSession("ses_1", "default");
      store.flush();`;
    const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: PROJECT_ROOT,
      timeout: 20_000,
    });
    expect(child.stderr.toString()).toBe("");
    expect(child.status).toBe(0);
  }, 30_000);
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
