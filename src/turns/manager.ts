/**
 * The TurnManager: the registry of running turns. It starts turns (session, history, event bus, a
 * TurnRun each), drives the loop, and decides why a turn ends — completion, abort, error, disconnect,
 * shutdown, a parent's abort, its events cap. Every end goes through `endCompleted` or `endAborted`,
 * and the TurnRun lets exactly one of them through.
 *
 * An abort is finished synchronously: open calls get their `[CANCELLED] …` results, the turn is
 * marked aborted, `tool_result`s and `turn_abort` are committed and sent, and only then are the
 * signals aborted, so whatever the tools do afterwards can only produce discarded late results. The
 * turn's deadline is graceful instead: open calls are closed with timeout results and the loop gets
 * one final inference to answer with what it has.
 */
import type { Logger } from "pino";
import { ReinsError, TurnAbortedError, type AbortReason } from "../errors.js";
import type { EventBody, TurnEvent } from "../events.js";
import type { SessionRecord } from "../history/model.js";
import type { HistoryStore } from "../history/store.js";
import { NO_DECISIONS, type Decision, type DecisionRecorder } from "../observability/decision.js";
import type { ModelEngine } from "../providers/engine.js";
import { cancelledResult, turnDeadlineResult } from "../tools/results.js";
import { describeActiveTurn, type ActiveTurnDetails } from "./active-details.js";
import type { ApprovalPolicy } from "../agents/approval-policy.js";
import { ApprovalRegistry, type ApprovalDecision, type DecideOutcome } from "./approvals.js";
import { AgentRegistry, type ResolvedAgent } from "../agents/agent-registry.js";
import {
  AgentMismatchError,
  BlankMessageError,
  SessionBusyError,
  SessionNotFoundError,
  ShuttingDownError,
  StoreUnavailableError,
  UnknownProviderError,
} from "./errors.js";
import { TurnEventBus } from "./event-bus.js";
import type { LoopResult, ToolCallingLoop } from "./loop.js";
import { StepController, type PausedTurn, type PausePhase } from "./step-control.js";
import { publishToolResult, type PublishedOutcome, type ToolResultObservers } from "./tool-results.js";
import { turnServices } from "./turn-services.js";
import { TurnRun, type TurnRunOutcome } from "./turn-run.js";
import { ZombieRegistry, type Zombie } from "../tools/zombie-registry.js";

export type StartTurnRequest = {
  message: string;
  sessionId?: string;
  /** With `sessionId`: a session with that id is created (owned by `principal`) when none exists. */
  createSession?: boolean;
  agentId?: string;
  provider?: string;
  model?: string;
  /** Pause at phase boundaries (docs/semantics.md#step-control); defaults to the session's switch. */
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
  /** Child turns one root turn may start, in all and at once. */
  maxChildTurns?: number;
  maxConcurrentChildTurns?: number;
  /** Events one turn may write; reaching it ends the turn (reason `limit`). 0 = no cap. */
  maxEventsPerTurn?: number;
  /** Step mode: how long a pause waits, and whether it then continues or aborts the turn. */
  stepPauseTimeoutMs: number;
  stepOnTimeout: "continue" | "abort";
  /** How long a call that needs approval waits for a decision before it is rejected (default 600 000). */
  approvalTimeoutMs?: number;
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
  /** Told about the results of calls an abort or a deadline closed (metrics), like the loop's. */
  toolResults?: ToolResultObservers;
  /**
   * The deployment's agents (docs/semantics.md#agents); none: the built-in agent, every tool, no
   * instructions.
   */
  agents?: AgentRegistry;
  /** The approval policy of an agent (docs/semantics.md#approval); none: no call waits for approval. */
  approvalPolicy?: (agentId: string) => ApprovalPolicy;
  /** The tool runner's zombies (docs/semantics.md#cancellation); none: none are listed. */
  zombies?: ZombieRegistry;
};

const DEFAULT_MAX_CHILD_TURNS = 16;
const DEFAULT_MAX_CONCURRENT_CHILD_TURNS = 4;
const DEFAULT_APPROVAL_TIMEOUT_MS = 600_000;

export class TurnManager {
  /** The tool runner's zombies, listed with the turns they came from. */
  private readonly zombies: ZombieRegistry;
  readonly steps: StepController;
  /** The agents turns run as; a session keeps the agent that created it. */
  readonly agents: AgentRegistry;
  /** Calls waiting for a person's approval, across turns. */
  readonly approvals: ApprovalRegistry;
  private readonly turns = new Map<string, TurnRun>();
  /** Set by `shutdown`: no turn starts any more. */
  private shuttingDown = false;
  private readonly now: () => number;
  private readonly recorder: DecisionRecorder;

