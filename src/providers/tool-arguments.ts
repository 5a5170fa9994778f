/**
 * Tool-call arguments as the model streamed them (a JSON text), made into the input object. Text that
 * is not a JSON object is kept under `_invalidArguments`, so the call fails validation with a result
 * the model can read, instead of ending the turn.
 */
export function parseToolArguments(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === "object" && value !== null && !Array.isArray(value))
      return value as Record<string, unknown>;
  } catch {
    // fall through
  }
  return { _invalidArguments: text };
}
