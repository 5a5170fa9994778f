/**
 * The timers of every running tool call (docs/semantics.md#timeouts) — wall-clock and idle deadlines and
 * progress reports — on one Node timer. Entries due together fire in one pass, and what an entry hands
 * back to do afterwards runs only once every one of them has fired. With a Node timer per call, Node runs
 * the microtasks of each expiry (the call's result, its events, its history) before the next timer's
 * callback, so the last of a thousand deadlines falling due together was told only after the follow-up
 * work of the 999 others; here all of them are told at once, then the work follows.
 *
 * Node runs the timers phase once per turn of the event loop, so a deadline falling due while a burst's
 * deferred work fills that turn (follow-up shares, commit slices, what they set off) would wait for all
 * of it: the follow-up shares fire the entries due by then before each follow-up, and whoever else
 * defers work in slices does so through `fireOverdue` before each slice (the server's write queue).
 *
 * An entry costs one object and a set insertion, no Node timer; cancelling it (the common case: the
 * call ends first) is a set deletion. The one timer is armed for the earliest entry and cleared when none
 * is left. An entry carries the object its callback is for, so a caller with many timers per call (a
 * deadline, an idle deadline, progress reports) passes one shared function and itself, not a closure
 * per timer.
 */

/** How long a burst's follow-ups, with what they set off, may hold one turn of the event loop. */
const FOLLOW_UP_SLICE_MS = 1;
/** The share of follow-ups a burst starts with (a few deadlines due together finish in one go). */
const FIRST_FOLLOW_UPS_PER_SLICE = 16;
/** The most follow-ups one turn of the event loop runs. */
const MAX_FOLLOW_UPS_PER_SLICE = 256;
/** Run follow-ups a long burst drops from its queue once there are this many. */
const COMPACT_FOLLOW_UPS_AFTER = 1_024;

/** A scheduled entry; `cancel` is idempotent and harmless once it has fired. */
export type ScheduledTimer = { cancel(): void };

/**
 * Runs when its entry is due, with the target it was scheduled with; what it returns runs after every
 * entry due with it has fired.
 */
export type TimerCallback<Target = void> = (target: Target) => (() => void) | void;

/**
 * One scheduled callback with its target. Only `DeadlineTimers.schedule` makes one, and its overloads
 * pair each callback with a target of the type it takes. `release` is its timers' (shared by all their
 * entries, so that an entry carries no closure of its own).
 */
class TimerEntry implements ScheduledTimer {
  done = false;

  constructor(
    private readonly release: (entry: TimerEntry) => void,
    readonly key: number,
    private readonly callback: TimerCallback<never>,
    private readonly target: unknown,
  ) {}

  cancel(): void {
    this.release(this);
  }

  /** Calls the callback (guarded); returns the follow-up it hands back, if any. */
  fire(): (() => void) | undefined {
    return guarded(this.callback, this.target as never) ?? undefined;
  }
}

export class DeadlineTimers {
  /** Entries by the millisecond they are due at. */
  private readonly due = new Map<number, Set<TimerEntry>>();
  /** The keys of `due` (and keys whose set emptied since), as a binary min-heap. */
  private readonly heap: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** The key the timer is armed for. */
  private armedFor: number | undefined;
  /** The latest key the timer fired for: that much time has passed, whatever `now` says. */
  private firedThrough = -Infinity;
  /** What fired entries handed back, not yet run (FIFO; `nextFollowUp` is the head). */
  private readonly followUps: (() => void)[] = [];
  private nextFollowUp = 0;
  private shareScheduled = false;
  /** How many follow-ups the next turn of the event loop runs (see `scheduleShare`). */
  private followUpsPerSlice = FIRST_FOLLOW_UPS_PER_SLICE;

  constructor(
    /** A monotonic clock in ms: a wall clock set forward would fire every deadline at once. */
    private readonly now: () => number = () => performance.now(),
    /** A monotonic clock in ms for the follow-up slices. */
    private readonly clockMs: () => number = () => performance.now(),
  ) {}

