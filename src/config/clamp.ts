/**
 * The §5.1 clamp rules: timeouts that are contradictory or negative are corrected with a warning
 * rather than refused, because the intent is clear and a running deployment should not fail on them.
 */
export type TimeoutPair = { timeoutMs: number; idleTimeoutMs: number };

/**
 * Negative values become 0 (none); an idle limit above the total limit is lowered to the total.
 * Returns the corrected pair and one warning per correction, naming `label`.
 */
export function clampTimeouts(pair: TimeoutPair, label: string): { value: TimeoutPair; warnings: string[] } {
  const warnings: string[] = [];
  let { timeoutMs, idleTimeoutMs } = pair;
  if (timeoutMs < 0) {
    warnings.push(`${label}.timeoutMs is negative (${timeoutMs}); treated as 0 (no wall-clock limit).`);
    timeoutMs = 0;
  }
  if (idleTimeoutMs < 0) {
    warnings.push(`${label}.idleTimeoutMs is negative (${idleTimeoutMs}); treated as 0 (no idle limit).`);
    idleTimeoutMs = 0;
  }
  if (timeoutMs > 0 && idleTimeoutMs > timeoutMs) {
    warnings.push(
      `${label}.idleTimeoutMs (${idleTimeoutMs}) exceeds ${label}.timeoutMs (${timeoutMs}); clamped to ${timeoutMs}.`,
    );
    idleTimeoutMs = timeoutMs;
  }
  return { value: { timeoutMs, idleTimeoutMs }, warnings };
}
