/**
 * The batch scheduler (docs/semantics.md#scheduling, docs/semantics.md#resilience): all calls of one model
 * response are one batch. `parallel` tools run concurrently up to `maxParallelTools`; an `exclusive` tool
 * waits for everything before it, runs alone, and holds back everything after it. A call may depend on
 * earlier calls of the batch (`_meta.dependsOn: [index, …]`): it waits for them without holding a slot, so
 * independent calls are never held back; when one fails it is skipped, or answers with its `_meta.default`.
 * Results are reported as each call finishes and returned in call order; one slow or failing call never loses
 * the others. A call may also have to pass a gate first (tool approval, docs/semantics.md#approval): like a
 * dependency, it waits there without holding a slot, and its limits start only when it runs.
 */
import { NO_DECISIONS, type DecisionRecorder } from "../observability/decision.js";
import { inputWithoutMeta } from "./limits.js";
import { defaultResult, errorResult, skippedResult } from "./results.js";
import type { CallScope, ToolRunner } from "./runner.js";
import type { ToolRegistry } from "./registry.js";
import type { ToolCallHooks, ToolCallRequest, ToolOutcome } from "./types.js";

/** The limits `tool_start` reports for a call that never runs (a skipped or malformed dependency). */
const NEVER_RUNS = { timeoutMs: 0, idleTimeoutMs: 0 };

export type SchedulerSettings = { maxParallelTools: number };

/** What a gate lets happen to a call: it runs (with this request, e.g. an edited input), or ends so. */
export type GateVerdict = { run: ToolCallRequest } | { outcome: ToolOutcome };

/**
 * Asked about each call before it takes a slot; undefined lets the call run as requested at once.
 * Must resolve (never reject) once the call's or the turn's signal is aborted.
 */
export type CallGate = (call: ToolCallRequest, scope: CallScope) => Promise<GateVerdict> | undefined;

type Dependencies = { indexes: number[]; defaultValue?: { value: unknown }; problem?: string };

export class ToolScheduler {
  constructor(
    private readonly runner: ToolRunner,
    private readonly registry: ToolRegistry,
    private readonly settings: SchedulerSettings,
    private readonly recorder: DecisionRecorder = NO_DECISIONS,
  ) {}

  async runBatch(
    calls: readonly ToolCallRequest[],
    scope: CallScope,
    hooks: ToolCallHooks = {},
    gate?: CallGate,
  ): Promise<ToolOutcome[]> {
    const outcomes: ToolOutcome[] = new Array<ToolOutcome>(calls.length);
    const tasks: Promise<ToolOutcome>[] = [];
    const slots = new Semaphore(this.settings.maxParallelTools);

    for (const [index, call] of calls.entries()) {
      const exclusive = this.registry.get(call.name)?.concurrency === "exclusive";
      if (exclusive) await Promise.all(tasks);
      const slotsOfCall = exclusive ? undefined : slots;
      const task = this.runOne(call, index, calls, tasks, scope, hooks, slotsOfCall, gate).then((outcome) => {
        outcomes[index] = outcome;
        hooks.onResult?.(call, outcome, index);
        return outcome;
      });
      tasks.push(task);
      if (exclusive) await task;
    }
    await Promise.all(tasks);
    return outcomes;
  }

  private async runOne(
    call: ToolCallRequest,
    index: number,
    calls: readonly ToolCallRequest[],
    earlier: readonly Promise<ToolOutcome>[],
    scope: CallScope,
    hooks: ToolCallHooks,
    slots: Semaphore | undefined,
    gate: CallGate | undefined,
  ): Promise<ToolOutcome> {
    const dependencies = readDependencies(call, index);
    if (dependencies.problem) {
      hooks.onStart?.(call, NEVER_RUNS, inputWithoutMeta(call.input));
      return {
        status: "error",
        isError: true,
        result: errorResult(call.name, dependencies.problem),
        durationMs: 0,
        attempts: 0,
        classification: "permanent",
      };
    }
    if (dependencies.indexes.length > 0) {
      const results = await untilCancelled(
        Promise.all(dependencies.indexes.map((dependency) => earlier[dependency])),
        call.callId,
        scope,
      );
      // cancelled alone while it waited: the runner answers a call cancelled before it started
      if (results === CANCELLED) return this.runner.run(call, scope, hooks);
      const failed = dependencies.indexes.find((_, position) => results[position]?.isError);
      if (failed !== undefined && !scope.signal.aborted)
        return this.skip(call, failed, calls, dependencies, scope, hooks);
    }
    const verdict = gate?.(call, scope);
    const passed = verdict ? await verdict : { run: call };
    if ("outcome" in passed) return passed.outcome;
    let release = slots?.tryAcquire();
    if (slots && !release) {
      const acquiring = slots.acquire();
      const acquired = await untilCancelled(acquiring, call.callId, scope);
      if (acquired === CANCELLED) {
        // the slot it waited for goes on to the next call as soon as it is free
        void acquiring.then((free) => free());
        return this.runner.run(passed.run, scope, hooks);
      }
      release = acquired;
    }
    try {
      return await this.runner.run(passed.run, scope, hooks);
    } finally {
      release?.();
    }
  }

