/**
 * A turn's events as an async iterable that survives a dropped connection: when the stream ends or
 * breaks before the terminal event, it waits and reopens the turn's stream with `Last-Event-ID` (the
 * seq of the last event it yielded), so nothing is lost and nothing repeats; a 204 means the turn has
 * ended and everything was received. A reopening the server refuses for now (429: the place of the
 * dropped stream is not free yet; 502–504: a proxy or a restart in between) is a failed attempt too,
 * retried after its `Retry-After` when that is longer; any other refusal is raised at once. Gives up
 * after `maxReconnects` failed attempts in a row. The signal cancels everything: the open request, the
 * stream and the wait between attempts.
 */
import { apiErrorOf } from "./api-error.js";
import { readSse } from "./sse-reader.js";
import type { TurnEvent } from "./types.js";

/** The events that end a turn (one per turn), as src/events.ts defines them. */
const TERMINAL_EVENT_TYPES: ReadonlySet<string> = new Set(["turn_complete", "turn_abort"]);

export type TurnEventStreamOptions = {
  /** Opens the first stream (`POST /api/sessions/stream`, or `GET /api/turns/{id}/events`). */
  open: (signal: AbortSignal | undefined) => Promise<Response>;
  /** Reopens the turn's stream after `lastSeq` (`GET /api/turns/{id}/events` with `Last-Event-ID`). */
  resume: (turnId: string, lastSeq: number, signal: AbortSignal | undefined) => Promise<Response>;
  /** The turn, when known before its first event (following an existing turn). */
  turnId?: string;
  /** The seq already held: events at or before it are not yielded again. */
  lastSeq?: number;
  /** Wait before reconnecting; undefined: what the stream's `retry:` asked for. */
  reconnectDelayMs?: number;
  maxReconnects: number;
  signal?: AbortSignal;
};

/** The wait before a reconnect when neither the caller nor the server said (the server says 2000). */
const FALLBACK_RECONNECT_DELAY_MS = 2_000;
/** Refusals of a reopening that may pass: retried like a dropped connection. */
const PASSING_REFUSALS: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/** The stream could not be resumed: dropped before the turn was known, or too many failed attempts. */
export class TurnStreamLostError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

export async function* turnEventStream(options: TurnEventStreamOptions): AsyncGenerator<TurnEvent> {
  const { signal } = options;
  let turnId = options.turnId;
  let lastSeq = options.lastSeq ?? 0;
  let serverRetryMs = FALLBACK_RECONNECT_DELAY_MS;
  let failures = 0;
  let lastFailure: unknown;
  for (let attempt = 0; ; attempt += 1) {
    signal?.throwIfAborted();
    let response: Response | undefined;
    try {
      response =
        attempt === 0 ? await options.open(signal) : await options.resume(turnId ?? "", lastSeq, signal);
    } catch (error) {
      // a first POST is not repeated: it would start another turn
      if (signal?.aborted || attempt === 0) throw error;
      lastFailure = error;
    }
    /** What this attempt's refusal's `Retry-After` asked for (0: nothing). */
    let retryAfterMs = 0;
    if (response?.ok === false) {
      const refusal = await apiErrorOf(response);
      // a first request is never repeated (a POST would start another turn)
      if (attempt === 0 || !PASSING_REFUSALS.has(response.status)) throw refusal;
      lastFailure = refusal;
      retryAfterMs = retryAfterMsOf(response);
    } else if (response) {
      if (response.status === 204) return;
      try {
        for await (const field of readSse(response.body ?? emptyBody())) {
          if (field.kind === "retry") {
            serverRetryMs = field.retryMs;
            continue;
          }
          if (field.message.event === "ping") continue;
          const event = JSON.parse(field.message.data) as TurnEvent;
          if (event.seq <= lastSeq) continue;
          turnId = event.turnId;
          lastSeq = event.seq;
          failures = 0;
          yield event;
          if (TERMINAL_EVENT_TYPES.has(event.type)) return;
        }
        lastFailure = new Error("the stream ended before the turn's terminal event");
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (error instanceof SyntaxError) throw error;
        lastFailure = error;
      }
    }
    if (turnId === undefined) {
      throw new TurnStreamLostError("The stream dropped before the turn's first event: nothing to resume", {
        cause: lastFailure,
      });
    }
    failures += 1;
    if (failures > options.maxReconnects) {
      throw new TurnStreamLostError(
        `Turn ${turnId}: the stream could not be resumed after ${options.maxReconnects} attempts`,
        { cause: lastFailure },
      );
    }
    await wait(Math.max(options.reconnectDelayMs ?? serverRetryMs, retryAfterMs), signal);
  }
}

/** A `Retry-After` of whole seconds, in milliseconds (0 when there is none or it is a date). */
function retryAfterMsOf(response: Response): number {
  const seconds = Number(response.headers.get("retry-after") ?? "");
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0;
}

function emptyBody(): ReadableStream<Uint8Array> {
  return new ReadableStream({ start: (controller) => controller.close() });
}

/** Resolves after `delayMs`, or rejects with the signal's reason as soon as it aborts. */
function wait(delayMs: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, delayMs);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
