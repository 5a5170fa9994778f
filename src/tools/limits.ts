/**
 * Resolution of a call's limits (docs/semantics.md#timeouts): configured per-tool override, else the tool's
 * own, else the defaults; a call may ask for its own wall-clock limit with `input._meta.timeout`, bounded by
 * `maxCallTimeoutMs`. `_meta` is stripped before the tool sees its input.
 */
import { clampTimeouts, type TimeoutPair } from "../config/clamp.js";
import type { ToolOverride } from "../config/schema.js";
import type { ToolDefinition } from "./types.js";

export type LimitSettings = {
  defaults: TimeoutPair;
  maxCallTimeoutMs: number;
  overrides: Record<string, ToolOverride>;
};

export type ResolvedCall = {
  limits: TimeoutPair;
  /** The input without `_meta`. */
  input: Record<string, unknown>;
  meta: Record<string, unknown>;
  warnings: string[];
};

/** A call's input as its tool gets it: without `_meta`, which is for reins. */
export function inputWithoutMeta(rawInput: Record<string, unknown>): Record<string, unknown> {
  const { _meta: _ignored, ...input } = rawInput;
  return input;
}

export function resolveCall(
  tool: Pick<ToolDefinition, "name" | "timeoutMs" | "idleTimeoutMs"> | undefined,
  rawInput: Record<string, unknown>,
  settings: LimitSettings,
): ResolvedCall {
  const input = inputWithoutMeta(rawInput);
  const rawMeta = rawInput._meta;
  const meta = isRecord(rawMeta) ? rawMeta : {};
  const warnings: string[] = [];
  const override = tool ? settings.overrides[tool.name] : undefined;
  let timeoutMs = override?.timeoutMs ?? tool?.timeoutMs ?? settings.defaults.timeoutMs;
  const idleTimeoutMs = override?.idleTimeoutMs ?? tool?.idleTimeoutMs ?? settings.defaults.idleTimeoutMs;

  if (meta.timeout !== undefined) {
    const requested = meta.timeout;
    if (typeof requested === "number" && Number.isFinite(requested) && requested > 0) {
      // rounded up: a fraction of a millisecond must not become 0, which would mean no limit
      timeoutMs = Math.min(Math.ceil(requested), settings.maxCallTimeoutMs);
      if (requested > settings.maxCallTimeoutMs) {
        warnings.push(
          `_meta.timeout ${requested} exceeds maxCallTimeoutMs ${settings.maxCallTimeoutMs}; bounded to it.`,
        );
      }
    } else {
      warnings.push(
        `_meta.timeout must be a positive number of milliseconds; ignored ${JSON.stringify(requested)}.`,
      );
    }
  }
  const clamped = clampTimeouts({ timeoutMs, idleTimeoutMs }, tool?.name ?? "tool");
  return { limits: clamped.value, input, meta, warnings: [...warnings, ...clamped.warnings] };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