  private skip(
    call: ToolCallRequest,
    dependency: number,
    calls: readonly ToolCallRequest[],
    dependencies: Dependencies,
    scope: CallScope,
    hooks: ToolCallHooks,
  ): ToolOutcome {
    const dependencyName = calls[dependency]?.name ?? "?";
    const usedDefault = dependencies.defaultValue !== undefined;
    this.recorder.record(scope.turnId, {
      kind: "skipped",
      callId: call.callId,
      toolName: call.name,
      dependency,
      usedDefault,
    });
    hooks.onStart?.(call, NEVER_RUNS, inputWithoutMeta(call.input));
    return usedDefault
      ? {
          status: "complete",
          isError: false,
          result: defaultResult(dependency, dependencyName, dependencies.defaultValue?.value),
          durationMs: 0,
          attempts: 0,
        }
      : {
          status: "error",
          isError: true,
          result: skippedResult(call.name, dependency, dependencyName),
          durationMs: 0,
          attempts: 0,
        };
  }
}

/** Reads `_meta.dependsOn` (indexes of earlier calls) and `_meta.default`. */
function readDependencies(call: ToolCallRequest, index: number): Dependencies {
  const meta = call.input._meta;
  if (typeof meta !== "object" || meta === null || Array.isArray(meta)) return { indexes: [] };
  const { dependsOn, default: defaultValue } = meta as Record<string, unknown>;
  const withDefault = defaultValue === undefined ? {} : { defaultValue: { value: defaultValue } };
  if (dependsOn === undefined) return { indexes: [], ...withDefault };
  const valid =
    Array.isArray(dependsOn) &&
    dependsOn.every((item) => Number.isInteger(item) && (item as number) >= 0 && (item as number) < index);
  if (!valid) {
    return {
      indexes: [],
      problem: `_meta.dependsOn must list indexes of earlier calls of this batch (0 to ${index - 1}); got ${JSON.stringify(dependsOn)}.`,
    };
  }
  return { indexes: [...new Set(dependsOn as number[])], ...withDefault };
}

const CANCELLED = Symbol("cancelled");

/**
 * `wait`, or CANCELLED as soon as the call is cancelled alone (cancel one tool) while it waits — for
 * the calls it depends on, or for a slot — so a cancel takes effect at once, not when the wait ends.
 */
async function untilCancelled<T>(
  wait: Promise<T>,
  callId: string,
  scope: CallScope,
): Promise<T | typeof CANCELLED> {
  const { cancellation } = scope;
  if (!cancellation) return wait;
  if (cancellation.isCancelled(callId)) return CANCELLED;
  let stopListening = () => {};
  const cancelled = new Promise<typeof CANCELLED>((resolve) => {
    stopListening = cancellation.onCancel(callId, () => resolve(CANCELLED));
  });
  try {
    return await Promise.race([wait, cancelled]);
  } finally {
    stopListening();
  }
}

/** A FIFO counting semaphore: calls take their slots in call order. */
class Semaphore {
  private readonly waiting: (() => void)[] = [];
  private available: number;

  constructor(size: number) {
    this.available = size;
  }

  /** A slot now (its release), or undefined when every slot is taken. */
  tryAcquire(): (() => void) | undefined {
    if (this.available === 0) return undefined;
    this.available--;
    return this.releaser();
  }

  /** A slot once one is released, in the order asked (for a call that `tryAcquire` found none for). */
  async acquire(): Promise<() => void> {
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.available++;
    };
  }
}
