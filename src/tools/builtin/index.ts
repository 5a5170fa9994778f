import type { ToolDefinition } from "../types.js";
import { delegateTool } from "./delegate.js";
import { echoTool } from "./echo.js";
import { createFlakyTool } from "./flaky.js";
import { hangTool } from "./hang.js";
import { sessionStatusTool } from "./session-status.js";
import { sleepTool } from "./sleep.js";

export { createFlakyTool, delegateTool, echoTool, hangTool, sessionStatusTool, sleepTool };

/**
 * The tools that are always available: `echo`, `sleep`, `hang` (docs/semantics.md#the-scripted-model),
 * `flaky` (to see retries and breakers), `session_status` and `delegate`. Built fresh per registry: `flaky`
 * keeps counters.
 */
export function builtinTools(): ToolDefinition[] {
  return [
    echoTool,
    sleepTool,
    hangTool,
    createFlakyTool(),
    sessionStatusTool,
    delegateTool,
  ] as ToolDefinition[];
}
