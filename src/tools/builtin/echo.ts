/** `echo {text}`: returns its text. The simplest complete tool call. */
import { z } from "zod";
import type { ToolDefinition } from "../types.js";

// Unknown keys are ignored (not refused), so echo can stand in as another tool's fallback.
const input = z.object({ text: z.string() });

export const echoTool: ToolDefinition<z.infer<typeof input>> = {
  name: "echo",
  description: "Returns the given text unchanged.",
  inputSchema: input,
  concurrency: "parallel",
  execute: async ({ text }) => text,
};
