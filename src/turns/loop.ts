/**
 * The tool-calling loop: ask the model, store its message, run the batch it requested, repeat until
 * it answers or `maxSteps` inferences have been made. Phase boundaries (`pre_inference`,
 * `post_inference`, `post_tools`) are exposed to a snapshot hook. The loop never ends a turn itself:
 * it returns why it stopped, and the TurnManager emits the terminal event.
 */
import type { EventBody } from "../events.js";
import type { TokenUsage } from "../history/model.js";
import type { HistoryStore } from "../history/store.js";
import type { ModelEngine, ModelStopReason } from "../providers/engine.js";
import type { ToolPolicy } from "../agents/tool-policy.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { CallCancellation } from "../tools/call-cancellation.js";
import type { ToolScheduler } from "../tools/scheduler.js";
import type { ToolCallHooks, ToolCallRequest, ToolOutcome, ToolServices } from "../tools/types.js";
import { NO_DECISIONS, type DecisionRecorder } from "../observability/decision.js";
import { ModelError, ReinsError, type AbortReason } from "../errors.js";
import { jsonDepthExceeds, MAX_JSON_DEPTH } from "../json-depth.js";
import { errorResult, loopWarning } from "../tools/results.js";
import { AssistantMessage } from "./assistant-message.js";
import { DEFAULT_COALESCE, DeltaCoalescer, type CoalesceSettings } from "./delta-coalescer.js";
import { publishToolResult, type ToolResultObservers, type ToolResultTarget } from "./tool-results.js";
import type { RunningCall } from "./turn-run.js";
import { approvalGate, type TurnApproval } from "./approval-gate.js";
import { DEFAULT_LOOP_DETECTOR, LoopDetector, type LoopDetectorSettings } from "./loop-detector.js";
import type { PauseOutcome, PausePhase } from "./step-control.js";
import { ProviderError } from "../providers/provider-error.js";
import {
  abortableDelay,
  decideRetry,
  DEFAULT_RETRY_POLICY,
  type RetryPolicy,
} from "../tools/resilience/retry-policy.js";

/** Where a refused input's reason is kept in place of the input (it is never stored or run). */
const REFUSED_INPUT_KEY = "_refusedInput";
const TOO_DEEP = `it nests deeper than ${MAX_JSON_DEPTH} levels`;

/** Characters of each result shown in an after_tools pause summary. */
const PAUSE_RESULT_PREVIEW_CHARS = 500;

export type LoopPhase = "pre_inference" | "post_inference" | "post_tools";

export type LoopSnapshot = {
  phase: LoopPhase;
  turnId: string;
  step: number;
  toolCallCount: number;
  /** Calls of the current batch (post_inference) or their outcomes (post_tools). */
  calls: readonly ToolCallRequest[];
  outcomes: readonly ToolOutcome[];
};

export type LoopOptions = {
  registry: ToolRegistry;
  scheduler: ToolScheduler;
  store: HistoryStore;
  maxSteps: number;
  generateCallId: () => string;
  /** Called synchronously at each phase boundary. */
  snapshot?: (snapshot: LoopSnapshot) => void;
  /** Told about every stored outcome (metrics) and every late result discarded (zombies). */
  toolResults?: ToolResultObservers;
  recorder?: DecisionRecorder;
  loopDetector?: LoopDetectorSettings;
  /** How text and thinking deltas are merged into events. */
  coalesce?: CoalesceSettings;
  /** Retries of transient model failures (429, 5xx, network) that happen before any output. */
  modelRetry?: RetryPolicy;
  random?: () => number;
};

/** The turn's agent (docs/semantics.md#agents) as the loop reads it. */
export type TurnAgent = {
  /** The provider's system prompt; never stored in the history. */
  instructions?: string;
  /** Replaces the loop's `maxSteps` for this turn. */
  maxSteps?: number;
  /** The tools offered and allowed to run (any other name runs as an unknown tool). */
  tools: ToolPolicy;
};

