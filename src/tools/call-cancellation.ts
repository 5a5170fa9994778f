/**
 * Cancelling one call of a running batch (docs/semantics.md#cancellation), without an AbortController per
 * call. A running call listens here with a plain callback; an AbortSignal is made only for the waits
 * that take one (an approval, a retry's backoff), and only when such a wait asks. So a call costs one
 * controller, its attempt's — the signal its tool sees.
 */
export class CallCancellation {
  /** Calls of the running batch, which may be cancelled. */
  private readonly open = new Set<string>();
  /** Reasons of the calls cancelled, while their batch runs. */
  private readonly reasons = new Map<string, unknown>();
  private readonly listeners = new Map<string, Set<() => void>>();
  /** Signals made for waits, by call. */
  private readonly controllers = new Map<string, AbortController>();

  /** Makes the calls of a batch cancellable. */
  openCalls(callIds: Iterable<string>): void {
    for (const callId of callIds) this.open.add(callId);
  }

  /** Forgets the calls of a finished batch: they can no longer be cancelled. */
  closeCalls(callIds: Iterable<string>): void {
    for (const callId of callIds) {
      this.open.delete(callId);
      this.reasons.delete(callId);
      this.listeners.delete(callId);
      this.controllers.delete(callId);
    }
  }

  /** Cancels an open call: its listeners run once; false when it is not open or already cancelled. */
  cancel(callId: string, reason: unknown): boolean {
    if (!this.open.has(callId) || this.reasons.has(callId)) return false;
    this.reasons.set(callId, reason);
    this.controllers.get(callId)?.abort(reason);
    const listeners = this.listeners.get(callId);
    this.listeners.delete(callId);
    for (const listener of listeners ?? []) listener();
    return true;
  }

  isOpen(callId: string): boolean {
    return this.open.has(callId) && !this.reasons.has(callId);
  }

  isCancelled(callId: string): boolean {
    return this.reasons.has(callId);
  }

  /** Why the call was cancelled (undefined while it is not). */
  reasonOf(callId: string): unknown {
    return this.reasons.get(callId);
  }

  /** Runs `listener` once when the call is cancelled; returns its remover. */
  onCancel(callId: string, listener: () => void): () => void {
    let listeners = this.listeners.get(callId);
    if (!listeners) {
      listeners = new Set();
      this.listeners.set(callId, listeners);
    }
    listeners.add(listener);
    return () => this.listeners.get(callId)?.delete(listener);
  }

  /** A signal that aborts when the call is cancelled, for waits that take signals; made on first use. */
  signal(callId: string): AbortSignal {
    let controller = this.controllers.get(callId);
    if (!controller) {
      controller = new AbortController();
      if (this.reasons.has(callId)) controller.abort(this.reasons.get(callId));
      if (this.open.has(callId)) this.controllers.set(callId, controller);
    }
    return controller.signal;
  }
}
