/**
 * The durable write boundary: writes are queued as they happen and committed together — what one tick
 * queued, or sooner, at the next microtask, once `MAX_OPS_PER_BATCH` writes wait — and whoever must not
 * act before its writes are durable (the event bus, which sends an event only once it is stored)
 * registers a callback that runs after the commit holding them.
 *
 * A commit holds the event loop while it runs, so a flush commits a slice: about COMMIT_SLICE_MS worth
 * of the oldest writes (sized from the commits before it), and the rest waits for the next turn of the
 * event loop, after the timers and I/O due meanwhile. Without slices a burst — a thousand calls starting
 * or timing out together, each with its events, blocks and trace — committed thousands of rows in one
 * transaction while every deadline and stream waited. A slice never splits what one synchronous run of
 * code wrote (a result and its event, a turn's end and its terminal event): those writes are one step
 * of the turn and a crash must find all of them or none, so a slice ends only where such a run ended.
 * No more than MAX_LAG_SLICES slices of writes wait: a flush also commits what lies beyond them, so
 * writes made faster than slices commit them do not pile up (in memory, and between an event and its
 * clients). Each callback runs right after the commit that holds every write queued before it.
 * `flush()` commits everything at once.
 *
 * A batch whose commit fails in a way that may pass (`retryable`: the database's full disk or I/O error,
 * not a closed store) is kept with its callbacks, and committed again with the writes queued since,
 * ahead of them (they may depend on it), first after RETRY_FIRST_DELAY_MS and then ever less often;
 * the callbacks run once it is in. While writes are kept (`failing`) nothing else tries to commit: a
 * flush adds to them, and only the retry commits. So an event still goes out only once it is durable,
 * and a read still sees every write that was sent. Only `close()` gives kept writes up (reported), and
 * runs their callbacks, so that nothing waits for ever.
 *
 * `commit` may return a promise (a networked database): batches then commit one at a time, in order,
 * whole (a commit that does not hold the event loop gains nothing from slices), and the turn code does
 * not change. The SQLite store commits synchronously, which also lets it `flush()` before a read so that
 * reads see every write.
 */

export type CommitBatch<Op> = (ops: Op[]) => void | Promise<void>;

export type WriteQueueOptions<Op> = {
  commit: CommitBatch<Op>;
  /** Told when a batch could not be committed; its callbacks still run (nothing waits forever). */
  onError: (error: unknown, ops: readonly Op[]) => void;
  /** Schedules the next flush; defaults to the end of the current tick (`setImmediate`). */
  schedule?: (flush: () => void) => { cancel: () => void };
  /** A monotonic clock in ms, which sizes the slices. */
  now?: () => number;
  /**
   * Runs before each slice of a synchronous `commit` is cut and committed (not before a `flush()`, and
   * never once commits are asynchronous, which do not hold the event loop): work that must not wait
   * for a burst's slices to end runs here. It may write, and it may flush.
   */
  beforeSlice?: () => void;
  /** Whether a failed commit may pass if tried again (its writes are kept); none: none may. */
  retryable?: (error: unknown) => boolean;
};

/** Writes after which a batch is committed at the next microtask instead of the end of the tick. */
export const MAX_OPS_PER_BATCH = 512;
/** How long one commit of a slice may hold the event loop. */
export const COMMIT_SLICE_MS = 1;
/**
 * Writes the first slice may take; then halved after a slice over twice COMMIT_SLICE_MS, doubled under
 * half of it, within MIN_OPS_PER_SLICE…MAX_OPS_PER_SLICE.
 */
export const FIRST_OPS_PER_SLICE = 256;
export const MIN_OPS_PER_SLICE = 16;
export const MAX_OPS_PER_SLICE = 4_096;
/** Slices of writes that may wait for later turns of the event loop; a flush commits what is beyond them. */
export const MAX_LAG_SLICES = 8;
/** Committed writes the queue drops from its front once there are this many. */
const COMPACT_AFTER_OPS = 1_024;
/** The first retry of a failed commit after this long; each later one waits twice as long, at most the max. */
export const RETRY_FIRST_DELAY_MS = 100;
export const RETRY_MAX_DELAY_MS = 5_000;

const nextTick = (flush: () => void) => {
  const handle = setImmediate(flush);
  return { cancel: () => clearImmediate(handle) };
};

export class WriteQueue<Op> {
  /** Writes not committed yet are `ops[committed..]`. */
  private ops: Op[] = [];
  private committed = 0;
  /** Callbacks in order, each with the number of writes (`ops` indexes) queued before it. */
  private callbacks: (() => void)[] = [];
  private callbackMarks: number[] = [];
  private nextCallback = 0;
  /**
   * Where synchronous runs of writes ended (`ops` indexes, in order): a slice may end at one of these
   * or at the end of the queue, never elsewhere. `runOpen` while a run's end is still to be marked.
   */
  private runEnds: number[] = [];
  private runOpen = false;
  private readonly endRun = () => {
    this.runOpen = false;
    this.runEnds.push(this.ops.length);
  };
  /** Set once `commit` returned a promise: batches then commit whole. */
  private asyncCommits = false;
  private scheduled: { cancel: () => void } | undefined;
  /** The batch being committed asynchronously, if any; the next one waits for it. */
  private inFlight: Promise<void> | undefined;
  private readonly schedule: (flush: () => void) => { cancel: () => void };
  private readonly now: () => number;
  /** How many writes the next slice takes. */
  private opsPerSlice = FIRST_OPS_PER_SLICE;
  /** Writes whose commit failed and will be tried again, oldest first; they go before any other. */
  private retained: Op[] = [];
  /** The callbacks of the kept writes, in order: they run once those are committed. */
  private retainedCallbacks: (() => void)[] = [];
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = RETRY_FIRST_DELAY_MS;
  private closed = false;