/** What one turn gives the loop. */
export type LoopTurn = {
  turnId: string;
  sessionId: string;
  agentId: string;
  engine: ModelEngine;
  model: string;
  /** The turn's signal: aborted when the turn is aborted or ends. */
  readonly signal: AbortSignal;
  /** Whether `signal` is aborted (read without making the signal). */
  readonly aborted: boolean;
  emit: (body: EventBody) => void;
  workspace?: string;
  allowedRoots?: readonly string[];
  depth?: number;
  /** Calls running now, for `/api/turns/active` and the results of an abort. */
  runningTools?: Map<string, RunningCall>;
  /**
   * The signal of the turn's work (inference, tools): aborted with the turn, and also when the turn's
   * deadline passes, after which the loop makes one final inference under `signal` alone.
   */
  workSignal?: AbortSignal;
  /** Where a single call of the running batch is cancelled. */
  cancellation?: CallCancellation;
  services?: ToolServices;
  /** Asks the owner of the turn to abort it (the loop never ends a turn itself). */
  requestAbort?: (reason: AbortReason) => void;
  /**
   * Step mode: pauses at a phase boundary until continued (resolves at once when step mode is off);
   * `summarize` makes what the pause shows, and is called only when the turn does pause.
   */
  pause?: (phase: PausePhase, summarize: () => unknown) => Promise<PauseOutcome>;
  /** Tool approval (docs/semantics.md#approval): the agent's policy and where calls wait for a decision. */
  approval?: TurnApproval;
  /** The turn's agent; none: no system prompt, every registered tool, the loop's `maxSteps`. */
  agent?: TurnAgent;
  now?: () => number;
};

/** Why the loop stopped; `timeout` means the turn's deadline passed and the final answer was given. */
export type LoopStopReason =
  "end_turn" | "max_steps" | "aborted" | "timeout" | Exclude<ModelStopReason, "tool_use" | "end_turn">;

/** `usage`: the tokens the provider reported, summed over the turn's inferences. */
export type LoopResult = {
  stopReason: LoopStopReason;
  toolCallCount: number;
  steps: number;
  usage: TokenUsage;
};

export class ToolCallingLoop {
  /** The tokens each turn's inferences reported so far (a finished turn's entry goes with it). */
  private readonly usage = new WeakMap<LoopTurn, TokenUsage>();

  constructor(private readonly options: LoopOptions) {}

  private usageOf(turn: LoopTurn): TokenUsage {
    let usage = this.usage.get(turn);
    if (!usage) this.usage.set(turn, (usage = { inputTokens: 0, outputTokens: 0 }));
    return usage;
  }

