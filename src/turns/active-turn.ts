/**
 * The live state of one running turn: its AbortController, event bus, running calls, and the
 * subscribers following its stream (for disconnect handling). Owned by the TurnManager.
 */
import { setMaxListeners } from "node:events";
import type { Logger } from "pino";
import type { ModelEngine } from "../providers/engine.js";
import type { TurnEventBus } from "./event-bus.js";

export type RunningTool = { toolName: string; startedAt: number };

export class ActiveTurn {
  readonly controller = new AbortController();
  /** Aborted with the turn, and also at its deadline (after which one final inference runs). */
  readonly workController = new AbortController();
  readonly runningTools = new Map<string, RunningTool>();
  /** One per call of the running batch, for cancelling a single tool. */
  readonly callControllers = new Map<string, AbortController>();
  readonly childTurnIds = new Set<string>();
  deadlineTimer: NodeJS.Timeout | undefined;
  /** Step mode for this turn; the session's switch can change it while the turn runs. */
  stepMode = false;
  /** The principal owning the turn's session (null when auth is off). */
  principal: string | null = null;
  /** Set once the terminal event is out; guards every path that ends a turn. */
  finished = false;
  subscriberCount = 0;
  disconnectTimer: NodeJS.Timeout | undefined;
  /** Settles when the loop has returned (after the terminal event, possibly later for an abort). */
  done: Promise<void> = Promise.resolve();

  constructor(
    readonly turnId: string,
    readonly sessionId: string,
    readonly agentId: string,
    readonly engine: ModelEngine,
    readonly model: string,
    readonly startedAt: number,
    readonly bus: TurnEventBus,
    readonly logger: Logger,
    readonly parentTurnId: string | null = null,
    readonly depth = 0,
  ) {
    // Every call of a batch listens on the turn's signal (and removes its listener when it settles);
    // a batch of more than ten is normal, not a leak.
    setMaxListeners(0, this.controller.signal, this.workController.signal);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }
}
