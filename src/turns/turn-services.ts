/**
 * What the framework offers tools of one turn (`ctx.services`): the session's status for the
 * `session_status` tool, and child turns for `delegate`. A child turn runs for another agent inside
 * the parent's call; the call's signal aborting (cancel, timeout, the parent's abort) aborts it with
 * reason `parent`. Child turns draw on their root turn's budget (docs/semantics.md#isolation-and-limits): so
 * many in all, so many at once. A call over the first gets a permanent error; over the second, a root turn's
 * call waits for a slot and a deeper one gets a permanent error (waiting there could wait on its own
 * ancestors).
 */
import type { TurnEvent } from "../events.js";
import type { HistoryStore } from "../history/store.js";
import { PermanentToolError } from "../tools/resilience/tool-error.js";
import type { ChildTurnResult, SessionStatus, ToolServices } from "../tools/types.js";
import type { TurnRun } from "./turn-run.js";
import type { TurnManager } from "./manager.js";
import { AgentNotFoundError } from "./errors.js";

/** The events of a child turn's approval that its ancestors' streams show. */
type ApprovalEvent = Extract<TurnEvent, { type: "tool_approval_request" | "tool_approval" | "tool_result" }>;

function isApprovalEvent(event: TurnEvent): event is ApprovalEvent {
  return (
    event.type === "tool_approval_request" || event.type === "tool_approval" || event.type === "tool_result"
  );
}

export type TurnServiceDeps = {
  store: HistoryStore;
  now: () => number;
  openCircuits: () => string[];
  maxDepth: number;
};

export function turnServices(manager: TurnManager, turn: TurnRun, deps: TurnServiceDeps): ToolServices {
  return {
    sessionStatus: () => sessionStatus(turn, deps),
    runChildTurn: (request, signal, onEvent) => runChildTurn(manager, turn, deps, request, signal, onEvent),
  };
}

function sessionStatus(turn: TurnRun, deps: TurnServiceDeps): SessionStatus {
  const timedOut: SessionStatus["timedOut"] = [];
  const cancelled: SessionStatus["cancelled"] = [];
  for (const block of deps.store.getHistory(turn.sessionId)) {
    if (block.kind !== "tool_response") continue;
    const entry = { callId: block.callId, toolName: block.name, turnId: block.turnId };
    if (block.status === "timeout") timedOut.push(entry);
    if (block.status === "cancelled") cancelled.push(entry);
  }
  return {
    turnId: turn.turnId,
    toolCallCount: deps.store.getTurn(turn.turnId)?.toolCallCount ?? 0,
    elapsedMs: deps.now() - turn.startedAt,
    timedOut,
    cancelled,
    openCircuits: deps.openCircuits(),
  };
}

async function runChildTurn(
  manager: TurnManager,
  parent: TurnRun,
  deps: TurnServiceDeps,
  request: { agentId: string; message: string },
  signal: AbortSignal,
  onEvent?: (type: string) => void,
): Promise<ChildTurnResult> {
  if (parent.depth + 1 > deps.maxDepth) {
    throw new PermanentToolError(
      `Delegation depth limit of ${deps.maxDepth} reached; answer without delegating.`,
    );
  }
  if (signal.aborted) throw signal.reason;
  const budget = parent.childBudget;
  if (budget.started >= budget.maxTotal) {
    throw new PermanentToolError(
      `This turn has used its budget of ${budget.maxTotal} child turns; answer without delegating.`,
    );
  }
  // A root turn's call waits for a slot: the slots are held by sibling subtrees, which end. A deeper
  // call must not wait: its own ancestors may hold every slot, waiting for it.
  if (parent.depth > 0 && budget.running >= budget.maxConcurrent) {
    throw new PermanentToolError(
      `At most ${budget.maxConcurrent} child turns may run at once under this turn and all are busy; answer without delegating.`,
    );
  }
  budget.started++;
  if (!(await budget.acquire(signal))) throw signal.reason;
  try {
    return await followChildTurn(manager, parent, deps, request, signal, onEvent);
  } finally {
    budget.release();
  }
}

async function followChildTurn(
  manager: TurnManager,
  parent: TurnRun,
  deps: TurnServiceDeps,
  request: { agentId: string; message: string },
  signal: AbortSignal,
  onEvent?: (type: string) => void,
): Promise<ChildTurnResult> {
  const child = startChildTurn(manager, parent, request);
  // A person can only decide what a stream shows them: every ancestor's stream shows the child's approval
  // requests, their decisions, and the result of one that ended undecided (the request is over) — sent
  // to each ancestor straight rather than relayed from one stream to the next, so that it arrives
  // whatever the turns in between are doing (an ending turn ends its children first: its stream is
  // still open for what they pass up).
  const undecided = new Set<string>();
  const passUp = (event: ApprovalEvent) => {
    const { turnId, seq: _seq, at: _at, ...body } = event;
    for (let ancestor: TurnRun | undefined = parent; ancestor; ancestor = ancestor.parent) {
      ancestor.bus.emit({ ...body, childTurnId: turnId });
    }
  };
  const followed = manager.follow(child, 0, (event) => {
    // a grandchild's were sent to every ancestor by the child's own follower
    if (isApprovalEvent(event) && event.childTurnId === undefined) {
      if (event.type === "tool_approval_request") {
        undecided.add(event.toolId);
        passUp(event);
      } else if (undecided.delete(event.toolId)) {
        passUp(event);
      }
    }
    onEvent?.(event.type);
  });
  const onAbort = () => manager.abortTurn(child.turnId, "parent");
  signal.addEventListener("abort", onAbort, { once: true });
  let outcome;
  try {
    outcome = await child.done;
  } finally {
    signal.removeEventListener("abort", onAbort);
    followed.dispose();
  }
  if (outcome.status !== "completed") {
    throw new PermanentToolError(
      `Child turn ${child.turnId} (agent "${request.agentId}") ended without an answer: ${outcome.reason}.`,
    );
  }
  const text = deps.store
    .getHistory(child.sessionId)
    .filter((block) => block.turnId === child.turnId && block.kind === "text" && block.role === "assistant")
    .map((block) => (block.kind === "text" ? block.text : ""))
    .join("\n");
  return { turnId: child.turnId, text, stopReason: outcome.stopReason };
}

/** Starts the child turn; naming an agent that does not exist is the model's mistake, never retried. */
function startChildTurn(
  manager: TurnManager,
  parent: TurnRun,
  request: { agentId: string; message: string },
): TurnRun {
  try {
    return manager.startTurn({ message: request.message, agentId: request.agentId }, parent);
  } catch (error) {
    if (error instanceof AgentNotFoundError) throw new PermanentToolError(error.message);
    throw error;
  }
}
