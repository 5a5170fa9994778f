/**
 * The TurnManager: the registry of active turns. It starts turns (session, history, event bus, one
 * AbortController each), drives the loop, and is the only place a turn ends — completion, abort,
 * error, disconnect, shutdown or a parent's abort all go through `finish…`, which runs once per turn.
 *
 * An abort is finished synchronously: open calls get their `[CANCELLED] …` results in the same
 * transaction that marks the turn aborted, `tool_result` and `turn_abort` go out, and only then are the
 * signals aborted, so whatever the tools do afterwards can only produce discarded late results. The
 * turn's deadline is graceful instead: open calls are closed with timeout results and the loop gets one
 * final inference to answer with what it has.
 */
import type { Logger } from "pino";
import { ModelError, ReinsError, TurnAbortedError, type AbortReason } from "../errors.js";
import { EVENT_RESULT_MAX_CHARS, type EventBody, type TurnEvent } from "../events.js";
import type { ToolResponseBlock } from "../history/model.js";
import type { HistoryStore } from "../history/store.js";
import { NO_DECISIONS, type Decision, type DecisionRecorder } from "../observability/decision.js";
import type { ModelEngine } from "../providers/engine.js";
import { cancelledResult, turnDeadlineResult } from "../tools/results.js";
import { ActiveTurn } from "./active-turn.js";
import { TurnEventBus } from "./event-bus.js";
import type { LoopResult, ToolCallingLoop } from "./loop.js";
import { turnServices } from "./turn-services.js";
import { describeActiveTurn, type ActiveTurnDetails } from "./active-details.js";
import { SessionBusyError, SessionNotFoundError, UnknownProviderError } from "./errors.js";
import { StepController } from "./step-control.js";
import { ZombieRegistry, type Zombie } from "./zombie-registry.js";

export type StartTurnRequest = {
  message: string;
  sessionId?: string;
  agentId?: string;
  provider?: string;
  model?: string;
  /** Pause at phase boundaries (DESIGN.md §5.5); defaults to the session's switch. */
  stepMode?: boolean;
  /** The principal starting the turn; a new session is owned by it. */
  principal?: string | null;
};

export type TurnManagerSettings = {
  defaultProvider: string;
  defaultAgentId: string;
  onDisconnect: "abort" | "continue";
  disconnectGraceMs: number;
  /** Per-turn limit (0 = none); then running calls are closed and one final inference answers. */
  turnTimeoutMs: number;
  /** How long that final inference may take before the turn is aborted (reason `timeout`). */
  finalAnswerTimeoutMs: number;
  /** Deepest nesting of child turns (a top-level turn has depth 0). */
  maxDepth: number;
  /** Step mode: how long a pause waits, and whether it then continues or aborts the turn. */
  stepPauseTimeoutMs: number;
  stepOnTimeout: "continue" | "abort";
  /** Filesystem confinement handed to tools (`ctx.allowedRoots`, `ctx.workspace`). */
  allowedRoots: readonly string[];
  workspace: string | undefined;
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
  recorder?: DecisionRecorder;
  /** Tools whose circuit is not closed, for `session_status`. */
  openCircuits?: () => string[];
  /** Told when a turn ends, for metrics. */
  onTurnEnded?: (outcome: string, durationMs: number) => void;
};

export class TurnManager {
  readonly zombies = new ZombieRegistry();
  readonly steps: StepController;
  private readonly turns = new Map<string, ActiveTurn>();
  private readonly now: () => number;
  private readonly recorder: DecisionRecorder;

  constructor(private readonly deps: TurnManagerDeps) {
    this.now = deps.now ?? Date.now;
    this.recorder = deps.recorder ?? NO_DECISIONS;
    let pauseCounter = 0;
    this.steps = new StepController(
      { pauseTimeoutMs: deps.settings.stepPauseTimeoutMs, onTimeout: deps.settings.stepOnTimeout },
      { now: this.now, generateId: () => `pause_${++pauseCounter}` },
    );
  }

