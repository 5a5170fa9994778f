/**
 * The view of a running turn that `GET /api/turns/active` shows (docs/http-api.md): its running tools with
 * their elapsed time, its pause, the calls waiting for approval, its links to parent and child turns,
 * and its zombies.
 */
import type { TurnRun } from "./turn-run.js";
import type { PauseInfo } from "./step-control.js";
import type { PendingApproval } from "./approvals.js";
import type { Zombie } from "../tools/zombie-registry.js";

export type ActiveTurnDetails = {
  turnId: string;
  sessionId: string;
  agentId: string;
  startedAt: number;
  currentTool: string | null;
  runningTools: { toolId: string; toolName: string; elapsedMs: number }[];
  toolCallCount: number;
  paused: boolean;
  pause: PauseInfo | null;
  /** Calls waiting for a person's approval (docs/semantics.md#approval). */
  pendingApprovals: PendingApproval[];
  parentTurnId: string | null;
  childTurnIds: string[];
  depth: number;
  zombies: { toolId: string; toolName: string; elapsedMs: number }[];
};

export function describeActiveTurn(
  turn: TurnRun,
  facts: {
    now: number;
    pause: PauseInfo | undefined;
    approvals?: PendingApproval[];
    toolCallCount: number;
    zombies: readonly Zombie[];
  },
): ActiveTurnDetails {
  const { now, pause } = facts;
  const running = [...turn.runningCalls.entries()].map(([toolId, tool]) => ({
    toolId,
    toolName: tool.toolName,
    elapsedMs: now - tool.startedAt,
  }));
  return {
    turnId: turn.turnId,
    sessionId: turn.sessionId,
    agentId: turn.agentId,
    startedAt: turn.startedAt,
    currentTool: running.at(-1)?.toolName ?? null,
    runningTools: running,
    toolCallCount: facts.toolCallCount,
    paused: pause !== undefined,
    pause: pause ?? null,
    pendingApprovals: facts.approvals ?? [],
    parentTurnId: turn.parentTurnId,
    childTurnIds: [...turn.childTurnIds],
    depth: turn.depth,
    zombies: facts.zombies.map((zombie) => ({
      toolId: zombie.toolId,
      toolName: zombie.toolName,
      elapsedMs: now - zombie.since,
    })),
  };
}