  /** Runs `callback` (with `target`, if given) once `delayMs` from now, unless cancelled first. */
  schedule(delayMs: number, callback: TimerCallback): ScheduledTimer;
  schedule<Target>(delayMs: number, callback: TimerCallback<Target>, target: Target): ScheduledTimer;
  schedule(delayMs: number, callback: TimerCallback<never>, target?: unknown): ScheduledTimer {
    const key = Math.ceil(this.current() + Math.max(0, delayMs));
    const entry = new TimerEntry(this.release, key, callback, target);
    let entries = this.due.get(key);
    if (!entries) {
      entries = new Set();
      this.due.set(key, entries);
      pushHeap(this.heap, key);
    }
    entries.add(entry);
    if (this.armedFor === undefined || key < this.armedFor) this.arm();
    return entry;
  }

  /** How many entries wait. */
  get size(): number {
    let size = 0;
    for (const entries of this.due.values()) size += entries.size;
    return size;
  }

  /**
   * The time by the clock, or the last key the timer fired for when the clock is behind it (the
   * timer's and the clock's milliseconds need not tick together; under fake timers the clock may
   * not move at all).
   */
  private current(): number {
    return Math.max(this.now(), this.firedThrough);
  }

  /** Drops a cancelled entry (what its `cancel` calls). */
  private readonly release = (entry: TimerEntry): void => {
    if (entry.done) return;
    entry.done = true;
    const { key } = entry;
    const entries = this.due.get(key);
    if (!entries?.delete(entry) || entries.size > 0) return;
    this.due.delete(key);
    // no timer may keep the process waiting for an entry that no longer exists
    if (this.armedFor === key) this.arm();
  };

  /** Arms the one timer for the earliest key that still has entries, or clears it when none has. */
  private arm(): void {
    while (this.heap.length > 0 && !this.due.has(this.heap[0] as number)) popHeap(this.heap);
    const next = this.heap[0];
    if (next === this.armedFor) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = next;
    if (next === undefined) return;
    // whole milliseconds up: Node truncates a fractional delay, which would fire the entry early
    this.timer = setTimeout(() => this.fireDue(), Math.max(0, Math.ceil(next - this.current())));
  }

  /**
   * Fires the entries due by now when the timer has not yet: whoever holds the event loop with
   * deferred work (a burst's commits, say) calls this between its pieces, so that the deadlines due
   * meanwhile are told at their millisecond and not after the rest of that turn of the event loop.
   * What they hand back runs in the follow-up shares. Cheap when nothing is due.
   */
  fireOverdue(): void {
    if (this.fireIfOverdue() && this.nextFollowUp < this.followUps.length) this.scheduleShare();
  }

  /** Fires the entries due by now, if any; true when it did. */
  private fireIfOverdue(): boolean {
    // most slices and follow-ups come with no deadline waiting at all: no clock read then
    if (this.heap.length === 0) return false;
    const now = this.now();
    if ((this.heap[0] as number) > now) return false;
    this.fireEntriesDueBy(now);
    return true;
  }

  /** The timer's callback: fires every due entry, then runs what they handed back. */
  private fireDue(): void {
    if (this.armedFor !== undefined) this.firedThrough = Math.max(this.firedThrough, this.armedFor);
    this.timer = undefined;
    this.armedFor = undefined;
    this.fireEntriesDueBy(this.current());
    this.runFollowUps();
  }

  /** Fires every entry due by `now`, queues what they hand back, and re-arms. */
  private fireEntriesDueBy(now: number): void {
    const firing: TimerEntry[] = [];
    while (this.heap.length > 0 && (this.heap[0] as number) <= now) {
      const key = popHeap(this.heap) as number;
      const entries = this.due.get(key);
      if (!entries) continue;
      this.due.delete(key);
      for (const entry of entries) firing.push(entry);
    }
    for (const entry of firing) {
      // an entry cancelled by another's callback (two of one call, say) stays silent
      if (entry.done) continue;
      entry.done = true;
      const followUp = entry.fire();
      if (followUp) this.followUps.push(followUp);
    }
    this.arm();
  }

