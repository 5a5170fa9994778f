/**
 * Start-up checks of the configured agents (docs/semantics.md#agents). Errors stop start-up: a `defaultAgent`
 * naming no agent, several agents and no `defaultAgent`, an agent whose provider has no key. A tool
 * pattern that matches no known tool only warns: MCP tools arrive after start-up, and a pattern under
 * a configured MCP server's prefix (`docs__*`) is expected to match nothing until the server answers.
 * Instructions longer than a provider's context budget only warn too: that agent's requests to it keep
 * only the newest turn.
 */
import { ConfigError } from "../errors.js";
import { clampTimeouts } from "../config/clamp.js";
import type { Config } from "../config/schema.js";
import { transcriptTokens } from "../history/render/budget.js";
import { PROFILE_NAMES, getProfile } from "../history/render/profiles.js";
import { renderBudgetOf } from "../history/render/render.js";
import { BUILTIN_AGENT_ID } from "./agent-registry.js";
import { matchesToolPattern } from "./tool-patterns.js";
import { SCRIPTED_PROVIDER } from "./tool-policy.js";

/**
 * Checks `config.agents` and `config.defaultAgent` and settles the default agent (the one configured
 * agent when there is exactly one); returns the clamp warnings of the agents' tool limits.
 */
export function checkAgentsConfig(config: Config): string[] {
  const ids = Object.keys(config.agents);
  const named = config.defaultAgent;
  if (ids.length === 0) {
    if (named !== undefined && named !== BUILTIN_AGENT_ID) {
      throw new ConfigError(
        `defaultAgent is "${named}" but no agents are configured (the only agent is the built-in "${BUILTIN_AGENT_ID}")`,
      );
    }
  } else if (named !== undefined && !ids.includes(named)) {
    throw new ConfigError(
      `defaultAgent is "${named}", which is not a configured agent (agents: ${ids.join(", ")})`,
    );
  } else if (named === undefined && ids.length > 1) {
    throw new ConfigError(
      `${ids.length} agents are configured and defaultAgent is not set: set it to one of ${ids.join(", ")}`,
    );
  }
  if (ids.length > 0) config.defaultAgent = named ?? ids[0];

  const warnings: string[] = [];
  for (const [id, agent] of Object.entries(config.agents)) {
    const provider = agent.provider;
    if (provider !== undefined && provider !== SCRIPTED_PROVIDER && !config.providers[provider].apiKey) {
      throw new ConfigError(
        `agents.${id}.provider is "${provider}" but providers.${provider}.apiKey (${provider.toUpperCase()}_API_KEY) is not set`,
      );
    }
    for (const [toolName, override] of Object.entries(agent.limits.tools ?? {})) {
      const clamped = clampTimeouts(
        { timeoutMs: override.timeoutMs ?? 0, idleTimeoutMs: override.idleTimeoutMs ?? 0 },
        `agents.${id}.limits.tools.${toolName}`,
      );
      if (override.timeoutMs !== undefined) override.timeoutMs = clamped.value.timeoutMs;
      if (override.idleTimeoutMs !== undefined) override.idleTimeoutMs = clamped.value.idleTimeoutMs;
      warnings.push(...clamped.warnings);
    }
    warnings.push(...oversizedInstructions(config, id));
  }
  return warnings;
}

/**
 * A warning when agent `id`'s instructions alone exceed the context budget of a provider it can use
 * (its own, or any when it names none): every request of its turns there keeps only the newest turn.
 */
function oversizedInstructions(config: Config, id: string): string[] {
  const agent = config.agents[id]!;
  if (!agent.instructions) return [];
  // the budget every render of the agent's requests has, judged as the render judges it (render.ts)
  const options = { system: agent.instructions };
  const over = PROFILE_NAMES.filter((provider) => agent.provider === undefined || agent.provider === provider)
    .map((provider) => ({
      provider,
      budget: renderBudgetOf(getProfile(provider, config.providers[provider]), options),
    }))
    .filter(({ budget }) => transcriptTokens(budget) < 0);
  if (over.length === 0) return [];
  const providers = over.map(({ provider }) => provider).join(", ");
  return [
    `agents.${id}.instructions: about ${over[0]!.budget.instructionTokens} tokens, more than the context ` +
      `budget of ${providers} (providers.<name>.contextBudgetTokens): requests there will carry only the newest turn`,
  ];
}

/**
 * Warnings for agents' tool and approval patterns that match none of `toolNames` and lie under no
 * configured MCP server's prefix (`<server>__`).
 */
export function unmatchedToolPatterns(config: Config, toolNames: readonly string[]): string[] {
  const mcpPrefixes = Object.keys(config.mcpServers).map((server) => `${server}__`);
  const warnings: string[] = [];
  for (const [id, agent] of Object.entries(config.agents)) {
    const entries = [
      ...agent.tools.map((pattern) => ({ key: "tools", pattern })),
      ...Object.keys(agent.approval).map((pattern) => ({ key: "approval", pattern })),
    ];
    for (const { key, pattern } of entries) {
      if (toolNames.some((name) => matchesToolPattern(pattern, name))) continue;
      if (mcpPrefixes.some((prefix) => pattern.startsWith(prefix))) continue;
      warnings.push(
        `agents.${id}.${key}: "${pattern}" matches no tool (known: ${toolNames.join(", ")}); ` +
          "it will match a tool registered later with that name",
      );
    }
  }
  return warnings;
}
