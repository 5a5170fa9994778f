/**
 * The TurnManager: the registry of active turns. It starts turns (session, history, event bus, one
 * AbortController each), drives the loop, and is the only place a turn ends — completion, abort,
 * error or disconnect all go through `finish`, which runs once per turn.
 *
 * An abort is finished synchronously: open calls get their `[CANCELLED] …` results in the same
 * transaction that marks the turn aborted, `tool_result` and `turn_abort` go out, and only then is the
 * signal aborted, so whatever the tools do afterwards can only produce discarded late results.
 */
import type { Logger } from "pino";
import { ModelError, ReinsError, TurnAbortedError, type AbortReason } from "../errors.js";
import { EVENT_RESULT_MAX_CHARS, type EventBody, type TurnEvent } from "../events.js";
import type { HistoryStore } from "../history/store.js";
import type { ModelEngine } from "../providers/engine.js";
import { cancelledResult } from "../tools/results.js";
import { ActiveTurn } from "./active-turn.js";
import { TurnEventBus } from "./event-bus.js";
import type { LoopResult, ToolCallingLoop } from "./loop.js";

export type StartTurnRequest = {
  message: string;
  sessionId?: string;
  agentId?: string;
  provider?: string;
  model?: string;
};

export type ActiveTurnDetails = {
  turnId: string;
  sessionId: string;
  agentId: string;
  startedAt: number;
  currentTool: string | null;
  runningTools: { toolId: string; toolName: string; elapsedMs: number }[];
  toolCallCount: number;
  paused: boolean;
};

export type TurnManagerSettings = {
  defaultProvider: string;
  defaultAgentId: string;
  onDisconnect: "abort" | "continue";
  disconnectGraceMs: number;
};

export type TurnManagerDeps = {
  store: HistoryStore;
  loop: ToolCallingLoop;
  engines: ReadonlyMap<string, ModelEngine>;
  logger: Logger;
  settings: TurnManagerSettings;
  now?: () => number;
  /** Mints ids; `prefix` is `ses` for sessions and `turn` for turns. */
  generateId: (prefix: "ses" | "turn") => string;
};

/** Errors the HTTP layer maps to 404 / 409 / 400. */
export class SessionNotFoundError extends ReinsError {
  constructor(sessionId: string) {
    super("session_not_found", `Session not found: ${sessionId}`, { data: { sessionId } });
  }
}
export class SessionBusyError extends ReinsError {
  constructor(sessionId: string, turnId: string) {
    super("session_busy", `Session ${sessionId} already has a running turn (${turnId}).`, {
      data: { sessionId, turnId },
    });
  }
}
export class UnknownProviderError extends ReinsError {
  constructor(provider: string, known: string[]) {
    super("unknown_provider", `Unknown provider "${provider}"; configured: ${known.join(", ")}.`, {
      data: { provider, known },
    });
  }
}

export class TurnManager {
  private readonly turns = new Map<string, ActiveTurn>();
  private readonly now: () => number;