  /**
   * Runs a share of the follow-ups; the rest run in later turns of the event loop (its check phase),
   * after the timers due meanwhile have fired. A lone deadline's follow-up runs at once, and a burst's
   * work cannot hold up the deadlines that fall due while it is done.
   */
  private runFollowUps(): void {
    const startedAt = this.clockMs();
    const end = Math.min(this.followUps.length, this.nextFollowUp + this.followUpsPerSlice);
    while (this.nextFollowUp < end) {
      // the time the follow-ups before this one took must not hold up a deadline due meanwhile (what
      // they set off runs after the share: the next share and the commit slices check again)
      this.fireIfOverdue();
      guarded(this.followUps[this.nextFollowUp++] as () => void, undefined);
      if (this.clockMs() - startedAt >= FOLLOW_UP_SLICE_MS) break;
    }
    if (this.nextFollowUp >= this.followUps.length) {
      this.followUpsPerSlice = FIRST_FOLLOW_UPS_PER_SLICE;
      this.followUps.length = 0;
      this.nextFollowUp = 0;
      return;
    }
    // a long burst does not keep the follow-ups it has run
    if (this.nextFollowUp >= COMPACT_FOLLOW_UPS_AFTER) {
      this.followUps.splice(0, this.nextFollowUp);
      this.nextFollowUp = 0;
    }
    this.scheduleShare();
  }

  /**
   * Queues the next share, and right behind it an immediate that sizes the one after: a follow-up's own
   * call is cheap, but the promise continuations it sets off (a result, its events, its history) run
   * before anything else, and they run between the two immediates — nothing else of the event loop
   * does. The share is halved when that took more than twice FOLLOW_UP_SLICE_MS and doubled when it
   * took less than FOLLOW_UP_SLICE_MS, so a busy server (other turns, I/O) does not shrink it.
   */
  private scheduleShare(): void {
    if (this.shareScheduled) return;
    this.shareScheduled = true;
    let startedAt = 0;
    setImmediate(() => {
      this.shareScheduled = false;
      startedAt = this.clockMs();
      this.runFollowUps();
    });
    setImmediate(() => {
      // the burst is over: the next one starts from the first share again
      if (this.followUps.length === 0) return;
      const tookMs = this.clockMs() - startedAt;
      if (tookMs > 2 * FOLLOW_UP_SLICE_MS) this.followUpsPerSlice = Math.max(1, this.followUpsPerSlice >> 1);
      else if (tookMs < FOLLOW_UP_SLICE_MS)
        this.followUpsPerSlice = Math.min(MAX_FOLLOW_UPS_PER_SLICE, this.followUpsPerSlice * 2);
    });
  }
}

/**
 * Runs `run(argument)` (an entry's callback, a follow-up); an exception is reported as uncaught, as a
 * throwing timer callback's would be, without keeping the other entries or follow-ups from running.
 */
function guarded<Argument, Result>(
  run: (argument: Argument) => Result,
  argument: Argument,
): Result | undefined {
  try {
    return run(argument);
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
    return undefined;
  }
}

function pushHeap(heap: number[], key: number): void {
  let index = heap.push(key) - 1;
  while (index > 0) {
    const parent = (index - 1) >> 1;
    if ((heap[parent] as number) <= key) break;
    heap[index] = heap[parent] as number;
    index = parent;
  }
  heap[index] = key;
}

function popHeap(heap: number[]): number | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (heap.length === 0 || last === undefined) return top;
  let index = 0;
  for (;;) {
    const left = 2 * index + 1;
    if (left >= heap.length) break;
    const right = left + 1;
    const child = right < heap.length && (heap[right] as number) < (heap[left] as number) ? right : left;
    if ((heap[child] as number) >= last) break;
    heap[index] = heap[child] as number;
    index = child;
  }
  heap[index] = last;
  return top;
}
