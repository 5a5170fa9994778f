/**
 * The error hierarchy. Every error reins raises carries a stable string `code`; HTTP mapping lives in
 * `http/error-handler.ts`, not here, so internal errors stay independent of transport.
 */

import type { ABORT_REASONS } from "./events.js";

export class ReinsError extends Error {
  readonly code: string;
  readonly data: Record<string, unknown> | undefined;

  constructor(
    code: string,
    message: string,
    options: { data?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.data = options.data;
  }
}

/** Invalid configuration: the message names the key and what is wrong with it. */
export class ConfigError extends ReinsError {
  constructor(message: string, data?: Record<string, unknown>) {
    super("config_invalid", message, { data });
  }
}

/**
 * Makes an error without capturing a stack trace, for errors the framework's own timers make: the
 * stack of a deadline's error shows nothing but the timer, and capturing one costs microseconds that a
 * burst (a thousand calls timing out together) pays a thousand times in one turn of the event loop.
 */
export function withoutStack<E extends Error>(make: () => E): E {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export type TimeoutKind = "total" | "idle";

/** A tool call exceeded its wall-clock (`total`) or no-progress (`idle`) limit. */
export class ToolTimeoutError extends ReinsError {
  readonly toolName: string;
  readonly timeoutMs: number;
  readonly kind: TimeoutKind;

  constructor(toolName: string, timeoutMs: number, kind: TimeoutKind) {
    super(
      "tool_timeout",
      kind === "total"
        ? `Tool "${toolName}" exceeded wall-clock limit of ${formatSeconds(timeoutMs)}s.`
        : `Tool "${toolName}": No progress for ${formatSeconds(timeoutMs)}s (idle timeout).`,
      { data: { toolName, timeoutMs, kind } },
    );
    this.toolName = toolName;
    this.timeoutMs = timeoutMs;
    this.kind = kind;
  }
}

/** Why a turn (or one of its calls) was cancelled; the reason shows in results and events. */
export type AbortReason = (typeof ABORT_REASONS)[number];

/** The abort reason object placed on a turn's AbortSignal. */
export class TurnAbortedError extends ReinsError {
  readonly reason: AbortReason;

  constructor(reason: AbortReason) {
    super("turn_aborted", `Turn aborted (${reason}).`, { data: { reason } });
    this.reason = reason;
  }
}

/** A model engine failed: bad script, provider error, unexpected stream. */
export class ModelError extends ReinsError {
  constructor(message: string, options: { data?: Record<string, unknown>; cause?: unknown } = {}) {
    super("model_error", message, options);
  }
}

/** Seconds for messages: whole numbers stay whole (`120s`), fractions keep up to three digits (`0.25s`). */
export function formatSeconds(milliseconds: number): string {
  const seconds = milliseconds / 1000;
  return Number.isInteger(seconds) ? String(seconds) : String(Number(seconds.toFixed(3)));
}
