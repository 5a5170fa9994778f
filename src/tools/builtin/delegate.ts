/**
 * `delegate {agentId, message}`: runs a child turn for another agent inside this call and returns its
 * answer. Aborting this call (cancel, timeout, the parent turn's abort) aborts the child turn with
 * reason `parent`; `/api/turns/active` shows the link both ways.
 */
import { z } from "zod";
import { PermanentToolError } from "../resilience/tool-error.js";
import type { ToolDefinition } from "../types.js";

const input = z.strictObject({
  agentId: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "letters, digits, '_' and '-' (at most 64)"),
  message: z.string().regex(/\S/, "must not be only white space"),
});

export const delegateTool: ToolDefinition<z.infer<typeof input>> = {
  name: "delegate",
  description: "Runs a child turn for another agent with the given message and returns its answer.",
  inputSchema: input,
  concurrency: "parallel",
  // A child turn is a conversation, not a flaky request: never retried.
  retry: { maxAttempts: 1 },
  execute: async ({ agentId, message }, context) => {
    if (!context.services)
      throw new PermanentToolError("delegate needs a turn manager (child turns are unavailable here)");
    const child = await context.services.runChildTurn({ agentId, message }, context.signal, (type) =>
      context.heartbeat(`child turn: ${type}`),
    );
    return `[child turn ${child.turnId}, agent "${agentId}", ${child.stopReason}]\n${child.text}`;
  },
};
