/**
 * `flaky` (docs/semantics.md#resilience): fails a given number of times, counted per call id or per shared
 * key, with errors that classify as they claim; its counters are per tool instance and bounded.
 */
import { describe, expect, it } from "vitest";
import { createFlakyTool, FLAKY_MAX_COUNTERS, type FlakyInput } from "../../src/tools/builtin/flaky.js";
import { classifyError } from "../../src/tools/resilience/classify.js";
import { PermanentToolError, TransientToolError } from "../../src/tools/resilience/tool-error.js";
import type { ToolContext, ToolDefinition } from "../../src/tools/types.js";

function contextFor(callId: string): ToolContext {
  return {
    turnId: "turn-1",
    sessionId: "session-1",
    agentId: "agent-1",
    callId,
    toolName: "flaky",
    workspace: undefined,
    allowedRoots: [],
    depth: 0,
    signal: new AbortController().signal,
    heartbeat: () => {},
    services: undefined,
  };
}

/** "ok: <result>" or "<ErrorClass>: <message>" for one call. */
async function attempt(tool: ToolDefinition<FlakyInput>, input: FlakyInput, callId: string): Promise<string> {
  try {
    return `ok: ${String(await tool.execute(input, contextFor(callId)))}`;
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
}

describe("flaky", () => {
  it("counts per call id, so the retries of one call see the count go up", async () => {
    const tool = createFlakyTool();
    const input: FlakyInput = { failures: 2, kind: "transient" };
    expect(await attempt(tool, input, "call-a")).toBe(
      "TransientToolError: flaky: failure 1 of 2 (transient)",
    );
    expect(await attempt(tool, input, "call-a")).toBe(
      "TransientToolError: flaky: failure 2 of 2 (transient)",
    );
    expect(await attempt(tool, input, "call-a")).toBe("ok: flaky: succeeded after 2 failures.");
    // Another call starts from zero.
    expect(await attempt(tool, input, "call-b")).toBe(
      "TransientToolError: flaky: failure 1 of 2 (transient)",
    );
  });

  it("counts per key across calls, so a circuit breaker can be shown over several calls", async () => {
    const tool = createFlakyTool();
    const input: FlakyInput = { failures: 3, kind: "transient", key: "service" };
    const results = [];
    for (const callId of ["c1", "c2", "c3", "c4", "c5"]) results.push(await attempt(tool, input, callId));
    expect(results).toEqual([
      "TransientToolError: flaky: failure 1 of 3 (transient)",
      "TransientToolError: flaky: failure 2 of 3 (transient)",
      "TransientToolError: flaky: failure 3 of 3 (transient)",
      'ok: flaky: succeeded after 3 failures (key "service").',
      'ok: flaky: succeeded after 3 failures (key "service").',
    ]);
    // Another key has its own count.
    expect(await attempt(tool, { ...input, key: "other" }, "c6")).toBe(
      "TransientToolError: flaky: failure 1 of 3 (transient)",
    );
  });

  it("succeeds at once with zero failures", async () => {
    expect(await attempt(createFlakyTool(), { failures: 0, kind: "permanent" }, "c")).toBe(
      "ok: flaky: succeeded after 0 failures.",
    );
  });

  it.each([
    ["transient", TransientToolError],
    ["permanent", PermanentToolError],
  ] as const)("throws %s errors that classify as %s", async (kind, ErrorClass) => {
    const tool = createFlakyTool();
    const error = await tool
      .execute({ failures: 1, kind }, contextFor("c"))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ErrorClass);
    expect(classifyError(error).classification).toBe(kind);
  });

  it("keeps a separate counter in every tool instance", async () => {
    const input: FlakyInput = { failures: 1, kind: "transient", key: "shared" };
    const first = createFlakyTool();
    expect(await attempt(first, input, "c1")).toMatch(/^TransientToolError/);
    expect(await attempt(first, input, "c2")).toMatch(/^ok/);
    expect(await attempt(createFlakyTool(), input, "c3")).toMatch(/^TransientToolError/);
  });

  it("rejects inputs outside the schema", () => {
    const { inputSchema } = createFlakyTool();
    expect(inputSchema.safeParse({ failures: 1001, kind: "transient" }).success).toBe(false);
    expect(inputSchema.safeParse({ failures: -1, kind: "transient" }).success).toBe(false);
    expect(inputSchema.safeParse({ failures: 1, kind: "sometimes" }).success).toBe(false);
    expect(inputSchema.safeParse({ failures: 1000, kind: "permanent", key: "k" }).success).toBe(true);
  });

  it(`forgets the least recently used counter beyond ${FLAKY_MAX_COUNTERS} keys`, async () => {
    const tool = createFlakyTool();
    const input = (key: string): FlakyInput => ({ failures: 1, kind: "transient", key });
    for (let index = 0; index <= FLAKY_MAX_COUNTERS; index++) {
      expect(await attempt(tool, input(`k${index}`), "c")).toMatch(/^TransientToolError/);
    }
    // k0 was the oldest of 10 001 counters and was forgotten: it fails again from the start.
    expect(await attempt(tool, input("k0"), "c")).toBe(
      "TransientToolError: flaky: failure 1 of 1 (transient)",
    );
    // Remembering k0 again evicted k1; k2 is still known and has recovered.
    expect(await attempt(tool, input("k2"), "c")).toMatch(/^ok/);
    expect(await attempt(tool, input("k1"), "c")).toMatch(/^TransientToolError/);
  });

  it("treats a counter that is used again as recent when evicting", async () => {
    const tool = createFlakyTool({ maxCounters: 2 });
    const input = (key: string): FlakyInput => ({ failures: 2, kind: "transient", key });
    await attempt(tool, input("a"), "c"); // a: 1
    await attempt(tool, input("b"), "c"); // b: 1
    await attempt(tool, input("a"), "c"); // a: 2, now the most recent
    await attempt(tool, input("c"), "c"); // evicts b
    expect(await attempt(tool, input("a"), "c")).toMatch(/^ok/);
    expect(await attempt(tool, input("b"), "c")).toBe(
      "TransientToolError: flaky: failure 1 of 2 (transient)",
    );
  });
});
