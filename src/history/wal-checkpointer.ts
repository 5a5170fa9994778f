/**
 * WAL checkpoints off the event loop. A checkpoint copies the pages committed to the write-ahead log into
 * the database file and fsyncs both; on the server's own connection it runs inside a commit and held the
 * event loop — every stream, deadline and abort — for 60–460 ms each time. Here a worker thread with its
 * own connection checkpoints (PASSIVE: it never blocks the server's writes) about once a second while
 * there are commits, and the server's connection never does (`wal_autocheckpoint = 0`).
 *
 * Under steady writes a background checkpoint never finds the log fully copied, so the log would only
 * grow: once it passes `walLimitPages`, the server's connection copies the pages written since the
 * worker's last pass itself, right after that pass, and its next commit starts the log over. Should the
 * worker fail, the store is told (`onStopped`) and checkpoints on its own connection again.
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** What one round of checkpoints in the worker reports. */
export type CheckpointReport = {
  /** Pages in the log when the last pass of the round ran. */
  logPages: number;
  /** Pages of the log copied into the database file by then. */
  checkpointedPages: number;
};

export type WalCheckpointerOptions = {
  /** How often a checkpoint may start while there are commits. */
  intervalMs: number;
  /** Log pages beyond which the server's connection catches up itself (see the module comment). */
  walLimitPages: number;
  /** Runs a PASSIVE checkpoint on the server's own connection. */
  catchUp: () => void;
  /** The worker is gone (it failed): the server's connection must checkpoint again. */
  onStopped: (error: unknown) => void;
  /** A checkpoint failed; the worker goes on. */
  onError: (error: unknown) => void;
  /** Told after each round (tests, metrics). */
  onCheckpoint?: (report: CheckpointReport) => void;
};

/**
 * A round takes another pass while the last one still copied this many pages (what was committed
 * during it), at most MAX_PASSES_PER_ROUND passes, so the server's catch-up finds little left.
 */
const PAGES_WORTH_ANOTHER_PASS = 1_000;
const MAX_PASSES_PER_ROUND = 8;
/** How long closing waits for a checkpoint in progress to end. */
export const CLOSE_WAIT_MS = 10_000;

/**
 * The worker's code (run with `eval`, so it needs no separate build step): a connection of its own,
 * a round of checkpoints on each message; `close` closes the connection, and the shared flag says
 * when the worker is done with the database however it ends.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const closed = new Int32Array(workerData.closed);
process.on("exit", () => {
  Atomics.store(closed, 0, 1);
  Atomics.notify(closed, 0);
});
const Database = require(workerData.driver);
const db = new Database(workerData.filename);
db.pragma("busy_timeout = 1000");
parentPort.on("message", (message) => {
  if (message === "close") {
    db.close();
    parentPort.close();
    return;
  }
  try {
    let row = db.pragma("wal_checkpoint(PASSIVE)")[0];
    for (let pass = 1; pass < workerData.maxPasses; pass++) {
      const previous = row;
      row = db.pragma("wal_checkpoint(PASSIVE)")[0];
      if (row.log - previous.log < workerData.pagesWorthAnotherPass) break;
    }
    parentPort.postMessage({ logPages: row.log, checkpointedPages: row.checkpointed });
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message ? error.message : error) });
  }
});
`;

export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly closed = new Int32Array(new SharedArrayBuffer(4));
  private readonly timer: NodeJS.Timeout;
  /** Commits since the last checkpoint started. */
  private dirty = false;
  private inFlight = false;
  private stopped = false;

  constructor(
    filename: string,
    private readonly options: WalCheckpointerOptions,
  ) {
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        driver: createRequire(import.meta.url).resolve("better-sqlite3"),
        filename,
        maxPasses: MAX_PASSES_PER_ROUND,
        pagesWorthAnotherPass: PAGES_WORTH_ANOTHER_PASS,
        closed: this.closed.buffer,
      },
    });
    this.worker.on("message", (message: CheckpointReport | { error: string }) => this.finished(message));
    this.worker.on("error", (error) => this.stop(error));
    // after the listeners, which would keep the process alive otherwise: a store never closed must not
    this.worker.unref();
    this.timer = setInterval(() => this.start(), options.intervalMs).unref();
  }

  /** A commit happened: the next interval starts a checkpoint. */
  noteCommit(): void {
    this.dirty = true;
  }

  /**
   * Stops the worker once its checkpoint in progress, if any, has ended, and closes its connection;
   * returns when it is closed, so the server's connection can then be the last one to close.
   */
  close(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    this.worker.postMessage("close");
    Atomics.wait(this.closed, 0, 0, CLOSE_WAIT_MS);
    void this.worker.terminate();
  }

  private stop(error: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    this.options.onStopped(error);
  }

  private start(): void {
    if (!this.dirty || this.inFlight || this.stopped) return;
    this.dirty = false;
    this.inFlight = true;
    this.worker.postMessage("checkpoint");
  }

  private finished(message: CheckpointReport | { error: string }): void {
    this.inFlight = false;
    if (this.stopped) return;
    if ("error" in message) {
      this.options.onError(new Error(`WAL checkpoint failed: ${message.error}`));
      return;
    }
    this.options.onCheckpoint?.(message);
    if (message.logPages > this.options.walLimitPages) this.options.catchUp();
  }
}
