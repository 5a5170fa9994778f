/**
 * A real SSE client for tests: `fetch` plus eventsource-parser. Events are parsed as they arrive;
 * `next(predicate)` waits for one, `untilEnd()` for the stream to close, `cancel()` drops the
 * connection (a client going away).
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { TurnEvent } from "../../src/events.js";

export type SseMessage = {
  id: string | undefined;
  event: string | undefined;
  data: string;
  received: number;
};

export class SseStream {
  readonly messages: SseMessage[] = [];
  readonly raw: string[] = [];
  readonly response: Response;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private ended = false;
  private readonly waiters = new Set<() => void>();
  readonly done: Promise<void>;

  private constructor(response: Response) {
    this.response = response;
    if (!response.body) throw new Error("response has no body");
    const reader = response.body.getReader();
    this.reader = reader;
    const parser = createParser({
      onEvent: (message: EventSourceMessage) => {
        this.messages.push({
          id: message.id,
          event: message.event,
          data: message.data,
          received: Date.now(),
        });
        this.wake();
      },
    });
    const decoder = new TextDecoder();
    this.done = (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          const text = decoder.decode(value, { stream: true });
          this.raw.push(text);
          parser.feed(text);
        }
      } catch {
        // cancelled or connection reset
      } finally {
        this.ended = true;
        this.wake();
      }
    })();
  }

  static async open(url: string, init: RequestInit = {}): Promise<SseStream> {
    const response = await fetch(url, init);
    if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
    return new SseStream(response);
  }

  /** Starts a turn with `POST /api/sessions/stream`. */
  static start(baseUrl: string, body: Record<string, unknown>): Promise<SseStream> {
    return SseStream.open(`${baseUrl}/api/sessions/stream`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  }

  /** Turn events (pings excluded), parsed. */
  get events(): TurnEvent[] {
    return this.messages
      .filter((message) => message.event !== "ping")
      .map((message) => JSON.parse(message.data) as TurnEvent);
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /** Waits for the first turn event matching `predicate` (already received ones count). */
  async next(predicate: (event: TurnEvent) => boolean, timeoutMs = 15_000): Promise<TurnEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.find(predicate);
      if (found) return found;
      if (this.ended) throw new Error(`stream ended without the event; got ${this.types().join(", ")}`);
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for event; got ${this.types().join(", ")}`);
      await this.wait(deadline - Date.now());
    }
  }

  /** Waits until the server closes the stream; returns all turn events. */
  async untilEnd(timeoutMs = 20_000): Promise<TurnEvent[]> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.done,
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`stream did not end; got ${this.types().join(", ")}`)),
          timeoutMs,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    return this.events;
  }

  types(): string[] {
    return this.events.map((event) => event.type);
  }

  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => {});
    await this.done;
  }

  private wait(ms: number): Promise<void> {
    return new Promise((resolveWait) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolveWait();
      };
      const timer = setTimeout(wake, Math.max(ms, 0));
      this.waiters.add(wake);
    });
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}

export function turnIdOf(stream: SseStream): string {
  const start = stream.events.find((event) => event.type === "turn_start");
  if (!start) throw new Error("no turn_start yet");
  return start.turnId;
}

export function sessionIdOf(stream: SseStream): string {
  const start = stream.events.find((event) => event.type === "turn_start");
  if (!start || start.type !== "turn_start") throw new Error("no turn_start yet");
  return start.sessionId;
}
