/**
 * One running turn: its signals, timers, running calls, followers and its single end. The
 * TurnManager keeps the registry and decides *why* a turn ends; the TurnRun makes sure it ends once:
 * `claimEnd()` succeeds for exactly one caller, `release()` clears every timer, and `done` resolves
 * to the turn's outcome once the loop has returned and every follower has had the terminal event.
 */
import { setMaxListeners } from "node:events";
import type { Logger } from "pino";
import { TurnAbortedError, type AbortReason } from "../errors.js";
import type { ModelEngine } from "../providers/engine.js";
import { CallCancellation } from "../tools/call-cancellation.js";
import type { TurnEventBus } from "./event-bus.js";

export type RunningCall = {
  toolName: string;
  startedAt: number;
  attempts: number;
  /** The input a person approved in place of the model's (tool approval), when they edited it. */
  editedInput: Record<string, unknown> | undefined;
};

export type TurnRunOutcome =
  | { status: "completed"; stopReason: string; toolCallCount: number; durationMs: number }
  | { status: "aborted"; reason: AbortReason; durationMs: number };

/** What delegation may still start under one root turn (docs/semantics.md#isolation-and-limits). */
export class ChildTurnBudget {
  started = 0;
  running = 0;
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly maxTotal: number,
    readonly maxConcurrent: number,
  ) {}

  /**
   * Waits for a running slot (or the signal); false when the signal aborted first. A waiter woken
   * for a slot that it then gives up (its signal aborted meanwhile) passes the wake-up on.
   */
  async acquire(signal: AbortSignal): Promise<boolean> {
    while (this.running >= this.maxConcurrent) {
      if (signal.aborted) return false;
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.waiters.delete(wake);
          signal.removeEventListener("abort", wake);
          resolve();
        };
        this.waiters.add(wake);
        signal.addEventListener("abort", wake, { once: true });
      });
    }
    if (signal.aborted) {
      this.wakeNext();
      return false;
    }
    this.running++;
    return true;
  }

  release(): void {
    this.running--;
    this.wakeNext();
  }

  private wakeNext(): void {
    if (this.running < this.maxConcurrent) this.waiters.values().next().value?.();
  }
}

/** Aborts a completed turn's signals without building an Error (and a stack) per turn. */
const TURN_COMPLETED = new TurnAbortedError("user");

export type TurnRunInit = {
  turnId: string;
  sessionId: string;
  agentId: string;
  engine: ModelEngine;
  model: string;
  startedAt: number;
  bus: TurnEventBus;
  logger: Logger;
  principal: string | null;
  stepMode: boolean;
  parent?: TurnRun;
  childBudget: { maxTotal: number; maxConcurrent: number };
};

export class TurnRun {
  readonly turnId: string;
  readonly sessionId: string;
  readonly agentId: string;
  readonly engine: ModelEngine;
  readonly model: string;
  readonly startedAt: number;
  readonly bus: TurnEventBus;
  readonly logger: Logger;
  readonly principal: string | null;
  /** The turn whose call started this one (delegation), if any. */
  readonly parent: TurnRun | undefined;
  readonly depth: number;
  /** The top-level turn this one runs under (itself for a top-level turn). */
  readonly root: TurnRun;
  /** Child turns this turn's calls may start; shared by the whole tree, kept on the root. */
  readonly childBudget: ChildTurnBudget;
  /** Step mode for this turn; the session's switch can change it while the turn runs. */
  stepMode: boolean;
  /** Calls running now, for `/api/turns/active` and for the results of an abort. */
  readonly runningCalls = new Map<string, RunningCall>();
  /** The running batch's calls, each cancellable alone. */
  readonly cancellation = new CallCancellation();
  readonly childTurnIds = new Set<string>();
  /**
   * Settles to the outcome once the loop has returned and every follower has had the terminal event.
   * A turn nobody follows does not wait for the commit of its end, so sequential turns share commits;
   * a read of the store sees that end at once (it commits what is queued first), and `delivered` says
   * when it is durable.
   */
  readonly done: Promise<TurnRunOutcome>;
  /** Settles once the terminal event is committed and handed to the turn's followers. */
  readonly delivered: Promise<void>;

  /**
   * The turn's own signal, made on first read (`signal`): Node makes a controller's signal when it is
   * first read or aborted, about 5 µs each, and most turns never need this one (the loop polls
   * `aborted`; a final inference after the deadline and a step-mode pause listen to it, and tools and
   * approval waits listen to the work signal).
   */
  private readonly controller = new AbortController();
  private signalMade = false;
  /** Why the turn's signals were aborted (the first reason), once they were. */
  private abortError: TurnAbortedError | undefined;
  /** Aborted with the turn, and also at its deadline (after which one final inference runs). */
  private readonly workController = new AbortController();
  private deadlineTimer: NodeJS.Timeout | undefined;
  private disconnectTimer: NodeJS.Timeout | undefined;
  private subscribers = 0;
  private ended = false;
  private outcome: TurnRunOutcome | undefined;
  private resolveLoopReturned!: () => void;

