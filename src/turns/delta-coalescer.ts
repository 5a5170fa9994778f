/**
 * Coalesces a model's text and thinking deltas before they become events
 * (docs/semantics.md#isolation-and-limits): deltas of one kind are merged until `maxChars` characters have
 * gathered or `windowMs` has passed since the first of them, whichever comes first, so the events (and rows)
 * a turn writes grow with its output, not with how finely the provider split it. A change of kind, or the end
 * of the inference, sends what has gathered at once.
 */
import type { EventBody } from "../events.js";

export type DeltaKind = "text_delta" | "thinking_delta";

export type CoalesceSettings = { windowMs: number; maxChars: number };

export const DEFAULT_COALESCE: CoalesceSettings = Object.freeze({ windowMs: 30, maxChars: 2_048 });

export class DeltaCoalescer {
  private kind: DeltaKind | undefined;
  private parts: string[] = [];
  private length = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly emit: (body: EventBody) => void,
    private readonly settings: CoalesceSettings = DEFAULT_COALESCE,
  ) {}

  push(kind: DeltaKind, text: string): void {
    if (text === "") return;
    if (this.kind !== undefined && this.kind !== kind) this.flush();
    this.kind = kind;
    this.parts.push(text);
    this.length += text.length;
    if (this.length >= this.settings.maxChars || this.settings.windowMs === 0) {
      this.flush();
      return;
    }
    this.timer ??= setTimeout(() => this.flush(), this.settings.windowMs);
  }

  /** Sends what has gathered (if anything) and stops the window's timer. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.kind === undefined) return;
    const text = this.parts.length === 1 ? (this.parts[0] as string) : this.parts.join("");
    const kind = this.kind;
    this.kind = undefined;
    this.parts = [];
    this.length = 0;
    this.emit({ type: kind, text });
  }
}
