/**
 * An agent's approval policy (docs/semantics.md#approval): which of its tool calls wait for a person's
 * decision before they run. The agent's `approval` entries map tool names or `*` patterns to `"always"` or
 * `"never"`; the most specific entry matching a tool decides, and a tool no entry matches runs without
 * approval.
 */
import { mostSpecificMatch } from "./tool-patterns.js";

export type ApprovalMode = "always" | "never";

/** Whether a call of `toolName` must be approved before it runs. */
export type ApprovalPolicy = (toolName: string) => ApprovalMode;

/** What this module reads of the configured agents: their `approval` entries. */
export type AgentApprovals = Readonly<Record<string, { approval?: Readonly<Record<string, ApprovalMode>> }>>;

/** The policy of nothing: no call waits for approval. */
export const NO_APPROVAL: ApprovalPolicy = () => "never";

/**
 * The approval policy of agent `agentId` among `agents` (the configuration's `agents`); an agent that
 * is not configured (the built-in `default`) or has no entries approves nothing.
 */
export function approvalPolicy(agents: AgentApprovals | undefined, agentId: string): ApprovalPolicy {
  const entries = agents && Object.hasOwn(agents, agentId) ? agents[agentId]?.approval : undefined;
  if (!entries || Object.keys(entries).length === 0) return NO_APPROVAL;
  return (toolName) => mostSpecificMatch(entries, toolName) ?? "never";
}
