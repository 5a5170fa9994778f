import { describe, expect, it } from "vitest";
import { ChildTurnBudget } from "../../src/turns/turn-run.js";

describe("ChildTurnBudget", () => {
  it("passes a wake-up on when the woken waiter gives up before it resumes", async () => {
    const budget = new ChildTurnBudget(10, 1);
    expect(await budget.acquire(new AbortController().signal)).toBe(true);
    const gaveUp = new AbortController();
    const first = budget.acquire(gaveUp.signal);
    const second = budget.acquire(new AbortController().signal);
    // the slot frees and the first waiter is woken; its signal aborts before it gets to run
    budget.release();
    gaveUp.abort();
    expect(await first).toBe(false);
    expect(await second).toBe(true);
    expect(budget.running).toBe(1);
  });
});
