// @ts-check
/**
 * How the webchat page writes values as text: truncated excerpts, durations, limits and a one-line
 * summary of a tool's input.
 */

const INPUT_SUMMARY_MAX_CHARS = 120;
/** The longest result excerpt shown inline (tool lines, pause summaries). */
export const RESULT_EXCERPT_MAX_CHARS = 160;

/**
 * @param {string} text
 * @param {number} maxChars
 */
export function truncate(text, maxChars) {
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}

/** @param {number} ms */
export function formatDuration(ms) {
  const safe = Math.max(0, ms);
  if (safe < 60_000) return `${(safe / 1000).toFixed(1)} s`;
  const totalSeconds = Math.floor(safe / 1000);
  const minutes = Math.floor(totalSeconds / 60);
  return `${minutes} m ${String(totalSeconds % 60).padStart(2, "0")} s`;
}

/** @param {number} ms */
export function formatLimit(ms) {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** @param {unknown} input */
export function summarizeInput(input) {
  if (input === undefined || input === null) return "";
  let text;
  try {
    text = typeof input === "string" ? input : JSON.stringify(input);
  } catch {
    text = String(input);
  }
  return truncate(text ?? "", INPUT_SUMMARY_MAX_CHARS);
}

/**
 * A turn's token usage in words ("1,234 in · 56 out tokens"), or "" when the provider gave none.
 * @param {{inputTokens?: number, outputTokens?: number} | null | undefined} usage
 */
export function formatUsage(usage) {
  if (!usage || typeof usage.inputTokens !== "number" || typeof usage.outputTokens !== "number") return "";
  return `${usage.inputTokens.toLocaleString("en")} in · ${usage.outputTokens.toLocaleString("en")} out tokens`;
}
