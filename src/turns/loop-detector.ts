/**
 * The loop detector (docs/semantics.md#scheduling): watches the calls of one turn for the same tool with the
 * same input (keys sorted, `_meta` ignored) within a window of recent calls. It warns at `warnAt` repeats and
 * asks to stop the turn at `stopAt`.
 */
export type LoopDetectorSettings = { windowSize: number; warnAt: number; stopAt: number };

export const DEFAULT_LOOP_DETECTOR: LoopDetectorSettings = Object.freeze({
  windowSize: 20,
  warnAt: 3,
  stopAt: 5,
});

export type LoopVerdict = { repeats: number; action: "none" | "warn" | "stop" };

export class LoopDetector {
  private readonly recent: string[] = [];

  constructor(private readonly settings: LoopDetectorSettings = DEFAULT_LOOP_DETECTOR) {}

  /** Records one call and says how often it has now been seen within the window. */
  observe(name: string, input: Record<string, unknown>): LoopVerdict {
    const { _meta: _ignored, ...rest } = input;
    const signature = `${name} ${stableStringify(rest)}`;
    this.recent.push(signature);
    if (this.recent.length > this.settings.windowSize) this.recent.shift();
    const repeats = this.recent.filter((entry) => entry === signature).length;
    const action =
      repeats >= this.settings.stopAt ? "stop" : repeats >= this.settings.warnAt ? "warn" : "none";
    return { repeats, action };
  }
}

/** JSON with object keys sorted at every level, so key order never hides a repeat. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${stableStringify((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
