/**
 * Which tools an agent may use in one turn (docs/semantics.md#agents): the tools its `tools` names or
 * patterns match, except the demonstration tools (`echo`, `sleep`, `hang`, `flaky`) under a real provider —
 * those only when the agent names them exactly (`*` does not count for them). What is offered to the model
 * and what may run is the same set; the runner treats any other name as an unknown tool.
 */
import type { ToolOverride } from "../config/schema.js";
import { matchesAnyToolPattern } from "./tool-patterns.js";

/** Tools that exist to show the framework working; a real model is not offered them by a wildcard. */
export const DEMO_TOOL_NAMES: ReadonlySet<string> = new Set(["echo", "sleep", "hang", "flaky"]);

/** The provider that is not a real model: it is offered every tool its agent's patterns match. */
export const SCRIPTED_PROVIDER = "scripted";

/** One turn's tool rules, as the loop and the runner read them. */
export type ToolPolicy = {
  /** Whether the turn's agent may be offered and run `toolName`. */
  allowsTool: (toolName: string) => boolean;
  /** The agent's `limits.tools`, each merged over `tools.overrides` of the same tool. */
  toolOverrides: Readonly<Record<string, ToolOverride>>;
};

/** Whether an agent with `patterns` may use `toolName` in a turn of `provider`. */
export function agentAllowsTool(patterns: readonly string[], toolName: string, provider: string): boolean {
  if (DEMO_TOOL_NAMES.has(toolName) && provider !== SCRIPTED_PROVIDER) return patterns.includes(toolName);
  return matchesAnyToolPattern(patterns, toolName);
}

/**
 * `agent` overrides merged over `global` ones, field by field per tool (a `retry` too), so an agent
 * that only shortens a tool's timeout keeps the retry policy configured for everyone.
 */
export function mergeToolOverrides(
  global: Readonly<Record<string, ToolOverride>>,
  agent: Readonly<Record<string, ToolOverride>> | undefined,
): Record<string, ToolOverride> {
  const merged: Record<string, ToolOverride> = { ...global };
  for (const [toolName, override] of Object.entries(agent ?? {})) {
    const base = merged[toolName];
    merged[toolName] =
      base === undefined
        ? override
        : {
            ...base,
            ...override,
            ...(base.retry || override.retry ? { retry: { ...base.retry, ...override.retry } } : {}),
          };
  }
  return merged;
}
