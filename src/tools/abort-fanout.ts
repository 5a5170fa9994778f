/**
 * One `abort` listener per signal, however many calls wait on it. Every running call of a turn waits on
 * the turn's signal; adding and removing a listener of Node's `EventTarget` cost about 8 µs a call
 * (measured), a set entry a small fraction of that. The listener is added for the first callback and
 * removed with the last, so nothing stays on a signal nobody waits on. When the signal aborts, the
 * callbacks registered then run in the order they were registered, as listeners would: one removed by
 * an earlier one does not run; a callback that throws is reported as uncaught, as a throwing
 * listener's would be, and the others still run.
 */

type Waiters = { callbacks: Set<() => void>; listener: () => void };

const waitersBySignal = new WeakMap<AbortSignal, Waiters>();

/**
 * Runs `callback` once when `signal` aborts; returns its remover. Call it with a signal that has not
 * aborted yet (the callback would never run).
 */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  let waiters = waitersBySignal.get(signal);
  if (!waiters) {
    const callbacks = new Set<() => void>();
    const listener = () => {
      waitersBySignal.delete(signal);
      runAll(callbacks);
    };
    waiters = { callbacks, listener };
    waitersBySignal.set(signal, waiters);
    signal.addEventListener("abort", listener, { once: true });
  }
  const { callbacks, listener } = waiters;
  callbacks.add(callback);
  return () => {
    if (!callbacks.delete(callback) || callbacks.size > 0) return;
    waitersBySignal.delete(signal);
    signal.removeEventListener("abort", listener);
  };
}

function runAll(callbacks: Set<() => void>): void {
  for (const callback of [...callbacks]) {
    if (!callbacks.delete(callback)) continue;
    try {
      callback();
    } catch (error) {
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}
