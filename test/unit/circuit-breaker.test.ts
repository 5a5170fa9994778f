/**
 * The circuit breaker (docs/semantics.md#resilience) on an injected clock: every
 * transition of closed → open → half-open → closed/open, asserted at n−1 and n where time matters, with the
 * transitions reported to the caller's observer and to the registry.
 */
import { describe, expect, it, vi } from "vitest";
import {
  BreakerRegistry,
  CircuitBreaker,
  DEFAULT_BREAKER_SETTINGS,
  type Admission,
  type BreakerTransition,
  type CallResult,
} from "../../src/tools/resilience/circuit-breaker.js";

const OPEN_MS = DEFAULT_BREAKER_SETTINGS.openMs;

function makeBreaker() {
  const clock = { now: 1_000_000 };
  const transitions: BreakerTransition[] = [];
  const breaker = new CircuitBreaker(
    "web_fetch",
    DEFAULT_BREAKER_SETTINGS,
    () => clock.now,
    (transition) => transitions.push(transition),
  );
  return { breaker, clock, transitions };
}

function admitted(admission: Admission): Extract<Admission, { admitted: true }> {
  if (!admission.admitted) throw new Error(`expected admission, got ${JSON.stringify(admission)}`);
  return admission;
}

/** One admitted call that ends with `result`. */
function callWith(breaker: CircuitBreaker, result: CallResult, observer?: (t: BreakerTransition) => void) {
  admitted(breaker.admit(observer)).release(result);
}

/** Opens `breaker` with five consecutive transient failures. */
function open(breaker: CircuitBreaker) {
  for (let index = 0; index < 5; index++) callWith(breaker, "failure");
  expect(breaker.state).toBe("open");
}

describe("DEFAULT_BREAKER_SETTINGS", () => {
  it("opens after 5 failures, for 30s, and closes after 2 probe successes", () => {
    expect(DEFAULT_BREAKER_SETTINGS).toEqual({ failureThreshold: 5, openMs: 30_000, halfOpenSuccesses: 2 });
  });
});

describe("closed", () => {
  it("admits calls and stays closed through 4 consecutive failures; the 5th opens it", () => {
    const { breaker, transitions } = makeBreaker();
    for (let index = 0; index < 4; index++) {
      const admission = admitted(breaker.admit());
      expect(admission.probe).toBe(false);
      admission.release("failure");
      expect(breaker.state).toBe("closed");
    }
    expect(transitions).toEqual([]);

    callWith(breaker, "failure");
    expect(breaker.state).toBe("open");
    expect(transitions).toEqual([{ toolName: "web_fetch", from: "closed", to: "open" }]);
  });

  it("a success resets the count of consecutive failures", () => {
    const { breaker } = makeBreaker();
    for (let index = 0; index < 4; index++) callWith(breaker, "failure");
    callWith(breaker, "success");
    for (let index = 0; index < 4; index++) callWith(breaker, "failure");
    expect(breaker.state).toBe("closed");
    callWith(breaker, "failure");
    expect(breaker.state).toBe("open");
  });

  it("permanent errors (ignored) neither count nor reset the consecutive count", () => {
    const { breaker } = makeBreaker();
    for (let index = 0; index < 20; index++) callWith(breaker, "ignored");
    expect(breaker.state).toBe("closed");

    for (let index = 0; index < 4; index++) {
      callWith(breaker, "failure");
      callWith(breaker, "ignored");
    }
    expect(breaker.state).toBe("closed");
    // Four failures with ignored results in between, then the fifth: still consecutive.
    callWith(breaker, "failure");
    expect(breaker.state).toBe("open");
  });

  it("counts failures of calls that were in flight together", () => {
    const { breaker } = makeBreaker();
    const inFlight = Array.from({ length: 5 }, () => admitted(breaker.admit()));
    expect(breaker.state).toBe("closed");
    for (const admission of inFlight) admission.release("failure");
    expect(breaker.state).toBe("open");
  });
});

