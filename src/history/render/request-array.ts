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

/** A request's messages and the call that says they were sent (it frees them once, if still the last). */
export type LentMessages = { messages: ProviderMessage[]; release: () => void };

export class RequestArray {
  /** What the last build handed out; one record per build, though builds may share an array. */
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
  ): LentMessages {
    const reusable = this.released ? this.last : undefined;
    let array: ProviderMessage[];
    if (reusable !== undefined && sameLeading(reusable.leading, leading)) {
      // Committed messages only grow, and a push replaces at most the last entry (the adapters), so the
      // entries before the previous last committed one stand; the request's own tail goes too.
      const from = reusable.committed - 1;
      array = reusable.array;
      array.length = leading.length + from;
      for (let index = from; index < committed.length; index++) array.push(committed[index]!);
      for (let index = 1; index < tail.length; index++) array.push(tail[index]!);
      array[leading.length + committed.length - 1] = tail[0]!;
    } else {
      array = joinedRequest(leading, committed, tail);
    }
    const handedOut: HandedOut = { array, leading, committed: committed.length };
    this.last = handedOut;
    this.released = false;
    return {
      messages: array,
      // a request released twice, or after a later build took its array, frees nothing
      release: () => {
        if (this.last === handedOut) this.released = true;
      },
    };
  }
}

/**
 * `leading`, the `committed` messages and the tail (its first entry in place of the last committed
 * message) in one new array, sized once: pushing the tail onto a copy would copy it all again.
 */
export function joinedRequest(
  leading: readonly ProviderMessage[],
  committed: readonly ProviderMessage[],
  tail: readonly ProviderMessage[],
): ProviderMessage[] {
  const array = leading.concat(committed, tail.slice(1));
  array[leading.length + committed.length - 1] = tail[0]!;
  return array;
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
