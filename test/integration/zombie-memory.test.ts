/**
 * docs/semantics.md#isolation-and-limits: a closed call's input, context and promise are released when it
 * becomes a zombie, so memory stays flat however many calls hang. The attack: 10,000 calls of a tool that
 * never settles and ignores its signal, each with a 4 KB input, closed by a 1 ms `_meta.timeout`. What stays
 * on the heap afterwards (after a full GC) is the zombies' own bookkeeping, not their calls.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { parseConfig } from "../../src/config/index.js";
import { createMemoryHistoryStore } from "../../src/history/sqlite-store.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import { ZOMBIE_GRACE_MS } from "../../src/tools/runner.js";
import type { ToolContext, ToolDefinition } from "../../src/tools/types.js";

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

const CALLS = 10_000;
const CALLS_PER_TURN = 200;
const INPUT_BYTES = 4_096;

/**
 * Waits an hour on something outside the server (modelled by a timer that keeps its promise
 * reachable, as a socket or a child process would) and never looks at its signal: a realistic stuck
 * tool. (A promise nothing refers to is simply collected, whatever hangs on it.)
 */
const timers: NodeJS.Timeout[] = [];
const stuck: ToolDefinition<{ blob: string; index: number }> = {
  name: "stuck",
  description: "never returns",
  inputSchema: z.object({ blob: z.string(), index: z.number() }),
  concurrency: "parallel",
  execute: () => new Promise((resolve) => timers.push(setTimeout(resolve, 3_600_000))),
};

let runtime: Runtime | undefined;
afterEach(() => {
  for (const timer of timers.splice(0)) clearTimeout(timer);
  runtime?.store.close();
  runtime = undefined;
});

function heapAfterGc(): number {
  collectGarbage();
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

async function runStuckTurns(turns: number, offset: number): Promise<void> {
  const blob = "x".repeat(INPUT_BYTES);
  for (let turn = 0; turn < turns; turn++) {
    const lines = Array.from({ length: CALLS_PER_TURN }, (_, call) => {
      // a fresh string per call, as a model's input would be
      const input = {
        blob: `${blob}${offset + turn * CALLS_PER_TURN + call}`,
        index: call,
        _meta: { timeout: 1 },
      };
      return `/tool stuck ${JSON.stringify(input)}`;
    });
    const started = runtime!.manager.startTurn({ message: `${lines.join("\n")}\n/then\ndone` });
    const outcome = await started.done;
    expect(outcome).toMatchObject({ status: "completed" });
  }
}

describe("zombies hold no memory", () => {
  it("10,000 hung calls leave the heap flat (their inputs, contexts and turns are released)", async () => {
    const { config } = parseConfig({
      logLevel: "silent",
      tools: { maxParallelTools: CALLS_PER_TURN },
      // the calls of one turn are alike: keep the loop detector out of it
      turns: { loopDetector: { windowSize: 1, warnAt: 1_000, stopAt: 1_000 } },
      resilience: { breaker: { failureThreshold: 1_000_000_000 } },
    });
    runtime = createRuntime(config, {
      logger: pino({ level: "silent" }),
      // no idle session is kept in memory: what the heap holds afterwards is not history
      store: createMemoryHistoryStore({ cachedSessions: 0 }),
      tools: [stuck as ToolDefinition],
    });
    // warm up (code, caches, the first zombies), then measure
    await runStuckTurns(5, 0);
    const before = heapAfterGc();
    await runStuckTurns(CALLS / CALLS_PER_TURN, 1_000_000);
    // the zombies are counted after a 1 s grace: let them be, as they would be in a server
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const grownBytes = heapAfterGc() - before;
    const perCall = grownBytes / CALLS;
    // Keeping each call's 4 KB input alone would be 40 MB (the code before measured 10.7 KB per call);
    // what remains is the stuck tool's own timer and promise and the zombie's cut link, ~1.7 KB here.
    expect(
      perCall,
      `heap grew ${(grownBytes / 1e6).toFixed(1)} MB: ${perCall.toFixed(0)} B per hung call`,
    ).toBeLessThan(3_072);
  }, 120_000);

  it("a zombie keeps nothing of its turn: a timed-out and an aborted call's turns are collected while their tools run on", async () => {
    const { config } = parseConfig({ logLevel: "silent" });
    runtime = createRuntime(config, {
      logger: pino({ level: "silent" }),
      store: createMemoryHistoryStore({ cachedSessions: 0 }),
      tools: [stuck as ToolDefinition],
    });
    const manager = runtime.manager;
    /** Runs a turn of one stuck call to its end; what is kept of it is a weak reference. */
    const stuckTurn = async (message: string, abort: boolean) => {
      const stuckBefore = timers.length;
      const run = manager.startTurn({ message });
      if (abort) {
        // the stuck tool has started once its timer exists
        await vi.waitFor(() => expect(timers.length).toBeGreaterThan(stuckBefore));
        expect(manager.abortTurn(run.turnId, "user")).toBe(true);
      }
      expect(await run.done).toMatchObject({ status: abort ? "aborted" : "completed" });
      return new WeakRef(run);
    };
    const input = JSON.stringify({ blob: "x", index: 0, _meta: { timeout: 1 } });
    const turns = [
      await stuckTurn(`/tool stuck ${input}\n/then\ndone`, false),
      await stuckTurn('/tool stuck {"blob":"y","index":1}', true),
    ];
    expect(timers).toHaveLength(2);

    // past the grace period both tools are zombies, still running (their timers keep them reachable)
    await new Promise((resolve) => setTimeout(resolve, ZOMBIE_GRACE_MS + 200));
    expect(manager.getZombies().map((zombie) => zombie.toolName)).toEqual(["stuck", "stuck"]);
    collectGarbage();
    collectGarbage();
    expect(turns.map((turn) => turn.deref() === undefined)).toEqual([true, true]);
  }, 30_000);

  it("a context a tool keeps after its call has returned reaches nothing of the call's turn", async () => {
    const kept: ToolContext[] = [];
    const keeper: ToolDefinition = {
      name: "keeper",
      description: "keeps its context, as a cache or a background job might",
      concurrency: "parallel",
      inputSchema: z.object({}),
      execute: (_input, context) => {
        kept.push(context);
        return Promise.resolve("kept");
      },
    };
    const { config } = parseConfig({ logLevel: "silent" });
    runtime = createRuntime(config, {
      logger: pino({ level: "silent" }),
      store: createMemoryHistoryStore({ cachedSessions: 0 }),
      tools: [keeper],
    });
    const manager = runtime.manager;
    /** Runs the turn to its end; what is kept of it here is a weak reference and its id. */
    const keeperTurn = async () => {
      const run = manager.startTurn({ message: "/tool keeper {}" });
      expect(await run.done).toMatchObject({ status: "completed" });
      return { turn: new WeakRef(run), turnId: run.turnId };
    };
    const { turn, turnId } = await keeperTurn();
    expect(kept).toHaveLength(1);
    const [context] = kept;
    // its facts stay; its live parts have gone quiet
    expect(context).toMatchObject({ toolName: "keeper", turnId });
    expect(context?.services).toBeUndefined();
    expect(() => context?.heartbeat("later")).not.toThrow();
    // the turn's last writes and deliveries run in later turns of the event loop; then nothing holds it
    // (a failed expect would hold the turn itself as its actual value: a plain error names it instead)
    await vi.waitFor(
      () => {
        collectGarbage();
        if (turn.deref() !== undefined) throw new Error(`turn ${turnId} is still reachable`);
      },
      { timeout: 5_000, interval: 50 },
    );
  }, 30_000);
});
