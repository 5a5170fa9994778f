/**
 * Turn events as the AI SDK's UI message stream protocol v1 (docs/http-api.md#chat-routes-ai-sdk-usechat):
 * one mapper per streamed turn turns each reins event into the chunks a `useChat` client reads, in order, so
 * that the SDK's own reader assembles the assistant message. Every event type is mapped deliberately:
 *
 * - `turn_start` → `start` (messageId: the turn id, metadata: turn, session, agent, provider, model)
 *   and the first `start-step`;
 * - `text_delta` / `thinking_delta` → `text-*` / `reasoning-*` parts (one part per uninterrupted run);
 * - a call (`tool_start`, `tool_approval_request`, or a result of a call never started) →
 *   `tool-input-available` (dynamic: the client does not declare reins' tools); `tool_start` after an
 *   approval sends it again with the input that runs (an edited one included);
 * - `tool_approval_request` → `tool-approval-request` (approvalId: the call's id); one of a delegated
 *   turn's calls (`childTurnId`) is no call of this message: only a transient `data-tool-approval-request`
 *   with its `childTurnId` and `input`, to decide over HTTP, and `data-tool-approval-closed` when its
 *   `tool_result` says it ended undecided;
 * - `tool_result` → `tool-output-available` (complete), `tool-output-denied` (rejected) or
 *   `tool-output-error` (error, cancelled, timeout, interrupted; errorText: the result);
 * - `tool_progress`, `tool_retry`, `tool_timeout`, `tool_approval`, `model_retry`, `debugger.pause` →
 *   transient `data-*` parts (a client sees them in `onData`; they are not part of the message);
 * - `error` → `error`; `turn_complete` → `finish-step`, `finish`; `turn_abort` → `finish-step`,
 *   `abort` with the reason.
 * Nothing is dropped. A new inference (a new step) begins when text, thinking or a model retry follows
 * the calls of the previous one, or when a call of another model response appears (`inferenceOf`).
 */
import type { EventOf, TurnEvent } from "../events.js";

/** One chunk of the protocol (validated by the `ai` package's `uiMessageChunkSchema` on the client). */
export type UiMessageChunk = { type: string } & Record<string, unknown>;

/** The header that tells the AI SDK the response is a UI message stream of version 1. */
export const UI_MESSAGE_STREAM_HEADERS = Object.freeze({
  "Content-Type": "text/event-stream",
  "Cache-Control": "no-cache",
  Connection: "keep-alive",
  "X-Accel-Buffering": "no",
  "x-vercel-ai-ui-message-stream": "v1",
} as const);

/** The protocol's finish reasons. */
type FinishReason = "stop" | "length" | "content-filter" | "tool-calls" | "error" | "other";

const FINISH_REASONS: Record<string, FinishReason> = {
  end_turn: "stop",
  stop_sequence: "stop",
  max_tokens: "length",
  tool_use: "tool-calls",
};

export type UiMessageMapperDeps = {
  /**
   * Which model response of the turn requested a call (any value that differs between responses), or
   * undefined when unknown; tells a call of the next inference from another call of the same batch.
   */
  inferenceOf?: (toolId: string) => number | undefined;
};

type OpenPart = { kind: "text" | "reasoning"; id: string };

/** Maps one turn's events, in order, to UI message stream chunks. */
export class UiMessageMapper {
  private part: OpenPart | undefined;
  private partCount = 0;
  private stepOpen = false;
  /** Whether the current step has reached its calls (text after them starts the next inference). */
  private inCalls = false;
  private inference: number | undefined;
  private readonly announced = new Set<string>();

  constructor(private readonly deps: UiMessageMapperDeps = {}) {}

