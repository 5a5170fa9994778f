/**
 * A circuit breaker per tool (docs/semantics.md#resilience): closed → open after `failureThreshold`
 * consecutive transient failures → after `openMs`, half-open, admitting exactly one probe at a time
 * (concurrent callers fail fast while it runs) → closed after `halfOpenSuccesses` consecutive successful
 * probes, open again on a failed one. Permanent errors neither count nor reset.
 */
export type BreakerState = "closed" | "open" | "half_open";

export type BreakerSettings = { failureThreshold: number; openMs: number; halfOpenSuccesses: number };

export const DEFAULT_BREAKER_SETTINGS: BreakerSettings = Object.freeze({
  failureThreshold: 5,
  openMs: 30_000,
  halfOpenSuccesses: 2,
});

/** How an admitted call ended, for the breaker's books. */
export type CallResult = "success" | "failure" | "ignored";

export type Admission =
  | { admitted: true; probe: boolean; release(result: CallResult): void }
  | { admitted: false; state: "open" | "half_open"; retryAfterMs: number };

export type BreakerTransition = { toolName: string; from: BreakerState; to: BreakerState };
/** Told about the transitions one call causes. Never kept past that call: it may reach the call's turn. */
type TransitionObserver = ((transition: BreakerTransition) => void) | undefined;

export class CircuitBreaker {
  private current: BreakerState = "closed";
  private consecutiveFailures = 0;
  private probeSuccesses = 0;
  private probeInFlight = false;
  private openedAt = 0;

  constructor(
    readonly toolName: string,
    private readonly settings: BreakerSettings,
    private readonly now: () => number,
    private readonly onTransition: (transition: BreakerTransition) => void = () => {},
  ) {}

  /** The state now (an open breaker whose time is up reads as half-open); reading changes nothing. */
  get state(): BreakerState {
    return this.current === "open" && this.now() - this.openedAt >= this.settings.openMs
      ? "half_open"
      : this.current;
  }

  /**
   * Asks to make a call; an admitted call must be released exactly once. Transitions caused by this
   * call (on admission or on release) are reported to `observer`, so they can be traced to it.
   */
  admit(observer?: TransitionObserver): Admission {
    const state = this.state;
    if (state !== this.current) this.move(state, observer);
    if (state === "open") {
      return { admitted: false, state, retryAfterMs: this.openedAt + this.settings.openMs - this.now() };
    }
    if (state === "half_open") {
      if (this.probeInFlight) return { admitted: false, state, retryAfterMs: 0 };
      this.probeInFlight = true;
      return { admitted: true, probe: true, release: this.releaser(true, observer) };
    }
    return { admitted: true, probe: false, release: this.releaser(false, observer) };
  }

  private releaser(probe: boolean, observer: TransitionObserver) {
    let released = false;
    return (result: CallResult) => {
      if (released) return;
      released = true;
      if (probe) this.probeInFlight = false;
      if (result === "ignored") return;
      if (result === "success") this.onSuccess(probe, observer);
      else this.onFailure(probe, observer);
    };
  }

  private onSuccess(probe: boolean, observer: TransitionObserver): void {
    this.consecutiveFailures = 0;
    if (!probe || this.current !== "half_open") return;
    this.probeSuccesses++;
    if (this.probeSuccesses >= this.settings.halfOpenSuccesses) this.move("closed", observer);
  }

  private onFailure(probe: boolean, observer: TransitionObserver): void {
    if (probe && this.current === "half_open") {
      this.open(observer);
      return;
    }
    this.consecutiveFailures++;
    if (this.current === "closed" && this.consecutiveFailures >= this.settings.failureThreshold) {
      this.open(observer);
    }
  }

  private open(observer: TransitionObserver): void {
    this.openedAt = this.now();
    this.move("open", observer);
  }

  private move(to: BreakerState, observer: TransitionObserver): void {
    const from = this.current;
    if (from === to) return;
    this.current = to;
    this.consecutiveFailures = 0;
    this.probeSuccesses = 0;
    const transition = { toolName: this.toolName, from, to };
    this.onTransition(transition);
    observer?.(transition);
  }
}

/** The breakers of all tools, created on first use; shared by every turn of the process. */
export class BreakerRegistry {
  private readonly breakers = new Map<string, CircuitBreaker>();

  constructor(
    private readonly settings: BreakerSettings,
    private readonly now: () => number,
    private readonly onTransition?: (transition: BreakerTransition) => void,
  ) {}

  get(toolName: string): CircuitBreaker {
    let breaker = this.breakers.get(toolName);
    if (!breaker) {
      breaker = new CircuitBreaker(toolName, this.settings, this.now, this.onTransition);
      this.breakers.set(toolName, breaker);
    }
    return breaker;
  }

  /** Every known breaker's state. */
  states(): { toolName: string; state: BreakerState }[] {
    return [...this.breakers.values()].map((breaker) => ({
      toolName: breaker.toolName,
      state: breaker.state,
    }));
  }

  /** Tools whose circuit is not closed. */
  openCircuits(): string[] {
    return this.states()
      .filter((entry) => entry.state !== "closed")
      .map((entry) => entry.toolName);
  }
}
