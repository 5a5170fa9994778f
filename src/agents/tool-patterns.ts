/**
 * Tool names and `*` patterns (docs/semantics.md#agents, docs/semantics.md#approval): an agent's `tools` and
 * `approval` entries name tools exactly (`web_fetch`) or with `*` standing for any run of characters
 * (`docs__*`, `*`).
 */

/** Whether `name` matches `pattern` (`*` matches any run of characters, including none). */
export function matchesToolPattern(pattern: string, name: string): boolean {
  if (!pattern.includes("*")) return pattern === name;
  const parts = pattern.split("*");
  const first = parts[0] as string;
  const last = parts[parts.length - 1] as string;
  if (!name.startsWith(first) || name.length < first.length + last.length || !name.endsWith(last))
    return false;
  let position = first.length;
  for (const part of parts.slice(1, -1)) {
    const found = name.indexOf(part, position);
    if (found === -1 || found + part.length > name.length - last.length) return false;
    position = found + part.length;
  }
  return true;
}

/** Whether `name` matches any of `patterns`. */
export function matchesAnyToolPattern(patterns: readonly string[], name: string): boolean {
  return patterns.some((pattern) => matchesToolPattern(pattern, name));
}

/**
 * The value of the most specific entry matching `name`: an exact name beats a pattern, a longer
 * pattern (fewer characters left to `*`) beats a shorter one; undefined when none matches.
 */
export function mostSpecificMatch<T>(entries: Readonly<Record<string, T>>, name: string): T | undefined {
  if (Object.hasOwn(entries, name)) return entries[name];
  let best: { length: number; value: T } | undefined;
  for (const [pattern, value] of Object.entries(entries)) {
    if (!pattern.includes("*") || !matchesToolPattern(pattern, name)) continue;
    const length = pattern.replaceAll("*", "").length;
    if (!best || length > best.length) best = { length, value };
  }
  return best?.value;
}
