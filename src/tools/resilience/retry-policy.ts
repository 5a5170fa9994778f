/**
 * Retry policy (docs/semantics.md#resilience): transient failures are retried after 100, 200, 400, 800 ms
 * (×2, capped at 800) with ±10 % jitter, at most 5 attempts, and no attempt starts once 2 s have passed since
 * the first began. Permanent failures are never retried. A tool may override any field.
 *
 * Timeouts count as transient (for the circuit breaker) but are not retried unless a tool opts in
 * with `retryOnTimeout`: a wall-clock limit caps the call, and retrying would multiply it.
 */
export type RetryPolicy = {
  maxAttempts: number;
  initialDelayMs: number;
  multiplier: number;
  maxDelayMs: number;
  /** ±fraction of the delay, e.g. 0.1 for ±10 %. */
  jitterRatio: number;
  /** No retry starts later than this after the first attempt began. */
  maxRetryTimeMs: number;
  retryOnTimeout: boolean;
};

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  maxAttempts: 5,
  initialDelayMs: 100,
  multiplier: 2,
  maxDelayMs: 800,
  jitterRatio: 0.1,
  maxRetryTimeMs: 2_000,
  retryOnTimeout: false,
});

/** The delay before retry number `retry` (1 for the first retry), jittered by `random` ∈ [0, 1). */
export function retryDelayMs(policy: RetryPolicy, retry: number, random: () => number = Math.random): number {
  const base = Math.min(policy.initialDelayMs * policy.multiplier ** (retry - 1), policy.maxDelayMs);
  const jitter = (random() * 2 - 1) * policy.jitterRatio;
  return Math.max(0, Math.round(base * (1 + jitter)));
}

export type RetryDecision = { retry: true; delayMs: number } | { retry: false; reason: string };

/**
 * Whether a call that has made `attempts` attempts, the first of which began `elapsedMs` ago, should
 * try again after a transient failure.
 */
export function decideRetry(
  policy: RetryPolicy,
  attempts: number,
  elapsedMs: number,
  random: () => number = Math.random,
): RetryDecision {
  if (attempts >= policy.maxAttempts) {
    return { retry: false, reason: `attempt limit of ${policy.maxAttempts} reached` };
  }
  const delayMs = retryDelayMs(policy, attempts, random);
  if (elapsedMs + delayMs > policy.maxRetryTimeMs) {
    return { retry: false, reason: `retry time limit of ${policy.maxRetryTimeMs}ms reached` };
  }
  return { retry: true, delayMs };
}

/** Waits `ms`, resolving false early (and clearing its timer) if any of `signals` aborts. */
export function abortableDelay(ms: number, signals: readonly (AbortSignal | undefined)[]): Promise<boolean> {
  const live = signals.filter((signal): signal is AbortSignal => signal !== undefined);
  if (live.some((signal) => signal.aborted)) return Promise.resolve(false);
  // no timer for no wait: a setTimeout(…, 0) would still cost Node's minimum of 1 ms
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const finish = (completed: boolean) => {
      clearTimeout(timer);
      for (const signal of live) signal.removeEventListener("abort", onAbort);
      resolve(completed);
    };
    const onAbort = () => finish(false);
    const timer = setTimeout(() => finish(true), ms);
    for (const signal of live) signal.addEventListener("abort", onAbort, { once: true });
  });
}