  /** The chunks `event` becomes (none, one or several). */
  map(event: TurnEvent): UiMessageChunk[] {
    const chunks: UiMessageChunk[] = [];
    switch (event.type) {
      case "turn_start":
        chunks.push({
          type: "start",
          messageId: event.turnId,
          messageMetadata: {
            turnId: event.turnId,
            sessionId: event.sessionId,
            agentId: event.agentId,
            provider: event.provider,
            model: event.model,
          },
        });
        this.startStep(chunks);
        break;
      case "text_delta":
        this.continueInference(chunks);
        this.appendDelta(chunks, "text", event.text);
        break;
      case "thinking_delta":
        this.continueInference(chunks);
        this.appendDelta(chunks, "reasoning", event.text);
        break;
      case "model_retry":
        this.continueInference(chunks);
        chunks.push(
          transient("data-model-retry", event, {
            provider: event.provider,
            attempt: event.attempt,
            delayMs: event.delayMs,
            error: event.error,
          }),
        );
        break;
      case "tool_start":
        this.announce(chunks, event.toolId, event.toolName, event.input, true);
        break;
      case "tool_approval_request":
        if (event.childTurnId !== undefined) {
          chunks.push(
            transient("data-tool-approval-request", event, {
              deadlineMs: event.deadlineMs,
              childTurnId: event.childTurnId,
              input: event.input,
            }),
          );
          break;
        }
        this.announce(chunks, event.toolId, event.toolName, event.input, false);
        chunks.push({ type: "tool-approval-request", approvalId: event.toolId, toolCallId: event.toolId });
        chunks.push(transient("data-tool-approval-request", event, { deadlineMs: event.deadlineMs }));
        break;
      case "tool_result":
        if (event.childTurnId !== undefined) {
          // a delegated turn's request that ended undecided: no call of this message
          chunks.push(
            transient("data-tool-approval-closed", event, {
              childTurnId: event.childTurnId,
              status: event.status,
            }),
          );
          break;
        }
        // a call refused before it ran, or closed by an abort while queued, was never announced
        this.announce(chunks, event.toolId, event.toolName, null, false);
        chunks.push(resultChunk(event));
        break;
      case "tool_progress":
        chunks.push(
          transient("data-tool-progress", event, { elapsedMs: event.elapsedMs, message: event.message }),
        );
        break;
      case "tool_retry":
        chunks.push(
          transient("data-tool-retry", event, {
            attempt: event.attempt,
            delayMs: event.delayMs,
            error: event.error,
            classification: event.classification,
          }),
        );
        break;
      case "tool_timeout":
        chunks.push(transient("data-tool-timeout", event, { timeoutMs: event.timeoutMs, kind: event.kind }));
        break;
      case "tool_approval":
        chunks.push(
          transient("data-tool-approval", event, {
            decision: event.decision,
            edited: event.edited,
            ...(event.reason === undefined ? {} : { reason: event.reason }),
            ...(event.childTurnId === undefined ? {} : { childTurnId: event.childTurnId }),
          }),
        );
        break;
      case "debugger.pause":
        chunks.push({
          type: "data-pause",
          transient: true,
          data: {
            turnId: event.turnId,
            pauseId: event.pauseId,
            phase: event.phase,
            deadlineMs: event.deadlineMs,
          },
        });
        break;
      case "error":
        chunks.push({ type: "error", errorText: `${event.message} (${event.code})` });
        break;
      case "turn_complete":
        this.endStep(chunks);
        chunks.push({
          type: "finish",
          finishReason: FINISH_REASONS[event.stopReason] ?? "other",
          messageMetadata: {
            stopReason: event.stopReason,
            durationMs: event.durationMs,
            toolCallCount: event.toolCallCount,
            usage: event.usage,
          },
        });
        break;
      case "turn_abort":
        this.endStep(chunks);
        chunks.push({ type: "abort", reason: event.reason });
        break;
    }
    return chunks;
  }

  private appendDelta(chunks: UiMessageChunk[], kind: OpenPart["kind"], delta: string): void {
    if (this.part?.kind !== kind) {
      this.closePart(chunks);
      this.part = { kind, id: `${kind}-${++this.partCount}` };
      chunks.push({ type: `${kind}-start`, id: this.part.id });
    }
    chunks.push({ type: `${kind}-delta`, id: this.part.id, delta });
  }

  private closePart(chunks: UiMessageChunk[]): void {
    if (!this.part) return;
    chunks.push({ type: `${this.part.kind}-end`, id: this.part.id });
    this.part = undefined;
  }

  private startStep(chunks: UiMessageChunk[]): void {
    chunks.push({ type: "start-step" });
    this.stepOpen = true;
    this.inCalls = false;
  }

  private endStep(chunks: UiMessageChunk[]): void {
    this.closePart(chunks);
    if (this.stepOpen) chunks.push({ type: "finish-step" });
    this.stepOpen = false;
  }

  /** Output of an inference: after the previous inference's calls, it is the next step's. */
  private continueInference(chunks: UiMessageChunk[]): void {
    if (this.inCalls || !this.stepOpen) {
      this.endStep(chunks);
      this.startStep(chunks);
      this.inference = undefined;
    }
  }

  /**
   * Makes the call known to the client: once, or again when it starts running (`again`, so an edited
   * input shows and an approved call leaves its waiting state). A call of another model response than
   * the step's calls begins the next step.
   */
  private announce(
    chunks: UiMessageChunk[],
    toolId: string,
    toolName: string,
    input: unknown,
    again: boolean,
  ): void {
    if (this.announced.has(toolId)) {
      if (again) chunks.push(inputChunk(toolId, toolName, input));
      return;
    }
    const inference = this.deps.inferenceOf?.(toolId);
    const otherResponse = this.inCalls && inference !== undefined && inference !== this.inference;
    if (otherResponse || !this.stepOpen) {
      this.endStep(chunks);
      this.startStep(chunks);
    }
    this.closePart(chunks);
    this.inCalls = true;
    this.inference = inference;
    this.announced.add(toolId);
    chunks.push(inputChunk(toolId, toolName, input));
  }
}

function inputChunk(toolId: string, toolName: string, input: unknown): UiMessageChunk {
  return { type: "tool-input-available", toolCallId: toolId, toolName, input, dynamic: true };
}

function resultChunk(event: EventOf<"tool_result">): UiMessageChunk {
  if (event.status === "rejected") return { type: "tool-output-denied", toolCallId: event.toolId };
  if (event.status === "complete" && !event.isError) {
    return { type: "tool-output-available", toolCallId: event.toolId, output: event.result, dynamic: true };
  }
  return { type: "tool-output-error", toolCallId: event.toolId, errorText: event.result, dynamic: true };
}

/** A transient data part about one call (`onData` on the client; never part of the message). */
function transient(
  type: `data-${string}`,
  event: { turnId: string; toolId?: string; toolName?: string },
  data: Record<string, unknown>,
): UiMessageChunk {
  const call = event.toolId === undefined ? {} : { toolCallId: event.toolId, toolName: event.toolName };
  return { type, transient: true, data: { turnId: event.turnId, ...call, ...data } };
}

/** One chunk as an SSE frame (`data: {json}`). */
export function formatChunk(chunk: UiMessageChunk): string {
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/** The frame that ends every UI message stream. */
export const DONE_FRAME = "data: [DONE]\n\n";