  async run(turn: LoopTurn): Promise<LoopResult> {
    const { store } = this.options;
    const maxSteps = turn.agent?.maxSteps ?? this.options.maxSteps;
    const work = turn.workSignal ?? turn.signal;
    const detector = new LoopDetector(this.options.loopDetector ?? DEFAULT_LOOP_DETECTOR);
    let toolCallCount = 0;
    const result = (stopReason: LoopStopReason, steps: number): LoopResult => ({
      stopReason,
      toolCallCount,
      steps,
      usage: { ...this.usageOf(turn) },
    });

    for (let step = 0; step < maxSteps; step++) {
      this.snap(turn, "pre_inference", step, toolCallCount, [], []);
      if (turn.aborted) return result("aborted", step);
      if (work.aborted) return result(await this.finalAnswer(turn), step + 1);

      const inference = await this.infer(turn, work, "auto");
      if (turn.aborted) return result("aborted", step + 1);
      if (work.aborted) return result(await this.finalAnswer(turn), step + 2);
      if (inference.blocks.length > 0) store.appendAssistant(turn.sessionId, turn.turnId, inference.blocks);
      const requested = inference.calls.map(({ callId, name, input }) => ({ callId, name, input }));
      toolCallCount += requested.length;
      this.snap(turn, "post_inference", step, toolCallCount, requested, []);
      if (requested.length === 0) {
        const stopReason = inference.stopReason === "tool_use" ? "end_turn" : inference.stopReason;
        return result(stopReason, step + 1);
      }
      const calls = this.refuseInvalid(turn, requested);
      if (calls.length === 0) continue;

      const warnings = this.detectLoops(turn, detector, calls);
      if (warnings === "stop") return result("aborted", step + 1);
      const callIds = calls.map((call) => call.callId);
      // cancellable from here: a person stepping through may cancel a call before its batch runs
      turn.cancellation?.openCalls(callIds);
      await turn.pause?.("after_inference", () => ({
        calls: calls.map((call) => ({ toolId: call.callId, toolName: call.name, input: call.input })),
      }));
      if (turn.aborted) {
        turn.cancellation?.closeCalls(callIds);
        return result("aborted", step + 1);
      }
      const edits = new Map<string, Record<string, unknown>>();
      const gate = turn.approval
        ? approvalGate({
            turnId: turn.turnId,
            approval: turn.approval,
            tools: this.options.registry,
            emit: turn.emit,
            edits,
          })
        : undefined;
      // refused calls already have their results; the batch is what may run
      const outcomes = await this.options.scheduler
        .runBatch(
          calls,
          {
            turnId: turn.turnId,
            sessionId: turn.sessionId,
            agentId: turn.agentId,
            workspace: turn.workspace,
            allowedRoots: turn.allowedRoots ?? [],
            depth: turn.depth ?? 0,
            signal: work,
            services: turn.services,
            cancellation: turn.cancellation,
            toolPolicy: turn.agent?.tools,
            approvalPolicy: turn.approval?.policy,
          },
          this.hooksFor(turn, warnings, edits),
          gate,
        )
        .finally(() => {
          turn.cancellation?.closeCalls(callIds);
        });
      this.snap(turn, "post_tools", step, toolCallCount, calls, outcomes);
      if (turn.aborted) return result("aborted", step + 1);
      if (!work.aborted) {
        await turn.pause?.("after_tools", () => ({
          results: calls.map((call, index) => ({
            toolId: call.callId,
            toolName: call.name,
            status: outcomes[index]?.status,
            result: outcomes[index]?.result.slice(0, PAUSE_RESULT_PREVIEW_CHARS),
          })),
        }));
        if (turn.aborted) return result("aborted", step + 1);
      }
      if (work.aborted) return result(await this.finalAnswer(turn), step + 2);
    }
    return result("max_steps", maxSteps);
  }

  /**
   * Calls whose input nested deeper than `MAX_JSON_DEPTH` levels (replaced by a note when they were
   * received, so nothing walks such a value) get an invalid-input result at once; returns the calls
   * that may run.
   */
  private refuseInvalid(turn: LoopTurn, calls: readonly ToolCallRequest[]): ToolCallRequest[] {
    const runnable: ToolCallRequest[] = [];
    for (const call of calls) {
      if (call.input[REFUSED_INPUT_KEY] !== TOO_DEEP) {
        runnable.push(call);
        continue;
      }
      const result = errorResult(call.name, `invalid input (${TOO_DEEP}).`);
      publishToolResult(this.resultTarget(turn), this.options.toolResults ?? {}, call, {
        status: "error",
        result,
        isError: true,
        durationMs: 0,
        attempts: 0,
      });
    }
    return runnable;
  }

  private resultTarget(turn: LoopTurn): ToolResultTarget {
    return {
      store: this.options.store,
      sessionId: turn.sessionId,
      turnId: turn.turnId,
      runningCalls: turn.runningTools ?? new Map(),
      emit: turn.emit,
      now: turn.now ?? Date.now,
    };
  }

