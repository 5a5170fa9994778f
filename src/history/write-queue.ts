/**
 * The durable write boundary: writes are queued as they happen and committed together — everything
 * queued in one tick in one transaction, or sooner, at the next microtask, once `MAX_OPS_PER_BATCH`
 * writes wait — and whoever must not act before its writes are durable (the event bus, which sends an
 * event only once it is stored) registers a callback that runs after the commit holding them.
 *
 * `commit` may return a promise (a networked database): batches then commit one at a time, in
 * order, and the turn code does not change. The SQLite store commits synchronously, which also lets
 * it `flush()` before a read so that reads see every write.
 */

export type CommitBatch<Op> = (ops: Op[]) => void | Promise<void>;

export type WriteQueueOptions<Op> = {
  commit: CommitBatch<Op>;
  /** Told when a batch could not be committed; its callbacks still run (nothing waits forever). */
  onError: (error: unknown, ops: readonly Op[]) => void;
  /** Schedules the next flush; defaults to the end of the current tick (`setImmediate`). */
  schedule?: (flush: () => void) => { cancel: () => void };
};

/** Writes after which a batch is committed at the next microtask instead of the end of the tick. */
export const MAX_OPS_PER_BATCH = 512;

const nextTick = (flush: () => void) => {
  const handle = setImmediate(flush);
  return { cancel: () => clearImmediate(handle) };
};

export class WriteQueue<Op> {
  private ops: Op[] = [];
  private callbacks: (() => void)[] = [];
  private scheduled: { cancel: () => void } | undefined;
  /** The batch being committed asynchronously, if any; the next one waits for it. */
  private inFlight: Promise<void> | undefined;
  private readonly schedule: (flush: () => void) => { cancel: () => void };

  constructor(private readonly options: WriteQueueOptions<Op>) {
    this.schedule = options.schedule ?? nextTick;
  }

  /** Whether anything is waiting to be committed. */
  get pending(): boolean {
    return this.ops.length > 0 || this.callbacks.length > 0;
  }

  push(op: Op): void {
    this.ops.push(op);
    this.scheduled ??= this.schedule(() => this.flush());
    // work that never yields to the event loop (turns run back to back in-process) still commits
    if (this.ops.length === MAX_OPS_PER_BATCH) queueMicrotask(() => this.flush());
  }

  /** Runs `callback` once everything pushed so far is committed. */
  afterCommit(callback: () => void): void {
    this.callbacks.push(callback);
    this.scheduled ??= this.schedule(() => this.flush());
  }

  /**
   * Commits what is queued now. With a synchronous `commit` everything is durable when this returns
   * and the callbacks have run; with an asynchronous one the returned promise says when.
   */
  flush(): Promise<void> | undefined {
    this.scheduled?.cancel();
    this.scheduled = undefined;
    if (!this.pending) return this.inFlight;
    const ops = this.ops;
    const callbacks = this.callbacks;
    this.ops = [];
    this.callbacks = [];
    if (this.inFlight) {
      const previous = this.inFlight;
      return this.track(previous.then(() => this.commit(ops, callbacks)));
    }
    const committed = this.commit(ops, callbacks);
    return committed && this.track(committed);
  }

  private track(promise: Promise<void>): Promise<void> {
    const tracked = promise.finally(() => {
      if (this.inFlight === tracked) this.inFlight = undefined;
    });
    this.inFlight = tracked;
    return tracked;
  }

  private commit(ops: Op[], callbacks: (() => void)[]): Promise<void> | undefined {
    let result: void | Promise<void>;
    try {
      result = ops.length > 0 ? this.options.commit(ops) : undefined;
    } catch (error) {
      this.options.onError(error, ops);
      this.runAll(callbacks);
      return undefined;
    }
    if (!result) {
      this.runAll(callbacks);
      return undefined;
    }
    return result.then(
      () => this.runAll(callbacks),
      (error: unknown) => {
        this.options.onError(error, ops);
        this.runAll(callbacks);
      },
    );
  }

  /** Runs every callback; one that throws is reported and does not keep the others from running. */
  private runAll(callbacks: readonly (() => void)[]): void {
    for (const callback of callbacks) {
      try {
        callback();
      } catch (error) {
        this.options.onError(error, []);
      }
    }
  }
}