describe("open", () => {
  it("rejects fast with how long until a probe is allowed", () => {
    const { breaker, clock } = makeBreaker();
    open(breaker);
    expect(breaker.admit()).toEqual({ admitted: false, state: "open", retryAfterMs: OPEN_MS });
    clock.now += 12_345;
    expect(breaker.admit()).toEqual({ admitted: false, state: "open", retryAfterMs: OPEN_MS - 12_345 });
  });

  it("is still open at openMs − 1 and half-open at openMs", () => {
    const { breaker, clock, transitions } = makeBreaker();
    open(breaker);
    clock.now += OPEN_MS - 1;
    expect(breaker.state).toBe("open");
    expect(breaker.admit()).toEqual({ admitted: false, state: "open", retryAfterMs: 1 });

    clock.now += 1;
    expect(breaker.state).toBe("half_open");
    const probe = admitted(breaker.admit());
    expect(probe.probe).toBe(true);
    expect(transitions.map(({ from, to }) => `${from}→${to}`)).toEqual(["closed→open", "open→half_open"]);
  });

  it("reading the state has no side effects: no transition is reported until a call is admitted", () => {
    const { breaker, clock, transitions } = makeBreaker();
    open(breaker);
    clock.now += OPEN_MS;
    expect(breaker.state).toBe("half_open");
    expect(breaker.state).toBe("half_open");
    expect(transitions).toHaveLength(1);
    breaker.admit();
    expect(transitions).toHaveLength(2);
    expect(transitions[1]).toEqual({ toolName: "web_fetch", from: "open", to: "half_open" });
  });
});

describe("half-open", () => {
  function halfOpen() {
    const made = makeBreaker();
    open(made.breaker);
    made.clock.now += OPEN_MS;
    return made;
  }

  it("admits exactly one probe at a time; concurrent callers are rejected fast", () => {
    const { breaker } = halfOpen();
    const probe = admitted(breaker.admit());
    expect(probe.probe).toBe(true);
    expect(breaker.admit()).toEqual({ admitted: false, state: "half_open", retryAfterMs: 0 });
    expect(breaker.admit()).toEqual({ admitted: false, state: "half_open", retryAfterMs: 0 });

    probe.release("success");
    // The probe slot is free again for the second probe.
    const second = admitted(breaker.admit());
    expect(second.probe).toBe(true);
    expect(breaker.admit().admitted).toBe(false);
  });

  it("closes after two consecutive successful probes, not after one", () => {
    const { breaker, transitions } = halfOpen();
    callWith(breaker, "success");
    expect(breaker.state).toBe("half_open");
    callWith(breaker, "success");
    expect(breaker.state).toBe("closed");
    expect(transitions.map(({ from, to }) => `${from}→${to}`)).toEqual([
      "closed→open",
      "open→half_open",
      "half_open→closed",
    ]);
    // Closed again: calls are admitted as ordinary calls, and it takes five new failures to open.
    expect(admitted(breaker.admit()).probe).toBe(false);
    for (let index = 0; index < 4; index++) callWith(breaker, "failure");
    expect(breaker.state).toBe("closed");
  });

  it("a failed probe reopens it and restarts the open period", () => {
    const { breaker, clock, transitions } = halfOpen();
    clock.now += 5_000;
    callWith(breaker, "failure");
    expect(breaker.state).toBe("open");
    expect(breaker.admit()).toEqual({ admitted: false, state: "open", retryAfterMs: OPEN_MS });
    expect(transitions.at(-1)).toEqual({ toolName: "web_fetch", from: "half_open", to: "open" });

    clock.now += OPEN_MS - 1;
    expect(breaker.state).toBe("open");
    clock.now += 1;
    expect(breaker.state).toBe("half_open");
  });

  it("a failure after one successful probe reopens it; the successes start over", () => {
    const { breaker, clock } = halfOpen();
    callWith(breaker, "success");
    callWith(breaker, "failure");
    expect(breaker.state).toBe("open");
    clock.now += OPEN_MS;
    callWith(breaker, "success");
    expect(breaker.state).toBe("half_open");
    callWith(breaker, "success");
    expect(breaker.state).toBe("closed");
  });

  it("an ignored probe (permanent error, cancel) frees the slot without counting", () => {
    const { breaker } = halfOpen();
    callWith(breaker, "success");
    callWith(breaker, "ignored");
    expect(breaker.state).toBe("half_open");
    const next = admitted(breaker.admit());
    expect(next.probe).toBe(true);
    next.release("success");
    expect(breaker.state).toBe("closed");
  });
});

describe("release", () => {
  it("is idempotent: a second release of the same call counts nothing", () => {
    const { breaker } = makeBreaker();
    const admission = admitted(breaker.admit());
    admission.release("failure");
    for (let index = 0; index < 10; index++) admission.release("failure");
    for (let index = 0; index < 3; index++) callWith(breaker, "failure");
    // 1 + 3 failures: a double count would have opened it.
    expect(breaker.state).toBe("closed");
  });

  it("a repeated release of a probe does not free a later probe's slot", () => {
    const { breaker, clock } = makeBreaker();
    open(breaker);
    clock.now += OPEN_MS;
    const first = admitted(breaker.admit());
    first.release("success");
    const second = admitted(breaker.admit());
    first.release("success");
    expect(breaker.admit().admitted).toBe(false);
    expect(breaker.state).toBe("half_open");
    second.release("success");
    expect(breaker.state).toBe("closed");
  });
});