  /** Starts a turn and returns it once `turn_start` is persisted; the loop runs on in the background. */
  startTurn(request: StartTurnRequest, parent?: ActiveTurn): ActiveTurn {
    const { store, settings } = this.deps;
    const providerName = request.provider ?? parent?.engine.provider ?? settings.defaultProvider;
    const engine = this.deps.engines.get(providerName);
    if (!engine) throw new UnknownProviderError(providerName, [...this.deps.engines.keys()]);

    let session = request.sessionId === undefined ? undefined : store.getSession(request.sessionId);
    if (request.sessionId !== undefined && !session) throw new SessionNotFoundError(request.sessionId);
    const busy = session && [...this.turns.values()].find((turn) => turn.sessionId === session?.id);
    if (session && busy) throw new SessionBusyError(session.id, busy.turnId);
    session ??= store.createSession(
      this.deps.generateId("ses"),
      request.agentId ?? settings.defaultAgentId,
      request.principal ?? parent?.principal ?? null,
    );

    const agentId = request.agentId ?? session.agentId;
    const model = request.model ?? (parent?.engine === engine ? parent.model : engine.defaultModel);
    const turnId = this.deps.generateId("turn");
    const startedAt = this.now();
    const depth = parent ? parent.depth + 1 : 0;
    store.beginTurn({
      id: turnId,
      sessionId: session.id,
      agentId,
      provider: engine.provider,
      model,
      startedAt,
      userMessage: request.message,
      parentTurnId: parent?.turnId,
      depth,
    });
    const logger = this.deps.logger.child({ turnId, sessionId: session.id });
    const bus = new TurnEventBus(turnId, store, this.now, 0, (error, event) =>
      logger.error({ err: error, seq: event.seq, type: event.type }, "could not persist event"),
    );
    const turn = new ActiveTurn(
      turnId,
      session.id,
      agentId,
      engine,
      model,
      startedAt,
      bus,
      logger,
      parent?.turnId ?? null,
      depth,
    );
    turn.stepMode = request.stepMode ?? session.stepMode;
    turn.principal = session.principal;
    this.turns.set(turnId, turn);
    parent?.childTurnIds.add(turnId);
    bus.emit({
      type: "turn_start",
      sessionId: session.id,
      agentId,
      provider: engine.provider,
      model,
      startedAt,
    });
    logger.info({ provider: engine.provider, model, parentTurnId: parent?.turnId }, "turn started");
    if (settings.turnTimeoutMs > 0) {
      turn.deadlineTimer = setTimeout(() => this.reachDeadline(turn), settings.turnTimeoutMs);
    }
    turn.done = this.drive(turn).catch((error: unknown) => {
      logger.error({ err: error }, "turn driver failed");
      this.finishAborted(turn, "error");
    });
    return turn;
  }

  get(turnId: string): ActiveTurn | undefined {
    return this.turns.get(turnId);
  }

  activeCount(): number {
    return this.turns.size;
  }

  /** Running top-level turns owned by `principal` (null: the unauthenticated principal). */
  runningTurnsOf(principal: string | null): number {
    let count = 0;
    for (const turn of this.turns.values()) {
      if (turn.parentTurnId === null && turn.principal === principal) count++;
    }
    return count;
  }

  getActiveTurnDetails(): ActiveTurnDetails[] {
    const now = this.now();
    const zombies = this.zombies.list();
    return [...this.turns.values()].map((turn) =>
      describeActiveTurn(turn, {
        now,
        pause: this.steps.pauseOf(turn.turnId),
        toolCallCount: this.deps.store.getTurn(turn.turnId)?.toolCallCount ?? 0,
        zombies: zombies.filter((zombie) => zombie.turnId === turn.turnId),
      }),
    );
  }

  /** Tools still running after their call was closed, across all turns (ended ones included). */
  getZombies(): (Zombie & { elapsedMs: number })[] {
    const now = this.now();
    return this.zombies.list().map((zombie) => ({ ...zombie, elapsedMs: now - zombie.since }));
  }

  /** Aborts an active turn; false when no such turn is running (unknown or already ended). */
  abortTurn(turnId: string, reason: AbortReason): boolean {
    const turn = this.turns.get(turnId);
    if (!turn || turn.finished) return false;
    this.finishAborted(turn, reason);
    return true;
  }

