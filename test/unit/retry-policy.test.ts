/**
 * The retry policy (docs/semantics.md#resilience): exact backoff delays, jitter bounds, the attempt and
 * retry-time caps, and the abortable wait between attempts (fake timers; no leaked timers
 * or listeners).
 */
import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  abortableDelay,
  decideRetry,
  DEFAULT_RETRY_POLICY,
  retryDelayMs,
  type RetryPolicy,
} from "../../src/tools/resilience/retry-policy.js";

const NO_JITTER = () => 0.5;
const LOWEST = () => 0;
/** The largest value below 1 a `Math.random` can return. */
const HIGHEST = () => 1 - Number.EPSILON;

describe("DEFAULT_RETRY_POLICY", () => {
  it("is the documented policy and cannot be changed by accident", () => {
    expect(DEFAULT_RETRY_POLICY).toEqual({
      maxAttempts: 5,
      initialDelayMs: 100,
      multiplier: 2,
      maxDelayMs: 800,
      jitterRatio: 0.1,
      maxRetryTimeMs: 2_000,
      retryOnTimeout: false,
    });
    expect(Object.isFrozen(DEFAULT_RETRY_POLICY)).toBe(true);
  });
});

describe("retryDelayMs", () => {
  it("without jitter: 100, 200, 400, 800, then capped at 800", () => {
    const delays = [1, 2, 3, 4, 5, 6].map((retry) => retryDelayMs(DEFAULT_RETRY_POLICY, retry, NO_JITTER));
    expect(delays).toEqual([100, 200, 400, 800, 800, 800]);
  });

  it.each([
    { retry: 1, low: 90, high: 110 },
    { retry: 2, low: 180, high: 220 },
    { retry: 3, low: 360, high: 440 },
    { retry: 4, low: 720, high: 880 },
    { retry: 5, low: 720, high: 880 },
  ])("retry $retry: jitter stays within ±10% ($low … $high)", ({ retry, low, high }) => {
    expect(retryDelayMs(DEFAULT_RETRY_POLICY, retry, LOWEST)).toBe(low);
    expect(retryDelayMs(DEFAULT_RETRY_POLICY, retry, HIGHEST)).toBe(high);
    for (const value of [0.1, 0.25, 0.75, 0.9]) {
      const delay = retryDelayMs(DEFAULT_RETRY_POLICY, retry, () => value);
      expect(delay).toBeGreaterThanOrEqual(low);
      expect(delay).toBeLessThanOrEqual(high);
    }
  });

  it("jitter moves the delay with the random value", () => {
    expect(retryDelayMs(DEFAULT_RETRY_POLICY, 1, () => 0.25)).toBe(95);
    expect(retryDelayMs(DEFAULT_RETRY_POLICY, 1, () => 0.75)).toBe(105);
  });

  it("follows a tool's own policy", () => {
    const policy: RetryPolicy = {
      ...DEFAULT_RETRY_POLICY,
      initialDelayMs: 50,
      multiplier: 3,
      maxDelayMs: 1000,
      jitterRatio: 0,
    };
    const delays = [1, 2, 3, 4, 5].map((retry) => retryDelayMs(policy, retry, HIGHEST));
    expect(delays).toEqual([50, 150, 450, 1000, 1000]);
  });
});