  constructor(private readonly options: WriteQueueOptions<Op>) {
    this.schedule = options.schedule ?? nextTick;
    this.now = options.now ?? (() => performance.now());
  }

  /** Whether anything is waiting to be committed. */
  get pending(): boolean {
    return this.committed < this.ops.length || this.nextCallback < this.callbacks.length;
  }

  /** Whether writes whose commit failed are kept for a retry (the database cannot take writes now). */
  get failing(): boolean {
    return this.retained.length > 0;
  }

  /** How many writes wait. */
  get waiting(): number {
    return this.ops.length - this.committed;
  }

  push(op: Op): void {
    this.ops.push(op);
    // the microtask runs once the code pushing now has returned: the end of its run of writes
    if (!this.runOpen) {
      this.runOpen = true;
      queueMicrotask(this.endRun);
    }
    this.scheduled ??= this.schedule(() => this.flushSlice());
    // work that never yields to the event loop (turns run back to back in-process) still commits
    if (this.waiting === MAX_OPS_PER_BATCH) queueMicrotask(() => this.flushSlice());
  }

  /** Runs `callback` once everything pushed so far is committed. */
  afterCommit(callback: () => void): void {
    this.callbacks.push(callback);
    this.callbackMarks.push(this.ops.length);
    this.scheduled ??= this.schedule(() => this.flushSlice());
  }

  /**
   * Commits everything queued now. With a synchronous `commit` everything is durable when this returns
   * and the callbacks have run; with an asynchronous one the returned promise says when.
   */
  flush(): Promise<void> | undefined {
    return this.commitAll(false);
  }

  /** Commits everything queued; `retry`: the kept writes too (else they and these wait for the retry). */
  private commitAll(retry: boolean): Promise<void> | undefined {
    this.scheduled?.cancel();
    this.scheduled = undefined;
    const retryKept = retry && this.failing;
    return this.pending || retryKept ? this.commitUpTo(this.ops.length, retry) : this.inFlight;
  }

  /**
   * Commits what is queued, then stops: kept writes are tried once more and, failing again, given up
   * (reported, their callbacks run); no retry is scheduled after this.
   */
  close(): void {
    void this.commitAll(true);
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (this.failing) this.giveUp(new Error("the store closed while writes were failing"));
  }

  /** Commits a slice of the oldest writes; what is left waits for the next turn of the event loop. */
  private flushSlice(): void {
    this.scheduled?.cancel();
    this.scheduled = undefined;
    if (!this.pending) return;
    if (this.asyncCommits) {
      void this.commitUpTo(this.ops.length);
      return;
    }
    // first: what it runs may write, or even flush (a read does), so the slice is cut after it
    this.options.beforeSlice?.();
    if (!this.pending) return;
    // a slice, or more when the writes waiting would take longer than MAX_LAG_SLICES slices: writes
    // made faster than slices commit them must not pile up
    const size = Math.max(this.opsPerSlice, this.waiting - MAX_LAG_SLICES * this.opsPerSlice);
    const from = this.committed;
    const end = this.runEndNear(from + size);
    const startedAt = this.now();
    // an asynchronous commit (the first one, before it is known to be) says nothing about its time,
    // and neither does one that was not tried (writes are failing) or failed
    const failingBefore = this.failing;
    if (this.commitUpTo(end) === undefined && !failingBefore && !this.failing) {
      this.resize(end - from, this.now() - startedAt);
    }
    // (a write made in beforeSlice may have scheduled the next flush already)
    if (this.pending) this.scheduled ??= this.schedule(() => this.flushSlice());
  }

  /**
   * The last end of a run of writes at or before `wanted`, or the first one after it when the run that
   * crosses `wanted` is the first; the end of the queue is one (no code runs while a flush does).
   */
  private runEndNear(wanted: number): number {
    let last: number | undefined;
    for (const runEnd of this.runEnds) {
      if (runEnd <= this.committed) continue;
      if (runEnd > wanted) return last ?? Math.min(runEnd, this.ops.length);
      last = runEnd;
    }
    return this.ops.length <= wanted ? this.ops.length : (last ?? this.ops.length);
  }

