/**
 * Open SSE streams per principal (docs/semantics.md#isolation-and-limits, `MAX_STREAMS_PER_PRINCIPAL`). A
 * stream takes a lease when its response starts and gives it back when the stream ends, however it ends (the
 * turn ended and what was sent has left the server — sse.ts — or the client went away); the unauthenticated
 * principal (`null`, auth off) is one principal like any other.
 */

/** Gives a stream's place back; calling it again does nothing. */
export type StreamRelease = () => void;

export class StreamLimits {
  private readonly open = new Map<string | null, number>();

  constructor(readonly maxPerPrincipal: number) {}

  /** A lease for one more stream of `principal`, or undefined when it already holds the maximum. */
  acquire(principal: string | null): StreamRelease | undefined {
    const count = this.openStreamsOf(principal);
    if (count >= this.maxPerPrincipal) return undefined;
    this.open.set(principal, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const remaining = this.openStreamsOf(principal) - 1;
      if (remaining > 0) this.open.set(principal, remaining);
      else this.open.delete(principal);
    };
  }

  openStreamsOf(principal: string | null): number {
    return this.open.get(principal) ?? 0;
  }
}
