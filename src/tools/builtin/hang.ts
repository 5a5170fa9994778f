/**
 * `hang {}`: never settles and ignores its signal. It exists to show that the framework, not the
 * tool, guarantees progress: its call ends by timeout or abort all the same. It holds no timer or
 * handle, so an abandoned call leaves nothing behind.
 */
import { z } from "zod";
import type { ToolDefinition } from "../types.js";

export const hangTool: ToolDefinition<Record<string, never>> = {
  name: "hang",
  description: "Never returns and ignores cancellation (a demonstration of framework timeouts).",
  inputSchema: z.strictObject({}),
  concurrency: "parallel",
  execute: () => new Promise<never>(() => {}),
};