  constructor(private readonly deps: TurnManagerDeps) {
    this.now = deps.now ?? Date.now;
    this.recorder = deps.recorder ?? NO_DECISIONS;
    this.zombies = deps.zombies ?? new ZombieRegistry();
    this.agents =
      deps.agents ??
      new AgentRegistry({}, deps.settings.defaultAgentId, {
        toolNames: () => [],
        defaultProvider: deps.settings.defaultProvider,
        defaultModelOf: (provider) => deps.engines.get(provider)?.defaultModel,
        toolOverrides: {},
      });
    let pauseCounter = 0;
    this.steps = new StepController(
      { pauseTimeoutMs: deps.settings.stepPauseTimeoutMs, onTimeout: deps.settings.stepOnTimeout },
      { now: this.now, generateId: () => `pause_${++pauseCounter}` },
    );
    this.approvals = new ApprovalRegistry(
      { timeoutMs: deps.settings.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS },
      { now: this.now },
    );
  }

  /** Starts a turn and returns it once `turn_start` is queued; the loop runs on in the background. */
  startTurn(request: StartTurnRequest, parent?: TurnRun): TurnRun {
    if (this.shuttingDown) throw new ShuttingDownError();
    if (!/\S/.test(request.message)) throw new BlankMessageError();
    const { store, settings } = this.deps;
    // a turn the store cannot keep would be lost, and a session made now never stored
    this.requireWritableStore();
    let session = request.sessionId === undefined ? undefined : store.getSession(request.sessionId);
    if (request.sessionId !== undefined && !session && !request.createSession) {
      throw new SessionNotFoundError(request.sessionId);
    }
    const agent = this.agentOf(request, session);
    // the turn's own provider wins, then its agent's, then its parent's, then the default
    const providerName =
      request.provider ?? agent.provider ?? parent?.engine.provider ?? settings.defaultProvider;
    const engine = this.deps.engines.get(providerName);
    if (!engine) throw new UnknownProviderError(providerName, [...this.deps.engines.keys()]);

    const busy = session && this.runningTurnOf(session.id);
    if (session && busy) throw new SessionBusyError(session.id, busy.turnId);
    session ??= store.createSession(
      request.sessionId ?? this.deps.generateId("ses"),
      agent.id,
      request.principal ?? parent?.principal ?? null,
    );

    const agentId = agent.id;
    const model =
      request.model ??
      this.agents.modelOf(agent, engine.provider) ??
      (parent?.engine === engine ? parent.model : engine.defaultModel);
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
      parentTurnId: parent?.turnId,
      depth: parent ? parent.depth + 1 : 0,
    });
    const logger = this.deps.logger.child({ turnId, sessionId: session.id });
    const maxEvents = settings.maxEventsPerTurn ?? 0;
    const bus = new TurnEventBus(
      turnId,
      store,
      this.now,
      0,
      (error, event) =>
        logger.error({ err: error, seq: event.seq, type: event.type }, "could not persist event"),
      maxEvents > 0 ? { maxEvents, onReached: () => this.reachEventLimit(turnId, maxEvents) } : undefined,
    );
    const run = new TurnRun({
      turnId,
      sessionId: session.id,
      agentId,
      engine,
      model,
      startedAt,
      bus,
      logger,
      principal: session.principal,
      stepMode: request.stepMode ?? session.stepMode,
      parent,
      childBudget: {
        maxTotal: settings.maxChildTurns ?? DEFAULT_MAX_CHILD_TURNS,
        maxConcurrent: settings.maxConcurrentChildTurns ?? DEFAULT_MAX_CONCURRENT_CHILD_TURNS,
      },
    });
    this.turns.set(turnId, run);
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
    const turnTimeoutMs = this.turnTimeoutOf(run);
    if (turnTimeoutMs > 0) run.setDeadline(turnTimeoutMs, () => this.reachDeadline(run));
    this.drive(run).catch((error: unknown) => {
      logger.error({ err: error }, "turn driver failed");
      this.endAborted(run, "error");
      run.loopReturned();
    });
    return run;
  }

  get(turnId: string): TurnRun | undefined {
    return this.turns.get(turnId);
  }

  activeCount(): number {
    return this.turns.size;
  }

  /** Running top-level turns owned by `principal` (null: the unauthenticated principal). */
  runningTurnsOf(principal: string | null): number {
    let count = 0;
    for (const run of this.turns.values()) {
      if (run.parentTurnId === null && run.principal === principal) count++;
    }
    return count;
  }

  getActiveTurnDetails(): ActiveTurnDetails[] {
    const now = this.now();
    const zombies = this.zombies.list();
    return [...this.turns.values()].map((run) =>
      describeActiveTurn(run, {
        now,
        pause: this.steps.pauseOf(run.turnId),
        approvals: this.approvals.pendingOf(run.turnId),
        toolCallCount: this.deps.store.getTurn(run.turnId)?.toolCallCount ?? 0,
        zombies: zombies.filter((zombie) => zombie.turnId === run.turnId),
      }),
    );
  }

  /** Tools still running after their call was closed, across all turns (ended ones included). */
  getZombies(): (Zombie & { elapsedMs: number })[] {
    const now = this.now();
    return this.zombies.list().map((zombie) => ({ ...zombie, elapsedMs: now - zombie.since }));
  }

  /** Aborts a running turn; false when no such turn is running (unknown or already ended). */
  abortTurn(turnId: string, reason: AbortReason): boolean {
    const run = this.turns.get(turnId);
    if (!run || run.finished) return false;
    this.endAborted(run, reason);
    return true;
  }

  /**
   * Cancels one call of a running turn (`[CANCELLED] Tool cancelled by user.`); the turn goes on.
   * False when the turn is not running or the call is not part of its batch (the running one, or the
   * one a step-mode pause holds back).
   */
  abortTool(turnId: string, toolId: string): boolean {
    const run = this.turns.get(turnId);
    if (!run || run.finished || !run.cancellation.isOpen(toolId)) return false;
    // a call that already has its result is not cancellable
    const call = this.deps.store.openCalls(turnId).find((open) => open.callId === toolId);
    if (!call) return false;
    this.record(run, { kind: "tool_cancelled", callId: toolId, toolName: call.name, by: "user" });
    return run.cancellation.cancel(toolId, new TurnAbortedError("user"));
  }

  /**
   * A person's decision on a call of a running turn that waits for approval; `not_waiting` when the
   * turn is not running or that call is not waiting.
   */
  decideApproval(turnId: string, toolId: string, decision: ApprovalDecision): DecideOutcome {
    const run = this.turns.get(turnId);
    if (!run || run.finished) return { accepted: false, problem: "not_waiting" };
    // a call waiting in a delegated turn under this one is decided from here too (its stream shows it)
    const waitingIn = this.approvals.turnOf(toolId);
    const decidedIn = waitingIn !== undefined && this.runsUnder(waitingIn, turnId) ? waitingIn : turnId;
    return this.approvals.decide(decidedIn, toolId, decision);
  }

  /** Whether running turn `turnId` is a child, grandchild… of `ancestorId`. */
  private runsUnder(turnId: string, ancestorId: string): boolean {
    for (let run = this.turns.get(turnId); run?.parentTurnId; run = this.turns.get(run.parentTurnId)) {
      if (run.parentTurnId === ancestorId) return true;
    }
    return false;
  }

  /** Continues a paused turn; false when the turn is not running or not waiting in that pause. */
  continueTurn(turnId: string, pauseId: string): boolean {
    const run = this.turns.get(turnId);
    return run !== undefined && !run.finished && this.steps.continue(turnId, pauseId);
  }

  /**
   * The session's step-mode switch: applies to its running turn at once (off releases every wait), and
   * is committed before this returns, as a rename is.
   */
  setSessionStepMode(sessionId: string, enabled: boolean): void {
    this.requireWritableStore();
    this.deps.store.setSessionStepMode(sessionId, enabled);
    this.deps.store.flush();
    this.requireWritableStore();
    for (const run of this.turns.values()) {
      if (run.sessionId === sessionId) run.stepMode = enabled;
    }
    if (!enabled) this.steps.releaseSession(sessionId);
  }

  /**
   * Shutdown: no turn starts from now on (`ShuttingDownError`) — a request already on its way when the
   * server stopped accepting connections still reaches a route — and every running turn, child turns
   * included, is aborted with reason `shutdown` and waited for (bounded).
   */
  async shutdown(waitMs: number): Promise<void> {
    this.shuttingDown = true;
    await this.abortAll("shutdown", waitMs);
  }

  /** Aborts every running turn and waits (bounded) for their loops to return. */
  async abortAll(reason: AbortReason, waitMs = 5_000): Promise<void> {
    const runs = [...this.turns.values()];
    for (const run of runs) this.abortTurn(run.turnId, reason);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(runs.map((run) => run.done)),
      new Promise((resolve) => (timer = setTimeout(resolve, waitMs))),
    ]);
    clearTimeout(timer);
  }

  /**
   * Follows a turn's events from `afterSeq`: returns the stored events after it and subscribes to
   * the live ones, in one synchronous step so nothing falls between. The disposer also counts the
   * subscriber out, which may start the disconnect grace period.
   */
  follow(run: TurnRun, afterSeq: number, listener: (event: TurnEvent) => void) {
    // Events not committed yet reach the listener live, once committed; the store is read only for
    // committed ones the follower has not had (a stream opened with its turn reads nothing) — or when
    // the bus is closed, since then nothing more comes live.
    const replay =
      run.bus.committedSeq > afterSeq || run.bus.isClosed
        ? this.deps.store.listEvents(run.turnId, afterSeq)
        : [];
    const unsubscribe = run.bus.subscribe(listener);
    run.addSubscriber();
    let disposed = false;
    const dispose = () => {
      if (disposed) return;
      disposed = true;
      unsubscribe();
      if (run.removeSubscriber() === 0) this.onLastSubscriberGone(run);
    };
    return { replay, dispose };
  }

  /**
   * The agent a turn runs as: an existing session's own (a turn naming another is refused), else the
   * one the turn names, else the default agent. An unknown id is refused before the session check.
   */
  private agentOf(request: StartTurnRequest, session: SessionRecord | undefined): ResolvedAgent {
    const named = request.agentId === undefined ? undefined : this.agents.resolve(request.agentId);
    if (!session) return named ?? this.agents.resolve(undefined);
    if (named && named.id !== session.agentId) {
      throw new AgentMismatchError(session.id, session.agentId, named.id);
    }
    return named ?? this.agents.resolve(session.agentId);
  }

  /** The turn's time limit: its agent's `limits.turnTimeoutMs`, else `turns.timeoutMs` (0 = none). */
  private turnTimeoutOf(run: TurnRun): number {
    return this.agents.get(run.agentId)?.limits.turnTimeoutMs ?? this.deps.settings.turnTimeoutMs;
  }

  /**
   * Creates an empty session owned by `principal` (POST /api/sessions); its agent defaults as a turn's.
   * It is committed before this returns: the client is told the session exists only once a crash
   * cannot take it back (a turn's own new session commits with its `turn_start`, before that is sent).
   */
  createSession(principal: string | null, agentId?: string, title?: string) {
    const { store } = this.deps;
    this.requireWritableStore();
    const session = store.createSession(
      this.deps.generateId("ses"),
      // an unknown agent is refused (400 agent_not_found), as on a turn
      this.agents.resolve(agentId).id,
      principal,
      title,
    );
    store.flush();
    // its own commit may be the one the database refused: then it is not stored yet
    this.requireWritableStore();
    return session;
  }

  /**
   * Throws `StoreUnavailableError` (503) while the store keeps writes the database refused (a full
   * disk, an I/O error): what is done now could not be stored, so an answer that it was would be untrue.
   */
  requireWritableStore(): void {
    if (!this.deps.store.acceptsWrites()) throw new StoreUnavailableError();
  }

  /** Whether a turn of the session is running now (a running session cannot be deleted). */
  isSessionRunning(sessionId: string): boolean {
    return this.runningTurnOf(sessionId) !== undefined;
  }

  /** The id of the session's running turn, if one runs now. */
  runningTurnIdOf(sessionId: string): string | undefined {
    return this.runningTurnOf(sessionId)?.turnId;
  }

  private runningTurnOf(sessionId: string): TurnRun | undefined {
    for (const run of this.turns.values()) if (run.sessionId === sessionId) return run;
    return undefined;
  }

  private onLastSubscriberGone(run: TurnRun): void {
    const { onDisconnect, disconnectGraceMs } = this.deps.settings;
    // A child turn is followed through its parent's tool call, not by a client of its own.
    if (run.finished || onDisconnect !== "abort" || run.parentTurnId !== null) return;
    if (disconnectGraceMs === 0) {
      run.logger.info("client disconnected; aborting");
      this.abortTurn(run.turnId, "disconnect");
      return;
    }
    run.armDisconnect(disconnectGraceMs, () => {
      run.logger.info({ graceMs: disconnectGraceMs }, "no client reattached; aborting");
      this.abortTurn(run.turnId, "disconnect");
    });
  }

  /** The turn's deadline: close what is open with timeout results, stop its work, let it answer. */
  private reachDeadline(run: TurnRun): void {
    const { finalAnswerTimeoutMs } = this.deps.settings;
    const turnTimeoutMs = this.turnTimeoutOf(run);
    const closed = this.closeOpenCalls(run, (name) => ({
      status: "timeout",
      result: turnDeadlineResult(name, turnTimeoutMs),
      isError: true,
    }));
    this.record(run, { kind: "turn_deadline", timeoutMs: turnTimeoutMs, closedCalls: closed });
    run.logger.info({ timeoutMs: turnTimeoutMs, closedCalls: closed }, "turn deadline reached");
    run.stopWork();
    // a step pause must not eat the time left for the final answer
    this.steps.releaseTurn(run.turnId);
    // The final inference is bounded too: a model that cannot answer in time ends the turn.
    run.setDeadline(finalAnswerTimeoutMs, () => this.abortTurn(run.turnId, "timeout"));
  }

  /** The turn wrote as many events as it may: it ends now (its closing events still go out). */
  private reachEventLimit(turnId: string, maxEvents: number): void {
    const run = this.turns.get(turnId);
    if (!run || run.finished) return;
    run.logger.warn({ maxEvents }, "turn reached its events cap; aborting");
    // Not from inside the emit that hit the cap: the loop is mid-step; end the turn right after it.
    queueMicrotask(() => this.abortTurn(turnId, "limit"));
  }

  private async drive(run: TurnRun): Promise<void> {
    let result: LoopResult | undefined;
    try {
      result = await this.deps.loop.run(this.loopTurn(run));
    } catch (error) {
      if (!run.finished) {
        // Engines report their own failures as ReinsErrors (model_error and its kinds); anything
        // else is the server's own fault and is never blamed on the model.
        const failure =
          error instanceof ReinsError
            ? error
            : new ReinsError("internal_error", "The server failed while running the turn; see its log.");
        run.logger.error({ err: error }, "turn failed");
        run.bus.emit({ type: "error", code: failure.code, message: failure.message });
        this.endAborted(run, "error");
      }
    }
    if (result && result.stopReason !== "aborted") this.endCompleted(run, result);
    if (!run.finished) this.endAborted(run, abortReasonFromSignal(run.signal));
    run.loopReturned();
  }

  /** What the loop is given of a turn. */
  private loopTurn(run: TurnRun) {
    const emit = (body: EventBody) => void run.bus.emit(body);
    const { settings } = this.deps;
    // a manager built without agents (tests, embedders) offers every tool, as before agents existed
    const agent = this.deps.agents ? this.turnAgent(run) : undefined;
    const paused: PausedTurn = {
      turnId: run.turnId,
      sessionId: run.sessionId,
      get signal() {
        return run.signal;
      },
      stepMode: () => run.stepMode,
      emit,
    };
    return {
      turnId: run.turnId,
      sessionId: run.sessionId,
      agentId: run.agentId,
      engine: run.engine,
      model: run.model,
      get signal() {
        return run.signal;
      },
      get aborted() {
        return run.aborted;
      },
      workSignal: run.workSignal,
      emit,
      runningTools: run.runningCalls,
      cancellation: run.cancellation,
      depth: run.depth,
      allowedRoots: settings.allowedRoots,
      workspace: settings.workspace,
      services: turnServices(this, run, {
        store: this.deps.store,
        now: this.now,
        openCircuits: this.deps.openCircuits ?? (() => []),
        maxDepth: settings.maxDepth,
      }),
      requestAbort: (reason: AbortReason) => this.abortTurn(run.turnId, reason),
      agent,
      approval: this.deps.approvalPolicy
        ? { policy: this.approvalPolicyOf(run, agent), registry: this.approvals }
        : undefined,
      pause: async (phase: PausePhase, summarize: () => unknown) => {
        const outcome = await this.steps.pause(paused, phase, summarize);
        if (outcome === "timed_out" && this.steps.onTimeout === "abort")
          this.abortTurn(run.turnId, "timeout");
        return outcome;
      },
      now: this.now,
    };
  }

  /**
   * The turn's approval policy: a call the agent may not make is never put to a person (it gets the
   * unknown-tool result without waiting).
   */
  private approvalPolicyOf(run: TurnRun, agent: ReturnType<TurnManager["turnAgent"]> | undefined) {
    const policy = (this.deps.approvalPolicy as NonNullable<TurnManagerDeps["approvalPolicy"]>)(run.agentId);
    if (!agent) return policy;
    return (toolName: string) => (agent.tools.allowsTool(toolName) ? policy(toolName) : "never");
  }

  /** What the loop reads of the turn's agent: its instructions, step limit and tool rules. */
  private turnAgent(run: TurnRun) {
    const agent = this.agents.resolve(run.agentId);
    return {
      instructions: agent.instructions,
      maxSteps: agent.limits.maxSteps,
      tools: this.agents.toolPolicy(agent, run.engine.provider),
    };
  }

  private endCompleted(run: TurnRun, result: LoopResult): void {
    if (!run.claimEnd()) return;
    run.bus.allowClosingEvents();
    this.persist(run, () =>
      this.deps.store.endTurn(run.turnId, {
        status: "completed",
        stopReason: result.stopReason,
        usage: result.usage,
      }),
    );
    const durationMs = this.now() - run.startedAt;
    run.bus.emit({
      type: "turn_complete",
      stopReason: result.stopReason,
      durationMs,
      toolCallCount: result.toolCallCount,
      usage: result.usage,
    });
    run.logger.info({ stopReason: result.stopReason, toolCallCount: result.toolCallCount }, "turn completed");
    this.release(run, {
      status: "completed",
      stopReason: result.stopReason,
      toolCallCount: result.toolCallCount,
      durationMs,
    });
    // Nothing should still run, but a finished turn must leave no work behind.
    run.abortSignals("completed");
  }

  private endAborted(run: TurnRun, reason: AbortReason): void {
    if (!run.claimEnd()) return;
    run.bus.allowClosingEvents();
    // Children end first, for their parent's reason when that reason concerns every turn (shutdown):
    // what their ending passes up (the result of a call that waited for a person) still reaches this
    // turn's stream, before its own turn_abort.
    const childReason = reason === "shutdown" ? "shutdown" : "parent";
    for (const childTurnId of run.childTurnIds) this.abortTurn(childTurnId, childReason);
    const closed =
      this.persist(run, () => {
        const count = this.closeOpenCalls(run, () => ({
          status: "cancelled",
          result: cancelledResult(reason),
          isError: true,
        }));
        this.deps.store.endTurn(run.turnId, { status: "aborted", abortReason: reason });
        return count;
      }) ?? 0;
    run.bus.emit({ type: "turn_abort", reason });
    this.record(run, { kind: "abort", reason, closedCalls: closed });
    // The closing results and turn_abort are committed and sent before the signals reach the tools.
    this.deps.store.flush();
    run.logger.info({ reason, closedCalls: closed }, "turn aborted");
    this.release(run, { status: "aborted", reason, durationMs: this.now() - run.startedAt });
    run.abortSignals(reason);
  }

  /** Gives every open call of the turn the result `make` returns for it; returns how many. */
  private closeOpenCalls(run: TurnRun, make: (toolName: string) => PublishedOutcome): number {
    let closed = 0;
    const target = {
      store: this.deps.store,
      sessionId: run.sessionId,
      turnId: run.turnId,
      runningCalls: run.runningCalls,
      emit: (body: EventBody) => void run.bus.emit(body),
      now: this.now,
    };
    for (const call of this.deps.store.openCalls(run.turnId)) {
      if (publishToolResult(target, this.deps.toolResults ?? {}, call, make(call.name))) closed++;
    }
    return closed;
  }

  /**
   * Runs a store write of a turn that is ending; a failure is logged and the turn still ends in memory
   * (released, signals aborted, terminal event delivered), so one bad write never strands a turn.
   * A turn whose end was not recorded is closed as interrupted at the next start-up.
   */
  private persist<T>(run: TurnRun, write: () => T): T | undefined {
    try {
      return write();
    } catch (error) {
      run.logger.error({ err: error }, "could not record the end of the turn");
      return undefined;
    }
  }

  private release(run: TurnRun, outcome: TurnRunOutcome): void {
    run.release(outcome);
    this.turns.delete(run.turnId);
    const label =
      outcome.status === "completed" ? `completed:${outcome.stopReason}` : `aborted:${outcome.reason}`;
    this.deps.onTurnEnded?.(label, outcome.durationMs);
  }

  private record(run: TurnRun, decision: Decision): void {
    this.recorder.record(run.turnId, decision);
  }
}

function abortReasonFromSignal(signal: AbortSignal): AbortReason {
  return signal.reason instanceof TurnAbortedError ? signal.reason.reason : "error";
}
