/**
 * `flaky {failures, kind, key?, text?}`: fails `failures` times, then succeeds. It demonstrates retries
 * (count per call id, so the retries of one call see the count go up) and the circuit breaker (count
 * per `key`, shared across calls). Each `createFlakyTool()` has its own counters, bounded in number.
 */
import { z } from "zod";
import { PermanentToolError, TransientToolError } from "../resilience/tool-error.js";
import type { ToolDefinition } from "../types.js";

/** Counters kept at most; beyond it the least recently used is forgotten. */
export const FLAKY_MAX_COUNTERS = 10_000;

const input = z.strictObject({
  failures: z.number().int().min(0).max(1000),
  kind: z.enum(["transient", "permanent"]),
  key: z.string().min(1).optional(),
  /** Returned on success instead of the default message (lets `echo` stand in as its fallback). */
  text: z.string().optional(),
});

export type FlakyInput = z.infer<typeof input>;

/** A fresh `flaky` tool with its own failure counters. */
export function createFlakyTool(options: { maxCounters?: number } = {}): ToolDefinition<FlakyInput> {
  const maxCounters = options.maxCounters ?? FLAKY_MAX_COUNTERS;
  // Map order is insertion order; re-inserting on every update makes the first entry the stalest.
  const failuresSoFar = new Map<string, number>();

  function record(counter: string, count: number): void {
    failuresSoFar.delete(counter);
    failuresSoFar.set(counter, count);
    while (failuresSoFar.size > maxCounters) {
      const stalest = failuresSoFar.keys().next().value;
      if (stalest === undefined) break;
      failuresSoFar.delete(stalest);
    }
  }

  return {
    name: "flaky",
    description:
      "Fails `failures` times with a transient or permanent error, then succeeds. Counts per `key` when given (shared across calls), else per call.",
    inputSchema: input,
    concurrency: "parallel",
    execute: async ({ failures, kind, key, text }, context) => {
      const counter = key === undefined ? `call:${context.callId}` : `key:${key}`;
      const failed = failuresSoFar.get(counter) ?? 0;
      if (failed < failures) {
        record(counter, failed + 1);
        const message = `flaky: failure ${failed + 1} of ${failures} (${kind})`;
        throw kind === "transient" ? new TransientToolError(message) : new PermanentToolError(message);
      }
      // A call's own counter is not needed once it succeeded; a shared key stays recovered.
      if (key === undefined) failuresSoFar.delete(counter);
      if (text !== undefined) return text;
      return `flaky: succeeded after ${failures} failure${failures === 1 ? "" : "s"}${key === undefined ? "" : ` (key "${key}")`}.`;
    },
  };
}