  /**
   * Cancels one call of an active turn (`[CANCELLED] Tool cancelled by user.`); the turn goes on.
   * False when the turn is not running or the call is not part of its running batch.
   */
  abortTool(turnId: string, toolId: string): boolean {
    const turn = this.turns.get(turnId);
    const controller = turn?.callControllers.get(toolId);
    if (!turn || turn.finished || !controller || controller.signal.aborted) return false;
    // a call that already has its result is not cancellable
    if (this.deps.store.openCalls(turnId).every((call) => call.callId !== toolId)) return false;
    const toolName = turn.runningTools.get(toolId)?.toolName ?? "?";
    this.record(turn, { kind: "tool_cancelled", callId: toolId, toolName, by: "user" });
    controller.abort(new TurnAbortedError("user"));
    return true;
  }

  /** Continues a paused turn; false when the turn is not running or not waiting in that pause. */
  continueTurn(turnId: string, pauseId: string): boolean {
    const turn = this.turns.get(turnId);
    return turn !== undefined && !turn.finished && this.steps.continue(turnId, pauseId);
  }

  /** The session's step-mode switch: applies to its running turn at once (off releases every wait). */
  setSessionStepMode(sessionId: string, enabled: boolean): void {
    this.deps.store.setSessionStepMode(sessionId, enabled);
    for (const turn of this.turns.values()) {
      if (turn.sessionId === sessionId) turn.stepMode = enabled;
    }
    if (!enabled) this.steps.releaseSession(sessionId);
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
    // A child turn is followed through its parent's tool call, not by a client of its own.
    if (turn.finished || onDisconnect !== "abort" || turn.parentTurnId !== null) return;
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

  /** The turn's deadline: close what is open with timeout results, stop its work, let it answer. */
  private reachDeadline(turn: ActiveTurn): void {
    turn.deadlineTimer = undefined;
    if (turn.finished) return;
    const { turnTimeoutMs, finalAnswerTimeoutMs } = this.deps.settings;
    const closed = this.deps.store.closeOpenCalls(turn.turnId, (call) => ({
      status: "timeout",
      result: turnDeadlineResult(call.name, turnTimeoutMs),
      isError: true,
    }));
    this.emitClosedResults(turn, closed, "timeout");
    this.record(turn, { kind: "turn_deadline", timeoutMs: turnTimeoutMs, closedCalls: closed.length });
    turn.logger.info({ timeoutMs: turnTimeoutMs, closedCalls: closed.length }, "turn deadline reached");
    turn.workController.abort(new TurnAbortedError("timeout"));
    // a step pause must not eat the time left for the final answer
    this.steps.releaseTurn(turn.turnId);
    // The final inference is bounded too: a model that cannot answer in time ends the turn.
    turn.deadlineTimer = setTimeout(() => this.abortTurn(turn.turnId, "timeout"), finalAnswerTimeoutMs);
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
        workSignal: turn.workController.signal,
        emit,
        runningTools: turn.runningTools,
        callControllers: turn.callControllers,
        depth: turn.depth,
        allowedRoots: this.deps.settings.allowedRoots,
        workspace: this.deps.settings.workspace,
        services: turnServices(this, turn, {
          store: this.deps.store,
          now: this.now,
          openCircuits: this.deps.openCircuits ?? (() => []),
          maxDepth: this.deps.settings.maxDepth,
        }),
        requestAbort: (reason) => this.abortTurn(turn.turnId, reason),
        pause: async (phase, summary) => {
          const outcome = await this.steps.pause(
            {
              turnId: turn.turnId,
              sessionId: turn.sessionId,
              signal: turn.signal,
              stepMode: () => turn.stepMode,
              emit,
            },
            phase,
            summary,
          );
          if (outcome === "timed_out" && this.steps.onTimeout === "abort")
            this.abortTurn(turn.turnId, "timeout");
          return outcome;
        },
        onZombie: (call, state) => {
          if (state === "started") {
            this.zombies.add({
              turnId: turn.turnId,
              toolId: call.callId,
              toolName: call.name,
              since: this.now(),
            });
          } else {
            this.zombies.remove(call.callId);
          }
        },
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
    this.persist(turn, () =>
      this.deps.store.endTurn(turn.turnId, { status: "completed", stopReason: result.stopReason }),
    );
    const durationMs = this.now() - turn.startedAt;
    turn.bus.emit({
      type: "turn_complete",
      stopReason: result.stopReason,
      durationMs,
      toolCallCount: result.toolCallCount,
    });
    turn.logger.info(
      { stopReason: result.stopReason, toolCallCount: result.toolCallCount },
      "turn completed",
    );
    this.deps.store.flush();
    this.release(turn, `completed:${result.stopReason}`);
    // Nothing should still run, but a finished turn must leave no work behind.
    this.abortSignals(turn, "user");
  }

  private finishAborted(turn: ActiveTurn, reason: AbortReason): void {
    if (!this.begin(turn)) return;
    const closed =
      this.persist(turn, () =>
        this.deps.store.endTurn(turn.turnId, { status: "aborted", abortReason: reason }, () => ({
          status: "cancelled",
          result: cancelledResult(reason),
          isError: true,
        })),
      ) ?? [];
    this.emitClosedResults(turn, closed, "cancelled");
    turn.bus.emit({ type: "turn_abort", reason });
    this.record(turn, { kind: "abort", reason, closedCalls: closed.length });
    // The closing results and turn_abort are committed and sent before the signals reach the tools.
    this.deps.store.flush();
    turn.logger.info({ reason, closedCalls: closed.length }, "turn aborted");
    this.release(turn, `aborted:${reason}`);
    // a child ends for its parent's reason when that reason concerns every turn (shutdown)
    const childReason = reason === "shutdown" ? "shutdown" : "parent";
    for (const childTurnId of turn.childTurnIds) this.abortTurn(childTurnId, childReason);
    this.abortSignals(turn, reason);
  }

  private emitClosedResults(
    turn: ActiveTurn,
    closed: ToolResponseBlock[],
    status: "cancelled" | "timeout",
  ): void {
    const now = this.now();
    for (const response of closed) {
      const running = turn.runningTools.get(response.callId);
      turn.runningTools.delete(response.callId);
      turn.bus.emit({
        type: "tool_result",
        toolId: response.callId,
        toolName: response.name,
        result: response.result.slice(0, EVENT_RESULT_MAX_CHARS),
        isError: true,
        status,
        durationMs: running ? now - running.startedAt : 0,
        attempts: 0,
      });
    }
  }

  /**
   * Runs a store write of a turn that is ending; a failure is logged and the turn still ends in memory
   * (released, signals aborted, terminal event delivered), so one bad write never strands a turn.
   * A turn whose end was not recorded is closed as interrupted at the next start-up.
   */
  private persist<T>(turn: ActiveTurn, write: () => T): T | undefined {
    try {
      return write();
    } catch (error) {
      turn.logger.error({ err: error }, "could not record the end of the turn");
      return undefined;
    }
  }

  /** Claims the right to end the turn; false when it has already ended. */
  private begin(turn: ActiveTurn): boolean {
    if (turn.finished) return false;
    turn.finished = true;
    return true;
  }

  private release(turn: ActiveTurn, outcome: string): void {
    clearTimeout(turn.disconnectTimer);
    clearTimeout(turn.deadlineTimer);
    turn.runningTools.clear();
    this.turns.delete(turn.turnId);
    this.deps.onTurnEnded?.(outcome, this.now() - turn.startedAt);
  }

  private abortSignals(turn: ActiveTurn, reason: AbortReason): void {
    const error = new TurnAbortedError(reason);
    turn.workController.abort(error);
    turn.controller.abort(error);
  }

  private record(turn: ActiveTurn, decision: Decision): void {
    this.recorder.record(turn.turnId, decision);
  }
}

function abortReasonFromSignal(signal: AbortSignal): AbortReason {
  return signal.reason instanceof TurnAbortedError ? signal.reason.reason : "error";
}
