/**
 * What a tool is (`ToolDefinition`), what it is given when it runs (`ToolContext`), and what the
 * framework reports back (`ToolOutcome`).
 */
import type { z } from "zod";
import type { Classifier } from "./resilience/classify.js";
import type { RetryPolicy } from "./resilience/retry-policy.js";
import type { Classification } from "./resilience/tool-error.js";

export type ToolConcurrency = "parallel" | "exclusive";

export interface ToolContext {
  readonly turnId: string;
  readonly sessionId: string;
  readonly agentId: string;
  readonly callId: string;
  readonly toolName: string;
  /** Directory the tool may treat as its working directory, when configured. */
  readonly workspace: string | undefined;
  /** Filesystem roots a tool that touches the system is confined to. */
  readonly allowedRoots: readonly string[];
  /** 0 for a top-level turn; child turns count up. */
  readonly depth: number;
  /** Aborted when the call times out, is cancelled, or its turn ends. */
  readonly signal: AbortSignal;
  /** Reports progress: re-arms the idle deadline and becomes the message of `tool_progress`. */
  heartbeat(message?: string): void;
  /** What the framework offers tools beyond their input (session status, child turns), if anything. */
  readonly services?: ToolServices;
}

/**
 * A snapshot of the session for the `session_status` tool (docs/semantics.md#resilience, agent awareness).
 */
export type SessionStatus = {
  turnId: string;
  toolCallCount: number;
  elapsedMs: number;
  /** Calls of this session that timed out or were cancelled. */
  timedOut: { callId: string; toolName: string; turnId: string }[];
  cancelled: { callId: string; toolName: string; turnId: string }[];
  openCircuits: string[];
};

export type ChildTurnResult = { turnId: string; text: string; stopReason: string };

export interface ToolServices {
  sessionStatus(): SessionStatus;
  /** Runs a turn for another agent inside this call; aborting `signal` aborts it (reason `parent`). */
  runChildTurn(
    request: { agentId: string; message: string },
    signal: AbortSignal,
    onEvent?: (type: string) => void,
  ): Promise<ChildTurnResult>;
}

export interface ToolDefinition<Input = unknown> {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: z.ZodType<Input>;
  /** The JSON Schema offered to the model, when the tool has its own (an MCP server's); else derived. */
  readonly jsonSchema?: Record<string, unknown>;
  readonly concurrency: ToolConcurrency;
  /** Wall-clock limit for this tool (ms, 0 = none); the configuration's per-tool override wins. */
  readonly timeoutMs?: number;
  /** No-progress limit for this tool (ms, 0 = none). */
  readonly idleTimeoutMs?: number;
  /** Overrides of the default retry policy for this tool. */
  readonly retry?: Partial<RetryPolicy>;
  /** Classifies this tool's errors before the built-in rules; return undefined to defer to them. */
  readonly classifyError?: Classifier;
  /** A tool tried with the same input when this one fails permanently or its circuit is open. */
  readonly fallback?: string;
  /** Returns a string (given to the model as is) or a value (given as JSON). */
  execute(input: Input, context: ToolContext): Promise<unknown>;
}

/** One call of a batch, as the model requested it, under its canonical id. */
export type ToolCallRequest = { callId: string; name: string; input: Record<string, unknown> };

/** `rejected`: a person refused the call before it ran (tool approval, docs/semantics.md#approval). */
export type ToolOutcomeStatus = "complete" | "error" | "timeout" | "cancelled" | "rejected";

export type ToolOutcome = {
  status: ToolOutcomeStatus;
  /** What the model sees. */
  result: string;
  isError: boolean;
  durationMs: number;
  attempts: number;
  timeout?: { kind: "total" | "idle"; timeoutMs: number };
  /** How the final failure was classified, for failed calls. */
  classification?: Classification;
};

/** Observers of one call's life; the loop turns them into events. All optional, all synchronous. */
export type ToolCallHooks = {
  /** `input`: what the tool is given (the model's input without `_meta`); limits 0 for a call that never runs. */
  onStart?(
    call: ToolCallRequest,
    limits: { timeoutMs: number; idleTimeoutMs: number },
    input: Record<string, unknown>,
  ): void;
  onProgress?(call: ToolCallRequest, progress: { elapsedMs: number; message: string | null }): void;
  onTimeout?(call: ToolCallRequest, timeout: { kind: "total" | "idle"; timeoutMs: number }): void;
  onResult?(call: ToolCallRequest, outcome: ToolOutcome, index: number): void;
  onRetry?(
    call: ToolCallRequest,
    retry: { attempt: number; delayMs: number; error: string; classification: Classification },
  ): void;
};
