/**
 * `sleep {ms, heartbeatMs?}`: waits, honouring its signal; with `heartbeatMs` it reports progress at
 * that interval, which keeps an idle deadline from firing.
 */
import { z } from "zod";
import type { ToolDefinition } from "../types.js";

const input = z.strictObject({
  ms: z.number().int().min(0).max(86_400_000),
  heartbeatMs: z.number().int().positive().optional(),
});

export const sleepTool: ToolDefinition<z.infer<typeof input>> = {
  name: "sleep",
  description: "Waits for `ms` milliseconds, sending a heartbeat every `heartbeatMs` when given.",
  inputSchema: input,
  concurrency: "parallel",
  execute: ({ ms, heartbeatMs }, context) =>
    new Promise<string>((resolve, reject) => {
      const startedAt = Date.now();
      const done = setTimeout(() => {
        cleanup();
        resolve(`Slept ${ms}ms.`);
      }, ms);
      const beat =
        heartbeatMs === undefined
          ? undefined
          : setInterval(() => context.heartbeat(`slept ${Date.now() - startedAt}ms of ${ms}ms`), heartbeatMs);
      const onAbort = () => {
        cleanup();
        reject(context.signal.reason instanceof Error ? context.signal.reason : new Error("aborted"));
      };
      function cleanup() {
        clearTimeout(done);
        clearInterval(beat);
        context.signal.removeEventListener("abort", onAbort);
      }
      if (context.signal.aborted) return onAbort();
      context.signal.addEventListener("abort", onAbort, { once: true });
    }),
};
