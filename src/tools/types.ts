/**
 * What a tool is (`ToolDefinition`), what it is given when it runs (`ToolContext`), and what the
 * framework reports back (`ToolOutcome`).
 */
import type { z } from "zod";

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
}

export interface ToolDefinition<Input = unknown> {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: z.ZodType<Input>;
  readonly concurrency: ToolConcurrency;
  /** Wall-clock limit for this tool (ms, 0 = none); the configuration's per-tool override wins. */
  readonly timeoutMs?: number;
  /** No-progress limit for this tool (ms, 0 = none). */
  readonly idleTimeoutMs?: number;
  /** Returns a string (given to the model as is) or a value (given as JSON). */
  execute(input: Input, context: ToolContext): Promise<unknown>;
}

/** One call of a batch, as the model requested it, under its canonical id. */
export type ToolCallRequest = { callId: string; name: string; input: Record<string, unknown> };

export type ToolOutcomeStatus = "complete" | "error" | "timeout" | "cancelled";

export type ToolOutcome = {
  status: ToolOutcomeStatus;
  /** What the model sees. */
  result: string;
  isError: boolean;
  durationMs: number;
  attempts: number;
  timeout?: { kind: "total" | "idle"; timeoutMs: number };
};

/** Observers of one call's life; the loop turns them into events. All optional, all synchronous. */
export type ToolCallHooks = {
  onStart?(call: ToolCallRequest, limits: { timeoutMs: number; idleTimeoutMs: number }): void;
  onProgress?(call: ToolCallRequest, progress: { elapsedMs: number; message: string | null }): void;
  onTimeout?(call: ToolCallRequest, timeout: { kind: "total" | "idle"; timeoutMs: number }): void;
  onResult?(call: ToolCallRequest, outcome: ToolOutcome, index: number): void;
};