  /**
   * Watches for repeated calls: a call seen `warnAt` times gets a warning appended to its result; one
   * seen `stopAt` times stops the turn. Returns the warnings by call id, or "stop".
   */
  private detectLoops(turn: LoopTurn, detector: LoopDetector, calls: readonly ToolCallRequest[]) {
    const recorder = this.options.recorder ?? NO_DECISIONS;
    const stopAt = (this.options.loopDetector ?? DEFAULT_LOOP_DETECTOR).stopAt;
    const warnings = new Map<string, string>();
    for (const call of calls) {
      const verdict = detector.observe(call.name, call.input);
      if (verdict.action === "none") continue;
      recorder.record(turn.turnId, {
        kind: "loop",
        callId: call.callId,
        toolName: call.name,
        repeats: verdict.repeats,
        action: verdict.action,
      });
      if (verdict.action === "stop") {
        turn.requestAbort?.("loop");
        return "stop" as const;
      }
      warnings.set(call.callId, loopWarning(verdict.repeats, stopAt));
    }
    return warnings;
  }

  /**
   * After the turn's deadline: one inference with tool choice `none`, to answer with what the model
   * has. Its tools are still offered: a history holding tool calls is refused by a provider when the
   * request defines no tools (Anthropic), so tool choice alone keeps the model from calling one.
   */
  private async finalAnswer(turn: LoopTurn): Promise<LoopStopReason> {
    if (turn.aborted) return "aborted";
    const inference = await this.infer(turn, turn.signal, "none");
    if (turn.aborted) return "aborted";
    const text = inference.blocks.filter((block) => block.kind !== "tool_call");
    if (text.length > 0) this.options.store.appendAssistant(turn.sessionId, turn.turnId, text);
    return "timeout";
  }

  /**
   * One inference, retried like a transient tool failure when the provider fails with 429/5xx or a
   * network error before it streamed anything; other failures end the turn (the caller reports them).
   */
  private async infer(turn: LoopTurn, signal: AbortSignal, toolChoice: "auto" | "none") {
    const policy = this.options.modelRetry ?? DEFAULT_RETRY_POLICY;
    const recorder = this.options.recorder ?? NO_DECISIONS;
    const startedAt = (turn.now ?? Date.now)();
    for (let attempts = 1; ; attempts++) {
      const progress = { produced: false };
      try {
        return await this.streamInference(turn, signal, toolChoice, progress);
      } catch (error) {
        if (!(error instanceof ProviderError)) throw error;
        const decision =
          error.classification === "transient" && !progress.produced
            ? decideRetry(policy, attempts, (turn.now ?? Date.now)() - startedAt, this.options.random)
            : undefined;
        if (!decision?.retry) {
          recorder.record(turn.turnId, {
            kind: "model_error",
            provider: error.provider,
            status: error.status ?? null,
            classification: error.classification,
            error: error.providerMessage,
          });
          throw error;
        }
        recorder.record(turn.turnId, {
          kind: "model_retry",
          provider: error.provider,
          attempt: attempts + 1,
          delayMs: decision.delayMs,
          error: error.message,
        });
        turn.emit({
          type: "model_retry",
          provider: error.provider,
          attempt: attempts + 1,
          delayMs: decision.delayMs,
          error: error.message,
        });
        if (!(await abortableDelay(decision.delayMs, [signal])))
          return { blocks: [], calls: [], stopReason: "end_turn" as const };
      }
    }
  }

  /** The tools the turn's agent may use, as registered now (tools may come and go). */
  private offeredTools(turn: LoopTurn) {
    const specs = this.options.registry.specs();
    const policy = turn.agent?.tools;
    return policy ? specs.filter((spec) => policy.allowsTool(spec.name)) : specs;
  }

