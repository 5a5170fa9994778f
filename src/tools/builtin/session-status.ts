/**
 * `session_status {}`: tells the model where it stands (docs/semantics.md#resilience, agent awareness) — this
 * turn's tool-call count and elapsed time, the calls of this session that timed out or were cancelled, and
 * which tools' circuits are open — so it can change course instead of repeating what failed.
 */
import { z } from "zod";
import { PermanentToolError } from "../resilience/tool-error.js";
import type { ToolDefinition } from "../types.js";

export const sessionStatusTool: ToolDefinition<Record<string, never>> = {
  name: "session_status",
  description:
    "Reports this turn's tool-call count and elapsed time, this session's timed-out and cancelled calls, and tools whose circuit is open.",
  inputSchema: z.strictObject({}),
  concurrency: "parallel",
  execute: async (_input, context) => {
    if (!context.services)
      throw new PermanentToolError("session_status is unavailable outside a managed turn");
    return context.services.sessionStatus();
  },
};
