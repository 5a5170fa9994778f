/**
 * The TurnEvent union: one zod definition shared by the SSE stream, the persisted event log, and any
 * client. Producers emit an event *body* (type + payload); the turn's event bus stamps the common
 * fields `turnId`, `seq` (per turn, from 1) and `at` (epoch ms).
 */
// zod as @hono/zod-openapi extends it: the union is registered as an OpenAPI component (src/http/
// schemas.ts), which needs schemas built after that extension, whatever module a program loads first.
import { z } from "@hono/zod-openapi";

export const ABORT_REASONS = [
  "user",
  "timeout",
  "error",
  "disconnect",
  "shutdown",
  "parent",
  "loop",
  "interrupted",
  "limit",
] as const;

const toolRef = { toolId: z.string(), toolName: z.string() };

export const eventBodySchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("turn_start"),
    sessionId: z.string(),
    agentId: z.string(),
    provider: z.string(),
    model: z.string(),
    startedAt: z.number(),
  }),
  z.object({ type: z.literal("text_delta"), text: z.string() }),
  z.object({ type: z.literal("thinking_delta"), text: z.string() }),
  z.object({
    type: z.literal("tool_start"),
    ...toolRef,
    input: z.unknown(),
    timeoutMs: z.number(),
    idleTimeoutMs: z.number(),
  }),
  z.object({
    type: z.literal("tool_progress"),
    ...toolRef,
    elapsedMs: z.number(),
    status: z.literal("running"),
    message: z.string().nullable(),
  }),
  z.object({
    type: z.literal("tool_result"),
    ...toolRef,
    result: z.string(),
    isError: z.boolean(),
    status: z.enum(["complete", "error", "cancelled", "timeout", "interrupted", "rejected"]),
    durationMs: z.number(),
    attempts: z.number(),
    /**
     * A delegated turn's call whose `tool_approval_request` this stream showed ended without a decision
     * (abort, cancel, deadline): the request is over. Not a call of this turn.
     */
    childTurnId: z.string().optional(),
  }),
  z.object({
    type: z.literal("tool_timeout"),
    ...toolRef,
    timeoutMs: z.number(),
    kind: z.enum(["total", "idle"]),
  }),
  z.object({
    type: z.literal("tool_retry"),
    ...toolRef,
    attempt: z.number(),
    delayMs: z.number(),
    error: z.string(),
    classification: z.enum(["transient", "permanent"]),
  }),
  /**
   * A call that needs a person's approval waits (docs/semantics.md#approval); `deadlineMs` is epoch ms.
   * `childTurnId`: the call waits in that delegated turn under this one (decide it on either turn's id).
   */
  z.object({
    type: z.literal("tool_approval_request"),
    ...toolRef,
    input: z.unknown(),
    deadlineMs: z.number(),
    childTurnId: z.string().optional(),
  }),
  /** The decision on a waiting call; `reason` on a rejection (`approval timed out` at the deadline). */
  z.object({
    type: z.literal("tool_approval"),
    ...toolRef,
    decision: z.enum(["approve", "reject"]),
    edited: z.boolean(),
    reason: z.string().optional(),
    childTurnId: z.string().optional(),
  }),
  /** A failed inference (429, 5xx, network, before any output) about to be retried; not an error. */
  z.object({
    type: z.literal("model_retry"),
    provider: z.string(),
    attempt: z.number(),
    delayMs: z.number(),
    error: z.string(),
  }),
  z.object({
    type: z.literal("debugger.pause"),
    pauseId: z.string(),
    phase: z.enum(["after_inference", "after_tools"]),
    deadlineMs: z.number(),
    summary: z.unknown(),
  }),
  z.object({ type: z.literal("turn_abort"), reason: z.enum(ABORT_REASONS) }),
  z.object({
    type: z.literal("turn_complete"),
    stopReason: z.string(),
    durationMs: z.number(),
    toolCallCount: z.number(),
    /** Tokens the provider reported, summed over the turn's inferences (zeros from `scripted`). */
    usage: z.object({ inputTokens: z.number(), outputTokens: z.number() }),
  }),
  z.object({ type: z.literal("error"), code: z.string(), message: z.string() }),
]);

export type EventBody = z.infer<typeof eventBodySchema>;
export type EventType = EventBody["type"];

/** Common fields stamped on every event. */
export type EventEnvelope = { turnId: string; seq: number; at: number };

/** A persisted, sequenced turn event as clients receive it. */
export type TurnEvent = EventBody & EventEnvelope;

/** The body of one event type, e.g. `EventOf<"tool_result">`. */
export type EventOf<T extends EventType> = Extract<EventBody, { type: T }>;

/** The events that end a turn's stream; exactly one is emitted per turn. */
export function isTerminalEvent(event: { type: string }): boolean {
  return event.type === "turn_complete" || event.type === "turn_abort";
}

/** Maximum characters of a result carried in a `tool_result` event (the full result is in history). */
export const EVENT_RESULT_MAX_CHARS = 2000;
