/**
 * How deeply a JSON value nests (docs/semantics.md#isolation-and-limits): request bodies at the HTTP boundary
 * and tool input coming from models are refused beyond `MAX_JSON_DEPTH` levels, because everything downstream
 * that walks a value recursively (`JSON.stringify` in the store, zod, renderers) would overflow the stack on
 * a deep enough one. The check itself is iterative, so it holds for any depth.
 */

/** Deepest nesting of arrays and objects accepted: `[]` and `{}` are depth 1, a scalar depth 0. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether `value` nests arrays or objects more than `max` levels deep. Walks with an explicit stack
 * (never recursion) and stops at the first container found beyond `max`, so the cost is bounded by
 * the size of the value and a cyclic object simply counts as too deep.
 */
export function jsonDepthExceeds(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  if (!isContainer(value)) return false;
  const pending: { container: object; depth: number }[] = [{ container: value, depth: 1 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (next.depth > max) return true;
    for (const child of Object.values(next.container)) {
      if (isContainer(child)) pending.push({ container: child, depth: next.depth + 1 });
    }
  }
  return false;
}

function isContainer(value: unknown): value is object {
  return typeof value === "object" && value !== null;
}
