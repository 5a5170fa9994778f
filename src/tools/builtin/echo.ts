/** `echo {text}`: returns its text. The simplest complete tool call. */
import { z } from "zod";
import type { ToolDefinition } from "../types.js";

const input = z.strictObject({ text: z.string() });

export const echoTool: ToolDefinition<z.infer<typeof input>> = {
  name: "echo",
  description: "Returns the given text unchanged.",
  inputSchema: input,
  concurrency: "parallel",
  execute: async ({ text }) => text,
};
