/**
 * The scheduler's gate for tool approval (docs/semantics.md#approval): a call the agent's policy marks
 * `always` waits in the ApprovalRegistry before it takes a slot. Approved, it runs with the input the person
 * approved (the edit is remembered so its result can say what ran); rejected, it ends with a `[REJECTED] …`
 * result of status `rejected`; its turn or its own cancel ending the wait closes it as cancelled, like a call
 * cancelled before it started.
 */
import type { ApprovalPolicy } from "../agents/approval-policy.js";
import type { EventBody } from "../events.js";
import { cancelledOutcome } from "../tools/attempt.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { CallGate } from "../tools/scheduler.js";
import type { ToolCallRequest, ToolOutcome } from "../tools/types.js";
import type { ApprovalRegistry } from "./approvals.js";

/** What a turn hands the loop for approval: its agent's policy and where its calls wait. */
export type TurnApproval = { policy: ApprovalPolicy; registry: ApprovalRegistry };

/** The result the model sees for a rejected call. */
export function rejectedResult(reason: string): string {
  return `[REJECTED] ${reason}`;
}

/**
 * Put before the result of a call that ran with an edited input: the stored call keeps the model's
 * input, so the model learns here what actually ran.
 */
export function editedInputNote(input: Record<string, unknown>): string {
  return `[EDITED] A person changed this call's input before approving it; it ran with: ${JSON.stringify(input)}`;
}

/**
 * The gate of one batch. `edits` receives the input of every call approved with an edit, by call id.
 */
export function approvalGate(options: {
  turnId: string;
  approval: TurnApproval;
  tools: ToolRegistry;
  emit: (body: EventBody) => void;
  edits: Map<string, Record<string, unknown>>;
}): CallGate {
  const { turnId, approval, tools, emit, edits } = options;
  return (call, scope) => {
    const tool = tools.get(call.name);
    // an unknown tool answers with its own result; there is nothing to approve
    if (!tool || approval.policy(call.name) !== "always") return undefined;
    const callSignal = scope.cancellation?.signal(call.callId);
    return approval.registry
      .wait({
        turnId,
        toolId: call.callId,
        toolName: call.name,
        input: call.input,
        validate: (input) => validateInput(tool.inputSchema, input),
        signals: [scope.signal, callSignal],
        emit,
      })
      .then((verdict) => {
        if (verdict.decision === "approve") {
          if (verdict.edited) edits.set(call.callId, verdict.input);
          const approved: ToolCallRequest = { ...call, input: verdict.input };
          return { run: approved };
        }
        const outcome: ToolOutcome =
          verdict.decision === "reject"
            ? {
                status: "rejected",
                isError: true,
                result: rejectedResult(verdict.reason),
                durationMs: 0,
                attempts: 0,
              }
            : {
                ...cancelledOutcome(scope, call.callId),
                durationMs: 0,
                attempts: 0,
              };
        return { outcome };
      });
  };
}

/** Checks an edited input as the runner will (without `_meta`); a message naming each bad field. */
function validateInput(
  schema: { safeParse(value: unknown): { success: boolean; error?: { issues: readonly Issue[] } } },
  input: Record<string, unknown>,
): string | undefined {
  const { _meta: _ignored, ...fields } = input;
  const parsed = schema.safeParse(fields);
  if (parsed.success) return undefined;
  const issues = parsed.error?.issues ?? [];
  const detail = issues.map(
    (issue) => `input.${issue.path.map(String).join(".") || "(root)"}: ${issue.message}`,
  );
  return `Invalid input: ${detail.join("; ")}`;
}

type Issue = { path: readonly PropertyKey[]; message: string };