  /**
   * Halves the slice when a commit of `count` writes shows that a whole slice takes over twice
   * COMMIT_SLICE_MS, doubles it under half of it; a commit of less than half a slice says too little.
   */
  private resize(count: number, tookMs: number): void {
    if (count < this.opsPerSlice / 2) return;
    const sliceMs = (tookMs * this.opsPerSlice) / count;
    if (sliceMs > 2 * COMMIT_SLICE_MS) this.opsPerSlice = Math.max(MIN_OPS_PER_SLICE, this.opsPerSlice >> 1);
    else if (sliceMs < COMMIT_SLICE_MS / 2)
      this.opsPerSlice = Math.min(MAX_OPS_PER_SLICE, this.opsPerSlice * 2);
  }

  /**
   * Commits `ops[committed..end)` and then the callbacks queued before `ops[end]`; while writes are
   * failing, only when `retry` (the retry, or a close) — else they wait behind the kept ones.
   */
  private commitUpTo(end: number, retry = false): Promise<void> | undefined {
    const ops = this.ops.slice(this.committed, end);
    this.committed = end;
    let lastCallback = this.nextCallback;
    while (lastCallback < this.callbacks.length && this.callbackMarks[lastCallback]! <= end) lastCallback++;
    const callbacks = this.callbacks.slice(this.nextCallback, lastCallback);
    this.nextCallback = lastCallback;
    this.compact();
    // while writes are failing only the retry tries them (a batch chained behind one in flight too)
    const attempt = !this.failing || retry;
    if (this.inFlight) {
      const previous = this.inFlight;
      return this.track(previous.then(() => this.commit(ops, callbacks, attempt)));
    }
    const committed = this.commit(ops, callbacks, attempt);
    return committed && this.track(committed);
  }

  /** Drops committed writes and callbacks run from the front: all of them, or once there are many. */
  private compact(): void {
    if (this.committed === this.ops.length || this.committed >= COMPACT_AFTER_OPS) {
      const dropped = this.committed;
      this.ops = this.ops.slice(dropped);
      this.committed = 0;
      this.callbacks = this.callbacks.slice(this.nextCallback);
      this.callbackMarks = this.callbackMarks.slice(this.nextCallback).map((mark) => mark - dropped);
      this.nextCallback = 0;
      this.runEnds = this.runEnds.filter((runEnd) => runEnd > dropped).map((runEnd) => runEnd - dropped);
    }
  }

  private track(promise: Promise<void>): Promise<void> {
    const tracked = promise.finally(() => {
      if (this.inFlight === tracked) this.inFlight = undefined;
    });
    this.inFlight = tracked;
    return tracked;
  }

  private commit(ops: Op[], callbacks: (() => void)[], attempt: boolean): Promise<void> | undefined {
    if (this.failing && !attempt) {
      // these wait behind the kept writes, for the retry, and so do their callbacks
      this.retain(ops, callbacks);
      return undefined;
    }
    // kept writes stay kept until a commit holding them goes through (an asynchronous one is in
    // flight meanwhile, and commits run one at a time, so no other commit takes them again)
    const batch = this.failing ? this.retained.concat(ops) : ops;
    const waiting = this.failing ? this.retainedCallbacks.concat(callbacks) : callbacks;
    let result: void | Promise<void>;
    try {
      result = batch.length > 0 ? this.options.commit(batch) : undefined;
    } catch (error) {
      this.failed(error, batch, waiting);
      return undefined;
    }
    if (!result) {
      this.recovered();
      this.runAll(waiting);
      return undefined;
    }
    this.asyncCommits = true;
    return result.then(
      () => {
        this.recovered();
        this.runAll(waiting);
      },
      (error: unknown) => this.failed(error, batch, waiting),
    );
  }

  /**
   * A batch failed: kept with its callbacks for a retry when that may pass; else reported as lost
   * and its callbacks run (nothing waits for ever).
   */
  private failed(error: unknown, batch: Op[], callbacks: (() => void)[]): void {
    this.options.onError(error, batch);
    this.retained = [];
    this.retainedCallbacks = [];
    if (this.closed || this.options.retryable?.(error) !== true) {
      this.runAll(callbacks);
      return;
    }
    this.retain(batch, callbacks);
    if (this.retryTimer !== undefined) return;
    this.retryTimer = setTimeout(() => this.retry(), this.retryDelayMs);
    this.retryTimer.unref();
    this.retryDelayMs = Math.min(this.retryDelayMs * 2, RETRY_MAX_DELAY_MS);
  }

  private retain(ops: readonly Op[], callbacks: readonly (() => void)[]): void {
    for (const op of ops) this.retained.push(op);
    for (const callback of callbacks) this.retainedCallbacks.push(callback);
  }

  private giveUp(error: Error): void {
    const given = this.retained;
    const callbacks = this.retainedCallbacks;
    this.retained = [];
    this.retainedCallbacks = [];
    this.options.onError(error, given);
    this.runAll(callbacks);
  }

  private retry(): void {
    this.retryTimer = undefined;
    void this.commitAll(true);
  }

  /** A commit went through: whatever was kept is durable now. */
  private recovered(): void {
    this.retained = [];
    this.retainedCallbacks = [];
    this.retryDelayMs = RETRY_FIRST_DELAY_MS;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
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
