/**
 * The array of provider messages a session's requests go out in, reused by the next render once the
 * request that carried it is released (sent): the render an inference pays then appends what the
 * session added instead of copying every committed message again — a 100k-block session's request
 * holds tens of thousands of messages, and copying them was half of that render. An array not yet
 * released belongs to its request: the next render builds a new one and the old one never changes.
 */
import type { ProviderMessage } from "./transcript-state.js";

type HandedOut = {
  array: ProviderMessage[];
  /** The messages the array starts with (a system message). */
  leading: readonly ProviderMessage[];
  /** How many committed messages follow them. */
  committed: number;
};

export class RequestArray {
  private last: HandedOut | undefined;
  private released = false;

  /**
   * `leading`, then the `committed` messages (at least one), then `tail`: its first entry is the last
   * committed message or what replaces it in this request (Anthropic's user text joining the tool
   * results before it), the rest follow.
   */
  build(
    leading: readonly ProviderMessage[],
    committed: readonly ProviderMessage[],
    tail: readonly ProviderMessage[],
  ): ProviderMessage[] {
    const reusable = this.released ? this.last : undefined;
    let array: ProviderMessage[];
    if (reusable !== undefined && sameLeading(reusable.leading, leading)) {
      // Committed messages only grow, and a push replaces at most the last entry (the adapters), so the
      // entries before the previous last committed one stand; the request's own tail goes too.
      const from = Math.max(reusable.committed - 1, 0);
      array = reusable.array;
      array.length = leading.length + from;
      for (let index = from; index < committed.length; index++) array.push(committed[index]!);
    } else {
      array = leading.concat(committed);
    }
    array[array.length - 1] = tail[0]!;
    for (let index = 1; index < tail.length; index++) array.push(tail[index]!);
    this.last = { array, leading, committed: committed.length };
    this.released = false;
    return array;
  }

  /** `array` was sent and is read no more: the next build may reuse it if it is the last one built. */
  release(array: readonly ProviderMessage[]): void {
    if (this.last?.array === array) this.released = true;
  }
}

/** Leading messages are system messages whose text is the agent's instructions. */
function sameLeading(left: readonly ProviderMessage[], right: readonly ProviderMessage[]): boolean {
  if (left.length !== right.length) return false;
  for (let index = 0; index < left.length; index++) {
    if (left[index]!.role !== right[index]!.role || left[index]!.content !== right[index]!.content)
      return false;
  }
  return true;
}
