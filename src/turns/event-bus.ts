/**
 * A turn's event bus: stamps each event with the turn id, the next sequence number and the time,
 * queues it in the store, and fans it out once the store has committed it, in seq order — each event
 * after the commit that holds it (a tick's writes may commit in several slices). After the terminal
 * event nothing more is accepted, which is what makes "exactly one terminal event" hold however abort,
 * timeout and completion race.
 */
import { isTerminalEvent, type EventBody, type TurnEvent } from "../events.js";
import type { HistoryStore } from "../history/store.js";
import { withFields } from "../objects.js";

export type EventListener = (event: TurnEvent) => void;

export class TurnEventBus {
  private seq: number;
  private closed = false;
  private readonly listeners = new Set<EventListener>();
  /** Events stored but not yet committed: `uncommitted[committedCount..]`. */
  private uncommitted: TurnEvent[] = [];
  private committedCount = 0;
  private readonly pending: TurnEvent[] = [];
  private delivering = false;
  private closing = false;
  private limitReached = false;
  private resolveDelivered!: () => void;
  /** Settles once the terminal event has been committed and handed to the listeners. */
  readonly delivered = new Promise<void>((resolve) => (this.resolveDelivered = resolve));
  /** The store's callback for one event, run in order: the oldest uncommitted event is committed. */
  private readonly onCommitted = () => {
    this.pending.push(this.uncommitted[this.committedCount++]!);
    if (this.committedCount === this.uncommitted.length) {
      this.uncommitted = [];
      this.committedCount = 0;
    }
    if (!this.delivering) this.deliver();
  };

  constructor(
    readonly turnId: string,
    private readonly store: Pick<HistoryStore, "appendEvent" | "afterCommit">,
    private readonly now: () => number,
    lastSeq = 0,
    private readonly onPersistError: (error: unknown, event: TurnEvent) => void = () => {},
    /**
     * The cap on a turn's events: past it, events other than calls' results are refused, and
     * `onReached` is told once.
     */
    private readonly limit?: { maxEvents: number; onReached: () => void },
  ) {
    this.seq = lastSeq;
  }

  /** Lets the events that end a turn (closing results, the terminal event) past the cap. */
  allowClosingEvents(): void {
    this.closing = true;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get lastSeq(): number {
    return this.seq;
  }

  /** Whether anyone listens (until the terminal event has been delivered, after which nobody does). */
  get followed(): boolean {
    return this.listeners.size > 0;
  }

  /** The seq of the last event committed (those after it are still on their way to the store). */
  get committedSeq(): number {
    return this.seq - (this.uncommitted.length - this.committedCount);
  }

  /**
   * Stores one event and delivers it once committed; returns it, or undefined once the turn has
   * ended. Delivery is in seq order for every listener, also for events a listener emits.
   */
  emit(body: EventBody): TurnEvent | undefined {
    if (this.closed) return undefined;
    if (this.limit && !this.closing && this.seq >= this.limit.maxEvents) {
      if (!this.limitReached) {
        this.limitReached = true;
        this.limit.onReached();
      }
      // A call's result goes past the cap like the abort's closing results: a call that ends before the
      // abort (which follows in a microtask) has its result in history, and its stream must say so too.
      if (body.type !== "tool_result") return undefined;
    }
    const event = withFields(body, { turnId: this.turnId, seq: this.seq + 1, at: this.now() }) as TurnEvent;
    try {
      this.store.appendEvent(event);
    } catch (error) {
      // A failed write must not strand the clients following the turn: they still get the event (and
      // above all the terminal one); the failure is reported and the log has a gap.
      this.onPersistError(error, event);
    }
    this.seq = event.seq;
    if (isTerminalEvent(event)) this.closed = true;
    this.uncommitted.push(event);
    this.store.afterCommit(this.onCommitted);
    return event;
  }

  private deliver(): void {
    this.delivering = true;
    try {
      for (let next = this.pending.shift(); next; next = this.pending.shift()) {
        for (const listener of [...this.listeners]) listener(next);
      }
    } finally {
      this.delivering = false;
      this.pending.length = 0;
      if (this.closed && this.uncommitted.length === 0) {
        this.listeners.clear();
        this.resolveDelivered();
      }
    }
  }

  /** Adds a listener; returns its disposer. */
  subscribe(listener: EventListener): () => void {
    if (this.closed) return () => {};
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
