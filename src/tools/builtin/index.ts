import type { ToolDefinition } from "../types.js";
import { echoTool } from "./echo.js";
import { hangTool } from "./hang.js";
import { sleepTool } from "./sleep.js";

export { echoTool, hangTool, sleepTool };

/** The tools that are always available (DESIGN.md §6). */
export function builtinTools(): ToolDefinition[] {
  return [echoTool, sleepTool, hangTool] as ToolDefinition[];
}
