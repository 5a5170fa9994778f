/**
 * Tool names a provider accepts (docs/providers.md: `^[a-zA-Z0-9_-]{1,64}$`). A name outside the pattern
 * is rewritten deterministically — every other character becomes `_`, the result is cut to 64
 * characters, and an empty name becomes `tool` — so the same history always renders the same names.
 */

export const MAX_TOOL_NAME_LENGTH = 64;
export const EMPTY_TOOL_NAME_REPLACEMENT = "tool";

const INVALID_TOOL_NAME_CHARACTER = /[^a-zA-Z0-9_-]/g;

/** The provider-safe form of `name` (unchanged when it already matches `pattern`). */
export function sanitizeToolName(name: string, pattern: RegExp): string {
  if (pattern.test(name)) return name;
  const replaced = name.replace(INVALID_TOOL_NAME_CHARACTER, "_").slice(0, MAX_TOOL_NAME_LENGTH);
  return replaced.length > 0 ? replaced : EMPTY_TOOL_NAME_REPLACEMENT;
}

/** Memoizes `sanitizeToolName` for one render: histories repeat a handful of names many times. */
export function createToolNameSanitizer(pattern: RegExp): (name: string) => string {
  const cache = new Map<string, string>();
  let lastName: string | undefined;
  let lastSanitized = "";
  return (name) => {
    // Calls come in runs of the same tool: compare with the previous name before hashing.
    if (name === lastName) return lastSanitized;
    let sanitized = cache.get(name);
    if (sanitized === undefined) {
      sanitized = sanitizeToolName(name, pattern);
      cache.set(name, sanitized);
    }
    lastName = name;
    lastSanitized = sanitized;
    return sanitized;
  };
}
