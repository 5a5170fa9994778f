/**
 * Agents (docs/semantics.md#agents): the registry of configured agents, their tool rules and start-up checks.
 */
export { AgentRegistry, BUILTIN_AGENT_ID } from "./agent-registry.js";
export type { AgentRegistryDeps, AgentSummary, ResolvedAgent } from "./agent-registry.js";
export { checkAgentsConfig, unmatchedToolPatterns } from "./config-checks.js";
export { agentAllowsTool, DEMO_TOOL_NAMES, mergeToolOverrides, SCRIPTED_PROVIDER } from "./tool-policy.js";
export type { ToolPolicy } from "./tool-policy.js";
export { matchesAnyToolPattern, matchesToolPattern, mostSpecificMatch } from "./tool-patterns.js";
