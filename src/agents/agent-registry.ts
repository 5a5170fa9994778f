/**
 * The agents of a deployment (docs/semantics.md#agents), resolved from the configuration: each agent's
 * instructions, provider and model, tool patterns, approval entries and limits. With no agents
 * configured there is one built-in agent, `default`: no instructions, every tool (`*`), the default
 * provider. The tools an agent has are resolved against the tool registry when asked, so tools that
 * arrive later (an MCP server's) are included.
 *
 * Without configured agents an agent id is only a label, as it was before agents existed: any id a
 * turn, a new session (or `delegate`) names runs as the built-in agent under that name. With agents
 * configured, only their ids exist.
 */
import type { AgentConfig, Config, ToolOverride } from "../config/schema.js";
import { AgentNotFoundError } from "../turns/errors.js";
import { agentAllowsTool, mergeToolOverrides, type ToolPolicy } from "./tool-policy.js";

/** The agent of a deployment that configures none. */
export const BUILTIN_AGENT_ID = "default";
const BUILTIN_AGENT: AgentConfig = {
  description: "The built-in agent: every tool, the default provider.",
  tools: ["*"],
  approval: {},
  limits: {},
};

export type ResolvedAgent = AgentConfig & { id: string };

/** What `GET /api/agents` shows of an agent: never its instructions, never a key. */
export type AgentSummary = {
  id: string;
  description: string;
  provider: string;
  model: string | null;
  tools: string[];
  approval: Record<string, "always" | "never">;
};

export type AgentRegistryDeps = {
  /** The names of the tools registered now. */
  toolNames: () => readonly string[];
  /** The provider of an agent that names none (`providers.default`). */
  defaultProvider: string;
  /** The model a provider uses when the agent names none. */
  defaultModelOf: (provider: string) => string | undefined;
  /** `tools.overrides`, under which each agent's `limits.tools` is merged. */
  toolOverrides: Readonly<Record<string, ToolOverride>>;
};

/** Tool names whose answer one policy keeps (a registry has far fewer tools). */
const MAX_REMEMBERED_TOOL_NAMES = 1_024;

export class AgentRegistry {
  readonly defaultAgentId: string;
  /** Whether the configuration declares agents (else only the built-in one exists). */
  readonly configured: boolean;
  private readonly agents = new Map<string, ResolvedAgent>();
  /** Tool rules by agent and provider. */
  private readonly policies = new Map<string, ToolPolicy>();

  constructor(
    agents: Readonly<Record<string, AgentConfig>>,
    defaultAgentId: string | undefined,
    private readonly deps: AgentRegistryDeps,
  ) {
    const configured = Object.entries(agents);
    this.configured = configured.length > 0;
    for (const [id, agent] of configured.length > 0
      ? configured
      : [[BUILTIN_AGENT_ID, BUILTIN_AGENT] as const])
      this.agents.set(id, { ...agent, id });
    this.defaultAgentId = defaultAgentId ?? (configured.length === 1 ? configured[0]![0] : BUILTIN_AGENT_ID);
  }

  /** The registry of a configuration already checked by `checkAgentsConfig`. */
  static fromConfig(config: Config, deps: Omit<AgentRegistryDeps, "toolOverrides" | "defaultProvider">) {
    return new AgentRegistry(config.agents, config.defaultAgent, {
      ...deps,
      defaultProvider: config.providers.default ?? "scripted",
      toolOverrides: config.tools.overrides,
    });
  }

  get(agentId: string): ResolvedAgent | undefined {
    return this.agents.get(agentId);
  }

  /** The agent `agentId` names, else the default one; an unknown id is an `AgentNotFoundError`. */
  resolve(agentId: string | undefined): ResolvedAgent {
    const id = agentId ?? this.defaultAgentId;
    const agent = this.agents.get(id);
    if (agent) return agent;
    if (!this.configured) return { ...BUILTIN_AGENT, id };
    throw new AgentNotFoundError(id, [...this.agents.keys()]);
  }

  /** The provider an agent's turns use unless the turn names one. */
  providerOf(agent: ResolvedAgent): string {
    return agent.provider ?? this.deps.defaultProvider;
  }

  /**
   * The model `agent` names for `provider`, if any: an agent's model is for its own provider (a turn
   * that switches provider gets that one's default).
   */
  modelOf(agent: ResolvedAgent, provider: string): string | undefined {
    return agent.provider === undefined || agent.provider === provider ? agent.model : undefined;
  }

  /**
   * The tool rules of the turns of `agent` on `provider`: made once per agent and provider, and each
   * tool's answer worked out once (it depends on the agent's patterns, the name and the provider only).
   */
  toolPolicy(agent: ResolvedAgent, provider: string): ToolPolicy {
    // built-in agents under other names share the built-in's rules: cached under its id
    const key = `${this.agents.has(agent.id) ? agent.id : BUILTIN_AGENT_ID}\u0000${provider}`;
    const cached = this.policies.get(key);
    if (cached) return cached;
    const toolOverrides = mergeToolOverrides(this.deps.toolOverrides, agent.limits.tools);
    const allowed = new Map<string, boolean>();
    const policy: ToolPolicy = {
      allowsTool: (toolName) => {
        let allows = allowed.get(toolName);
        if (allows === undefined) {
          allows = agentAllowsTool(agent.tools, toolName, provider);
          // names a model makes up are answered, not kept
          if (allowed.size < MAX_REMEMBERED_TOOL_NAMES) allowed.set(toolName, allows);
        }
        return allows;
      },
      toolOverrides,
    };
    this.policies.set(key, policy);
    return policy;
  }

  /** Every agent as `GET /api/agents` shows it, tools resolved against the registry now. */
  list(): AgentSummary[] {
    const toolNames = this.deps.toolNames();
    return [...this.agents.values()].map((agent) => {
      const provider = this.providerOf(agent);
      return {
        id: agent.id,
        description: agent.description,
        provider,
        model: agent.model ?? this.deps.defaultModelOf(provider) ?? null,
        tools: toolNames.filter((name) => agentAllowsTool(agent.tools, name, provider)),
        approval: { ...agent.approval },
      };
    });
  }
}
