/**
 * One process per database. The lock is an SQLite file beside the database, opened in EXCLUSIVE locking
 * mode with a write transaction committed: SQLite keeps its file lock until the connection closes, and
 * the operating system drops it when the process dies, so a crash leaves no stale lock. A second
 * process fails to take it with `SQLITE_BUSY` before it touches the database. (The database itself is
 * shared with the WAL checkpointer's connection, so it cannot be opened in EXCLUSIVE mode.)
 */
import BetterSqlite3 from "better-sqlite3";

export type ProcessLock = { release(): void };

/** Takes the lock of `databaseFile`; throws an `SQLITE_BUSY` error when another process holds it. */
export function lockDatabase(databaseFile: string): ProcessLock {
  // no busy wait: a lock held by another process stays held
  const lock = new BetterSqlite3(`${databaseFile}.lock`, { timeout: 0 });
  try {
    lock.pragma("locking_mode = EXCLUSIVE");
    lock.exec("BEGIN EXCLUSIVE; COMMIT");
  } catch (error) {
    lock.close();
    throw error;
  }
  return { release: () => lock.close() };
}