  /** Streams one inference, emitting deltas; returns the assistant message as canonical blocks. */
  private async streamInference(
    turn: LoopTurn,
    signal: AbortSignal,
    toolChoice: "auto" | "none",
    progress: { produced: boolean },
  ) {
    const request = {
      turnId: turn.turnId,
      sessionId: turn.sessionId,
      model: turn.model,
      history: this.options.store.getHistory(turn.sessionId),
      tools: this.offeredTools(turn),
      toolChoice,
      ...(turn.agent?.instructions ? { system: turn.agent.instructions } : {}),
    };
    const message = new AssistantMessage({ provider: turn.engine.provider, model: turn.model });
    let stopReason: ModelStopReason = "end_turn";
    const deltas = new DeltaCoalescer(turn.emit, this.options.coalesce ?? DEFAULT_COALESCE);
    try {
      for await (const event of turn.engine.stream(request, signal)) {
        if (signal.aborted) break;
        progress.produced = true;
        switch (event.type) {
          case "text_delta":
            message.addText(event.text);
            deltas.push("text_delta", event.text);
            break;
          case "thinking_delta":
            message.addThinking(event.text);
            deltas.push("thinking_delta", event.text);
            break;
          case "thinking_signature":
            message.sign(event.signature);
            break;
          case "thinking_redacted":
            // no event: the block has no text to show
            message.addRedacted(event.data);
            break;
          case "tool_call":
            message.addCall({
              kind: "tool_call",
              role: "assistant",
              callId: this.options.generateCallId(),
              providerCallId: event.id,
              name: event.name,
              // Input too deep to walk is never stored or run: the call keeps a note of it instead.
              input: jsonDepthExceeds(event.input, MAX_JSON_DEPTH)
                ? { [REFUSED_INPUT_KEY]: TOO_DEEP }
                : event.input,
            });
            break;
          case "usage": {
            const usage = this.usageOf(turn);
            usage.inputTokens += event.inputTokens;
            usage.outputTokens += event.outputTokens;
            break;
          }
          case "stop":
            stopReason = event.reason;
            break;
        }
      }
    } catch (error) {
      // An engine interrupted by the turn's own abort (or deadline) is not a model failure.
      if (!signal.aborted) {
        if (error instanceof ReinsError) throw error;
        throw new ModelError(`The model stream failed: ${(error as Error)?.message ?? String(error)}`, {
          cause: error,
        });
      }
    } finally {
      deltas.flush();
    }
    return { ...message.finish(), stopReason };
  }

  private hooksFor(
    turn: LoopTurn,
    warnings: ReadonlyMap<string, string>,
    edits: ReadonlyMap<string, Record<string, unknown>> = new Map(),
  ): ToolCallHooks {
    const now = turn.now ?? Date.now;
    const target = this.resultTarget(turn);
    const observers = this.options.toolResults ?? {};
    return {
      onStart: (call, limits, input) => {
        target.runningCalls.set(call.callId, {
          toolName: call.name,
          startedAt: now(),
          attempts: 1,
          editedInput: edits.get(call.callId),
        });
        turn.emit({
          type: "tool_start",
          toolId: call.callId,
          toolName: call.name,
          input,
          timeoutMs: limits.timeoutMs,
          idleTimeoutMs: limits.idleTimeoutMs,
        });
      },
      onProgress: (call, progress) =>
        turn.emit({
          type: "tool_progress",
          toolId: call.callId,
          toolName: call.name,
          elapsedMs: progress.elapsedMs,
          status: "running",
          message: progress.message,
        }),
      onTimeout: (call, timeout) =>
        turn.emit({ type: "tool_timeout", toolId: call.callId, toolName: call.name, ...timeout }),
      onRetry: (call, retry) => {
        const running = target.runningCalls.get(call.callId);
        if (running) running.attempts = retry.attempt;
        turn.emit({ type: "tool_retry", toolId: call.callId, toolName: call.name, ...retry });
      },
      onResult: (call, outcome) =>
        publishToolResult(target, observers, call, outcome, warnings.get(call.callId)),
    };
  }

  private snap(
    turn: LoopTurn,
    phase: LoopPhase,
    step: number,
    toolCallCount: number,
    calls: readonly ToolCallRequest[],
    outcomes: readonly ToolOutcome[],
  ): void {
    this.options.snapshot?.({ phase, turnId: turn.turnId, step, toolCallCount, calls, outcomes });
  }
}
