/**
 * Step control (docs/semantics.md#step-control): in step mode the loop pauses after an inference that
 * requested tools and after tools ran. A pause emits `debugger.pause` and waits until it is continued by its
 * pauseId, its timeout passes (then it continues, or aborts the turn if so configured), the turn is aborted,
 * or step mode is switched off — whichever comes first. A wait never outlives its turn: it listens to the
 * turn's signal, and its timer and listener are removed however it ends.
 */
import type { EventBody } from "../events.js";

export type PausePhase = "after_inference" | "after_tools";

export type PauseOutcome = "continued" | "timed_out" | "aborted" | "disabled";

export type PauseInfo = { pauseId: string; turnId: string; phase: PausePhase; deadlineMs: number };

export type StepSettings = {
  /** How long a pause waits before it resolves by itself. */
  pauseTimeoutMs: number;
  /** What a pause that times out does: continue the turn, or abort it. */
  onTimeout: "continue" | "abort";
};

/** What the controller needs of the turn it pauses. */
export type PausedTurn = {
  turnId: string;
  sessionId: string;
  signal: AbortSignal;
  /** Whether step mode is on for this turn now (it may be switched off while a pause waits). */
  stepMode(): boolean;
  emit(body: EventBody): void;
};

type Waiting = PauseInfo & { sessionId: string; release(outcome: PauseOutcome): void };

export class StepController {
  private readonly waiting = new Map<string, Waiting>();

  constructor(
    private readonly settings: StepSettings,
    private readonly deps: { now: () => number; generateId: () => string },
  ) {}

  get onTimeout(): StepSettings["onTimeout"] {
    return this.settings.onTimeout;
  }

  /**
   * Pauses `turn` if step mode is on; resolves with why the wait ended ("disabled" at once if off).
   * `summarize` makes the pause's summary; it is not called when the turn does not pause.
   */
  pause(turn: PausedTurn, phase: PausePhase, summarize: () => unknown): Promise<PauseOutcome> {
    if (!turn.stepMode()) return Promise.resolve("disabled");
    if (turn.signal.aborted) return Promise.resolve("aborted");
    const pauseId = this.deps.generateId();
    const deadlineMs = this.deps.now() + this.settings.pauseTimeoutMs;
    return new Promise<PauseOutcome>((resolve) => {
      const release = (outcome: PauseOutcome) => {
        if (!this.waiting.delete(pauseId)) return;
        clearTimeout(timer);
        turn.signal.removeEventListener("abort", onAbort);
        resolve(outcome);
      };
      const onAbort = () => release("aborted");
      const timer = setTimeout(() => release("timed_out"), this.settings.pauseTimeoutMs);
      this.waiting.set(pauseId, {
        pauseId,
        turnId: turn.turnId,
        sessionId: turn.sessionId,
        phase,
        deadlineMs,
        release,
      });
      turn.signal.addEventListener("abort", onAbort, { once: true });
      turn.emit({ type: "debugger.pause", pauseId, phase, deadlineMs, summary: summarize() });
    });
  }

  /** Continues the pause `pauseId` of `turnId`; false when that turn has no such pause. */
  continue(turnId: string, pauseId: string): boolean {
    const pause = this.waiting.get(pauseId);
    if (!pause || pause.turnId !== turnId) return false;
    pause.release("continued");
    return true;
  }

  /** Releases every wait of the session (step mode switched off); returns how many. */
  releaseSession(sessionId: string): number {
    const released = [...this.waiting.values()].filter((pause) => pause.sessionId === sessionId);
    for (const pause of released) pause.release("disabled");
    return released.length;
  }

  /** Releases the pause a turn is waiting in (its deadline passed); true if there was one. */
  releaseTurn(turnId: string): boolean {
    const pause = [...this.waiting.values()].find((waiting) => waiting.turnId === turnId);
    pause?.release("disabled");
    return pause !== undefined;
  }

  /** The pause a turn is waiting in, if any. */
  pauseOf(turnId: string): PauseInfo | undefined {
    for (const { pauseId, turnId: owner, phase, deadlineMs } of this.waiting.values()) {
      if (owner === turnId) return { pauseId, turnId: owner, phase, deadlineMs };
    }
    return undefined;
  }

  get size(): number {
    return this.waiting.size;
  }
}