describe("decideRetry", () => {
  it("retries after each of the first four attempts with the backoff delay", () => {
    expect([1, 2, 3, 4].map((attempts) => decideRetry(DEFAULT_RETRY_POLICY, attempts, 0, NO_JITTER))).toEqual(
      [
        { retry: true, delayMs: 100 },
        { retry: true, delayMs: 200 },
        { retry: true, delayMs: 400 },
        { retry: true, delayMs: 800 },
      ],
    );
  });

  it("stops after the 5th attempt, saying why", () => {
    expect(decideRetry(DEFAULT_RETRY_POLICY, 5, 0, NO_JITTER)).toEqual({
      retry: false,
      reason: "attempt limit of 5 reached",
    });
    expect(decideRetry(DEFAULT_RETRY_POLICY, 6, 0, NO_JITTER).retry).toBe(false);
  });

  it("honours a tool's own attempt limit", () => {
    const once: RetryPolicy = { ...DEFAULT_RETRY_POLICY, maxAttempts: 1 };
    expect(decideRetry(once, 1, 0, NO_JITTER)).toEqual({
      retry: false,
      reason: "attempt limit of 1 reached",
    });
  });

  it("no retry would start more than 2s after the first attempt began", () => {
    // After the 2nd attempt the next delay is 200 ms: 1900 + 200 > 2000.
    expect(decideRetry(DEFAULT_RETRY_POLICY, 2, 1900, NO_JITTER)).toEqual({
      retry: false,
      reason: "retry time limit of 2000ms reached",
    });
  });

  it("a retry starting exactly at the limit is allowed, one a millisecond later is not", () => {
    expect(decideRetry(DEFAULT_RETRY_POLICY, 2, 1800, NO_JITTER)).toEqual({ retry: true, delayMs: 200 });
    expect(decideRetry(DEFAULT_RETRY_POLICY, 2, 1801, NO_JITTER).retry).toBe(false);
  });

  it("the time cap uses the jittered delay", () => {
    // Base 800 ms; with jitter down to 720 it fits in 2000 − 1250, up to 880 it does not.
    expect(decideRetry(DEFAULT_RETRY_POLICY, 4, 1250, LOWEST)).toEqual({ retry: true, delayMs: 720 });
    expect(decideRetry(DEFAULT_RETRY_POLICY, 4, 1250, HIGHEST).retry).toBe(false);
  });

  it("the attempt cap is checked before the time cap", () => {
    expect(decideRetry(DEFAULT_RETRY_POLICY, 5, 10_000, NO_JITTER)).toEqual({
      retry: false,
      reason: "attempt limit of 5 reached",
    });
  });
});

describe("abortableDelay", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });

  afterEach(() => {
    vi.clearAllTimers();
    vi.useRealTimers();
  });

  function track(promise: Promise<boolean>) {
    const state: { value?: boolean } = {};
    void promise.then((value) => {
      state.value = value;
    });
    return state;
  }

  it("resolves true at n ms, not at n−1, and leaves nothing behind", async () => {
    const turn = new AbortController();
    const call = new AbortController();
    const state = track(abortableDelay(400, [turn.signal, call.signal]));
    expect(vi.getTimerCount()).toBe(1);
    expect(getEventListeners(turn.signal, "abort")).toHaveLength(1);

    await vi.advanceTimersByTimeAsync(399);
    expect(state.value).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(state.value).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(turn.signal, "abort")).toHaveLength(0);
    expect(getEventListeners(call.signal, "abort")).toHaveLength(0);
  });

  it.each([
    { which: "the first signal", index: 0 },
    { which: "the second signal", index: 1 },
  ])("resolves false at once when $which aborts, clearing its timer and listeners", async ({ index }) => {
    const controllers = [new AbortController(), new AbortController()];
    const state = track(
      abortableDelay(
        800,
        controllers.map((controller) => controller.signal),
      ),
    );
    await vi.advanceTimersByTimeAsync(300);
    expect(state.value).toBeUndefined();

    controllers[index]?.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(state.value).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    for (const controller of controllers) {
      expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    }
  });

  it("an already-aborted signal resolves false without starting a timer or listening", async () => {
    const aborted = new AbortController();
    aborted.abort();
    const live = new AbortController();
    const state = track(abortableDelay(100, [live.signal, aborted.signal]));
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(state.value).toBe(false);
    expect(getEventListeners(live.signal, "abort")).toHaveLength(0);
    expect(getEventListeners(aborted.signal, "abort")).toHaveLength(0);
  });

  it("ignores undefined entries (a call without its own signal)", async () => {
    const turn = new AbortController();
    const state = track(abortableDelay(100, [turn.signal, undefined]));
    await vi.advanceTimersByTimeAsync(100);
    expect(state.value).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("an abort after the delay completed changes nothing", async () => {
    const turn = new AbortController();
    const promise = abortableDelay(100, [turn.signal]);
    await vi.advanceTimersByTimeAsync(100);
    turn.abort();
    await expect(promise).resolves.toBe(true);
  });
});

describe("abortableDelay of zero", () => {
  it("resolves without a timer (no minimum 1 ms wait), but still reports an aborted signal", async () => {
    vi.useFakeTimers();
    try {
      const pending = abortableDelay(0, []);
      expect(vi.getTimerCount()).toBe(0);
      expect(await pending).toBe(true);
      const aborted = new AbortController();
      aborted.abort();
      expect(await abortableDelay(0, [aborted.signal])).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });
});