  constructor(init: TurnRunInit) {
    this.turnId = init.turnId;
    this.sessionId = init.sessionId;
    this.agentId = init.agentId;
    this.engine = init.engine;
    this.model = init.model;
    this.startedAt = init.startedAt;
    this.bus = init.bus;
    this.logger = init.logger;
    this.principal = init.principal;
    this.stepMode = init.stepMode;
    this.parent = init.parent;
    this.depth = init.parent ? init.parent.depth + 1 : 0;
    this.root = init.parent?.root ?? this;
    this.childBudget =
      init.parent?.childBudget ??
      new ChildTurnBudget(init.childBudget.maxTotal, init.childBudget.maxConcurrent);
    // Every call of a batch listens on the work signal (and removes its listener when it settles); a
    // batch of more than ten is normal, not a leak. The turn's own signal gets the same when it is made.
    setMaxListeners(0, this.workController.signal);
    const loopReturned = new Promise<void>((resolve) => (this.resolveLoopReturned = resolve));
    this.delivered = this.bus.delivered;
    this.done = loopReturned
      .then(() => (this.bus.followed ? this.bus.delivered : undefined))
      .then(() => this.outcome as TurnRunOutcome);
  }

  get parentTurnId(): string | null {
    return this.parent?.turnId ?? null;
  }

  /** The turn's signal: aborted when the turn ends, however it ends (made now if not yet). */
  get signal(): AbortSignal {
    const { signal } = this.controller;
    if (!this.signalMade) {
      this.signalMade = true;
      setMaxListeners(0, signal);
      if (this.abortError) this.controller.abort(this.abortError);
    }
    return signal;
  }

  /** Whether the turn's signal is aborted, without making it. */
  get aborted(): boolean {
    return this.abortError !== undefined;
  }

  get workSignal(): AbortSignal {
    return this.workController.signal;
  }

  /** True once the turn's end has been claimed (its terminal event is on its way). */
  get finished(): boolean {
    return this.ended;
  }

  /** Claims the right to end the turn; true for exactly one caller. */
  claimEnd(): boolean {
    if (this.ended) return false;
    this.ended = true;
    return true;
  }

  /** Records how the turn ended, clears its timers and forgets its running calls. */
  release(outcome: TurnRunOutcome): void {
    this.outcome = outcome;
    clearTimeout(this.deadlineTimer);
    clearTimeout(this.disconnectTimer);
    this.deadlineTimer = undefined;
    this.disconnectTimer = undefined;
    this.runningCalls.clear();
  }

  /** Aborts the turn's signals: its tools, its inference and its pauses stop. */
  abortSignals(reason: AbortReason | "completed"): void {
    const error = reason === "completed" ? TURN_COMPLETED : new TurnAbortedError(reason);
    this.workController.abort(error);
    this.abortError ??= error;
    if (this.signalMade) this.controller.abort(error);
  }

  /** Stops the turn's work (its deadline passed) but not the turn: one final inference follows. */
  stopWork(): void {
    this.workController.abort(new TurnAbortedError("timeout"));
  }

  /** The loop has returned (its promise settled either way). */
  loopReturned(): void {
    this.resolveLoopReturned();
  }

  /** (Re)arms the deadline timer; `run` is called once when it fires unless the turn has ended. */
  setDeadline(delayMs: number, run: () => void): void {
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(() => {
      this.deadlineTimer = undefined;
      if (!this.ended) run();
    }, delayMs);
  }

  /** Counts a follower in; returns how many there are. Cancels a pending disconnect. */
  addSubscriber(): number {
    clearTimeout(this.disconnectTimer);
    this.disconnectTimer = undefined;
    return ++this.subscribers;
  }

  /** Counts a follower out; returns how many are left. */
  removeSubscriber(): number {
    return --this.subscribers;
  }

  /** After the last follower left: `run` after `graceMs` unless a follower came back or the turn ended. */
  armDisconnect(graceMs: number, run: () => void): void {
    clearTimeout(this.disconnectTimer);
    this.disconnectTimer = setTimeout(() => {
      this.disconnectTimer = undefined;
      if (this.subscribers === 0 && !this.ended) run();
    }, graceMs);
    this.disconnectTimer.unref();
  }
}