  constructor(private readonly deps: TurnManagerDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Starts a turn and returns it once `turn_start` is persisted; the loop runs on in the background. */
  startTurn(request: StartTurnRequest): ActiveTurn {
    const { store, settings } = this.deps;
    const providerName = request.provider ?? settings.defaultProvider;
    const engine = this.deps.engines.get(providerName);
    if (!engine) throw new UnknownProviderError(providerName, [...this.deps.engines.keys()]);

    let session = request.sessionId === undefined ? undefined : store.getSession(request.sessionId);
    if (request.sessionId !== undefined && !session) throw new SessionNotFoundError(request.sessionId);
    const busy = session && [...this.turns.values()].find((turn) => turn.sessionId === session?.id);
    if (session && busy) throw new SessionBusyError(session.id, busy.turnId);
    session ??= store.createSession(this.deps.generateId("ses"), request.agentId ?? settings.defaultAgentId);

    const agentId = request.agentId ?? session.agentId;
    const model = request.model ?? engine.defaultModel;
    const turnId = this.deps.generateId("turn");
    const startedAt = this.now();
    store.beginTurn({
      id: turnId,
      sessionId: session.id,
      agentId,
      provider: engine.provider,
      model,
      startedAt,
      userMessage: request.message,
    });
    const bus = new TurnEventBus(turnId, store, this.now);
    const logger = this.deps.logger.child({ turnId, sessionId: session.id });
    const turn = new ActiveTurn(turnId, session.id, agentId, engine, model, startedAt, bus, logger);
    this.turns.set(turnId, turn);
    bus.emit({
      type: "turn_start",
      sessionId: session.id,
      agentId,
      provider: engine.provider,
      model,
      startedAt,
    });
    logger.info({ provider: engine.provider, model }, "turn started");
    turn.done = this.drive(turn);
    return turn;
  }

  get(turnId: string): ActiveTurn | undefined {
    return this.turns.get(turnId);
  }

  activeCount(): number {
    return this.turns.size;
  }

  getActiveTurnDetails(): ActiveTurnDetails[] {
    const now = this.now();
    return [...this.turns.values()].map((turn) => {
      const running = [...turn.runningTools.entries()].map(([toolId, tool]) => ({
        toolId,
        toolName: tool.toolName,
        elapsedMs: now - tool.startedAt,
      }));
      return {
        turnId: turn.turnId,
        sessionId: turn.sessionId,
        agentId: turn.agentId,
        startedAt: turn.startedAt,
        currentTool: running.at(-1)?.toolName ?? null,
        runningTools: running,
        toolCallCount: this.deps.store.getTurn(turn.turnId)?.toolCallCount ?? 0,
        paused: false,
      };
    });
  }

  /** Aborts an active turn; false when no such turn is running (unknown or already ended). */
  abortTurn(turnId: string, reason: AbortReason): boolean {
    const turn = this.turns.get(turnId);
    if (!turn || turn.finished) return false;
    this.finishAborted(turn, reason);
    return true;
  }

  /** Aborts every active turn and waits (bounded) for their loops to return. */
  async abortAll(reason: AbortReason, waitMs = 5_000): Promise<void> {
    const turns = [...this.turns.values()];
    for (const turn of turns) this.abortTurn(turn.turnId, reason);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(turns.map((turn) => turn.done)),
      new Promise((resolve) => (timer = setTimeout(resolve, waitMs))),
    ]);
    clearTimeout(timer);
  }

  /**
   * Follows a turn's events from `afterSeq`: returns the persisted events after it and subscribes to
   * the live ones, in one synchronous step so nothing falls between. The disposer also counts the
   * subscriber out, which may start the disconnect grace period.
   */
  follow(turn: ActiveTurn, afterSeq: number, listener: (event: TurnEvent) => void) {
    const replay = this.deps.store.listEvents(turn.turnId, afterSeq);
    const unsubscribe = turn.bus.subscribe(listener);
    turn.subscriberCount++;
    clearTimeout(turn.disconnectTimer);
    turn.disconnectTimer = undefined;
    let disposed = false;
    const dispose = () => {
      if (disposed) return;
      disposed = true;
      unsubscribe();
      turn.subscriberCount--;
      if (turn.subscriberCount === 0) this.onLastSubscriberGone(turn);
    };
    return { replay, dispose };
  }

  private onLastSubscriberGone(turn: ActiveTurn): void {
    const { onDisconnect, disconnectGraceMs } = this.deps.settings;
    if (turn.finished || onDisconnect !== "abort") return;
    if (disconnectGraceMs === 0) {
      turn.logger.info("client disconnected; aborting");
      this.abortTurn(turn.turnId, "disconnect");
      return;
    }
    turn.disconnectTimer = setTimeout(() => {
      turn.disconnectTimer = undefined;
      if (turn.subscriberCount === 0) {
        turn.logger.info({ graceMs: disconnectGraceMs }, "no client reattached; aborting");
        this.abortTurn(turn.turnId, "disconnect");
      }
    }, disconnectGraceMs);
    turn.disconnectTimer.unref();
  }

  private async drive(turn: ActiveTurn): Promise<void> {
    const emit = (body: EventBody) => void turn.bus.emit(body);
    let result: LoopResult | undefined;
    try {
      result = await this.deps.loop.run({
        turnId: turn.turnId,
        sessionId: turn.sessionId,
        agentId: turn.agentId,
        engine: turn.engine,
        model: turn.model,
        signal: turn.signal,
        emit,
        runningTools: turn.runningTools,
        now: this.now,
      });
    } catch (error) {
      if (!turn.finished) {
        const failure =
          error instanceof ReinsError ? error : new ModelError(String((error as Error)?.message ?? error));
        turn.logger.error({ err: error }, "turn failed");
        turn.bus.emit({ type: "error", code: failure.code, message: failure.message });
        this.finishAborted(turn, "error");
      }
    }
    if (result && result.stopReason !== "aborted") this.finishCompleted(turn, result);
    if (!turn.finished) this.finishAborted(turn, abortReasonFromSignal(turn.signal));
  }

  private finishCompleted(turn: ActiveTurn, result: LoopResult): void {
    if (!this.begin(turn)) return;
    this.deps.store.endTurn(turn.turnId, { status: "completed", stopReason: result.stopReason });
    turn.bus.emit({
      type: "turn_complete",
      stopReason: result.stopReason,
      durationMs: this.now() - turn.startedAt,
      toolCallCount: result.toolCallCount,
    });
    turn.logger.info(
      { stopReason: result.stopReason, toolCallCount: result.toolCallCount },
      "turn completed",
    );
    this.release(turn);
    // Nothing should still run, but a finished turn must leave no work behind.
    turn.controller.abort(new TurnAbortedError("user"));
  }

  private finishAborted(turn: ActiveTurn, reason: AbortReason): void {
    if (!this.begin(turn)) return;
    const closed = this.deps.store.endTurn(turn.turnId, { status: "aborted", abortReason: reason }, () => ({
      status: "cancelled",
      result: cancelledResult(reason),
      isError: true,
    }));
    const now = this.now();
    for (const response of closed) {
      const running = turn.runningTools.get(response.callId);
      turn.bus.emit({
        type: "tool_result",
        toolId: response.callId,
        toolName: response.name,
        result: response.result.slice(0, EVENT_RESULT_MAX_CHARS),
        isError: true,
        status: "cancelled",
        durationMs: running ? now - running.startedAt : 0,
        attempts: 0,
      });
    }
    turn.bus.emit({ type: "turn_abort", reason });
    turn.logger.info({ reason, closedCalls: closed.length }, "turn aborted");
    this.release(turn);
    turn.controller.abort(new TurnAbortedError(reason));
  }

  /** Claims the right to end the turn; false when it has already ended. */
  private begin(turn: ActiveTurn): boolean {
    if (turn.finished) return false;
    turn.finished = true;
    return true;
  }

  private release(turn: ActiveTurn): void {
    clearTimeout(turn.disconnectTimer);
    turn.runningTools.clear();
    this.turns.delete(turn.turnId);
  }
}

function abortReasonFromSignal(signal: AbortSignal): AbortReason {
  return signal.reason instanceof TurnAbortedError ? signal.reason.reason : "error";
}
