/**
 * Strings as a provider's JSON parser accepts them. History keeps what it was given, and a string may
 * hold a lone UTF-16 surrogate (half of a character): a client's JSON can escape one, a tool or a
 * model can return one, and cutting a string by length can split a pair. `JSON.stringify` writes it as
 * a `\ud83d` escape, which Anthropic refuses ("The request body is not valid JSON: no low surrogate in
 * string"), so that session could never be continued there. Every string reins sends a provider — what
 * the renderer makes of history, the tools' descriptions and schemas — is made well-formed: each lone
 * surrogate becomes U+FFFD. The same string always gives the same result, so a request's past never
 * changes from one render to the next.
 */

/** `text` with each lone surrogate replaced by U+FFFD; `text` itself when it has none. */
export function wellFormed(text: string): string {
  return text.isWellFormed() ? text : text.toWellFormed();
}

/**
 * A JSON value (a call's input) with every string in it, keys too, made well-formed; `value` itself when
 * every string already is, else a copy of what had to change.
 */
export function wellFormedValue(value: unknown): unknown {
  if (typeof value === "string") return wellFormed(value);
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    const items = value.map(wellFormedValue);
    return items.some((item, index) => item !== value[index]) ? items : value;
  }
  let changed = false;
  const entries = Object.entries(value).map(([key, item]): [string, unknown] => {
    const entry: [string, unknown] = [wellFormed(key), wellFormedValue(item)];
    if (entry[0] !== key || entry[1] !== item) changed = true;
    return entry;
  });
  return changed ? Object.fromEntries(entries) : value;
}