describe("observers", () => {
  it("each transition goes to the observer of the call that caused it", () => {
    const { breaker, clock } = makeBreaker();
    const bystander = vi.fn();
    for (let index = 0; index < 4; index++) callWith(breaker, "failure", bystander);
    const opener = vi.fn();
    callWith(breaker, "failure", opener);
    expect(opener).toHaveBeenCalledExactlyOnceWith({ toolName: "web_fetch", from: "closed", to: "open" });

    const rejected = vi.fn();
    expect(breaker.admit(rejected).admitted).toBe(false);
    expect(rejected).not.toHaveBeenCalled();

    clock.now += OPEN_MS;
    const firstProbe = vi.fn();
    const probe = admitted(breaker.admit(firstProbe));
    expect(firstProbe).toHaveBeenCalledExactlyOnceWith({
      toolName: "web_fetch",
      from: "open",
      to: "half_open",
    });
    probe.release("success");

    const secondProbe = vi.fn();
    const concurrent = vi.fn();
    const closing = admitted(breaker.admit(secondProbe));
    expect(breaker.admit(concurrent).admitted).toBe(false);
    closing.release("success");
    expect(secondProbe).toHaveBeenCalledExactlyOnceWith({
      toolName: "web_fetch",
      from: "half_open",
      to: "closed",
    });
    expect(concurrent).not.toHaveBeenCalled();
    expect(bystander).not.toHaveBeenCalled();
    expect(firstProbe).toHaveBeenCalledTimes(1);
  });

  it("a transition on release goes to that call's observer even when another call was admitted since", () => {
    const { breaker } = makeBreaker();
    for (let index = 0; index < 4; index++) callWith(breaker, "failure");
    const slowObserver = vi.fn();
    const slow = admitted(breaker.admit(slowObserver));
    const otherObserver = vi.fn();
    const other = admitted(breaker.admit(otherObserver));
    slow.release("failure");
    expect(slowObserver).toHaveBeenCalledExactlyOnceWith({
      toolName: "web_fetch",
      from: "closed",
      to: "open",
    });
    expect(otherObserver).not.toHaveBeenCalled();
    other.release("ignored");
  });
});

describe("BreakerRegistry", () => {
  function makeRegistry() {
    const clock = { now: 0 };
    const onTransition = vi.fn<(transition: BreakerTransition) => void>();
    const registry = new BreakerRegistry(DEFAULT_BREAKER_SETTINGS, () => clock.now, onTransition);
    return { registry, clock, onTransition };
  }

  it("gives one breaker per tool, created on first use", () => {
    const { registry } = makeRegistry();
    expect(registry.states()).toEqual([]);
    const fetch = registry.get("web_fetch");
    expect(registry.get("web_fetch")).toBe(fetch);
    expect(registry.get("search")).not.toBe(fetch);
    expect(fetch.toolName).toBe("web_fetch");
  });

  it("reports every breaker's transitions to onTransition", () => {
    const { registry, clock, onTransition } = makeRegistry();
    open(registry.get("web_fetch"));
    clock.now += OPEN_MS;
    callWith(registry.get("web_fetch"), "success");
    callWith(registry.get("web_fetch"), "success");
    open(registry.get("search"));
    expect(onTransition.mock.calls.map(([transition]) => transition)).toEqual([
      { toolName: "web_fetch", from: "closed", to: "open" },
      { toolName: "web_fetch", from: "open", to: "half_open" },
      { toolName: "web_fetch", from: "half_open", to: "closed" },
      { toolName: "search", from: "closed", to: "open" },
    ]);
  });

  it("states() and openCircuits() show which tools refuse calls, including half-open ones", () => {
    const { registry, clock } = makeRegistry();
    callWith(registry.get("echo"), "success");
    open(registry.get("web_fetch"));
    expect(registry.states()).toEqual([
      { toolName: "echo", state: "closed" },
      { toolName: "web_fetch", state: "open" },
    ]);
    expect(registry.openCircuits()).toEqual(["web_fetch"]);

    clock.now += 10_000;
    open(registry.get("search"));
    clock.now += OPEN_MS - 10_000;
    // web_fetch's open period is over (half-open), search's is not.
    expect(registry.states()).toEqual([
      { toolName: "echo", state: "closed" },
      { toolName: "web_fetch", state: "half_open" },
      { toolName: "search", state: "open" },
    ]);
    expect(registry.openCircuits()).toEqual(["web_fetch", "search"]);

    callWith(registry.get("web_fetch"), "success");
    callWith(registry.get("web_fetch"), "success");
    expect(registry.openCircuits()).toEqual(["search"]);
  });
});
