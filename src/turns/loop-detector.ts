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
    const signature = `${name} ${stableStringify(input, "_meta")}`;
    const { recent } = this;
    recent.push(signature);
    if (recent.length > this.settings.windowSize) recent.shift();
    let repeats = 0;
    for (const entry of recent) if (entry === signature) repeats++;
    const action =
      repeats >= this.settings.stopAt ? "stop" : repeats >= this.settings.warnAt ? "warn" : "none";
    return { repeats, action };
  }
}

/**
 * JSON with object keys sorted at every level, so key order never hides a repeat; `omitKey` is left out
 * of the top-level object.
 */
export function stableStringify(value: unknown, omitKey?: string): string {
  if (Array.isArray(value)) return `[${value.map((item) => stableStringify(item)).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.keys(value)
      .filter((key) => key !== omitKey)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${stableStringify((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
