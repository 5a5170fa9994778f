/**
 * The batch scheduler (DESIGN.md §5.3): all calls of one model response are one batch. `parallel`
 * tools run concurrently up to `maxParallelTools`; an `exclusive` tool waits for everything before
 * it, runs alone, and holds back everything after it. Results are reported as each call finishes and
 * returned in call order; one slow or failing call never loses the others.
 */
import type { CallScope, ToolRunner } from "./runner.js";
import type { ToolRegistry } from "./registry.js";
import type { ToolCallHooks, ToolCallRequest, ToolOutcome } from "./types.js";

export type SchedulerSettings = { maxParallelTools: number };

export class ToolScheduler {
  constructor(
    private readonly runner: ToolRunner,
    private readonly registry: ToolRegistry,
    private readonly settings: SchedulerSettings,
  ) {}

  async runBatch(
    calls: readonly ToolCallRequest[],
    scope: CallScope,
    hooks: ToolCallHooks = {},
  ): Promise<ToolOutcome[]> {
    const outcomes: ToolOutcome[] = new Array<ToolOutcome>(calls.length);
    const running = new Set<Promise<void>>();

    for (const [index, call] of calls.entries()) {
      const exclusive = this.registry.get(call.name)?.concurrency === "exclusive";
      if (exclusive) await Promise.all(running);
      while (running.size >= this.settings.maxParallelTools) await Promise.race(running);

      const task: Promise<void> = this.runner.run(call, scope, hooks).then((outcome) => {
        outcomes[index] = outcome;
        running.delete(task);
        hooks.onResult?.(call, outcome, index);
      });
      running.add(task);
      if (exclusive) await task;
    }
    await Promise.all(running);
    return outcomes;
  }
}
