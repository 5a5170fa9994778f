/**
 * resolveCall (docs/semantics.md#timeouts): which limits a call runs under, what its tool is given, and which
 * corrections are warned about. Table-driven.
 */
import { describe, expect, it } from "vitest";
import { resolveCall, type LimitSettings } from "../../src/tools/limits.js";

type ToolLimits = { name: string; timeoutMs?: number; idleTimeoutMs?: number };

const SETTINGS: LimitSettings = {
  defaults: { timeoutMs: 120_000, idleTimeoutMs: 0 },
  maxCallTimeoutMs: 600_000,
  overrides: {},
};

function settingsWith(patch: Partial<LimitSettings>): LimitSettings {
  return { ...SETTINGS, ...patch };
}

describe("resolveCall precedence", () => {
  it.each<{
    name: string;
    tool: ToolLimits | undefined;
    settings: LimitSettings;
    expected: { timeoutMs: number; idleTimeoutMs: number };
  }>([
    {
      name: "defaults when neither tool nor configuration says otherwise",
      tool: { name: "plain" },
      settings: SETTINGS,
      expected: { timeoutMs: 120_000, idleTimeoutMs: 0 },
    },
    {
      name: "defaults for an unknown tool",
      tool: undefined,
      settings: settingsWith({ defaults: { timeoutMs: 5000, idleTimeoutMs: 1000 } }),
      expected: { timeoutMs: 5000, idleTimeoutMs: 1000 },
    },
    {
      name: "the tool's own limits over the defaults",
      tool: { name: "own", timeoutMs: 30_000, idleTimeoutMs: 2000 },
      settings: SETTINGS,
      expected: { timeoutMs: 30_000, idleTimeoutMs: 2000 },
    },
    {
      name: "the tool's own 0 (no limit) over a default limit",
      tool: { name: "own", timeoutMs: 0 },
      settings: SETTINGS,
      expected: { timeoutMs: 0, idleTimeoutMs: 0 },
    },
    {
      name: "a configured override over the tool's own limits",
      tool: { name: "own", timeoutMs: 30_000, idleTimeoutMs: 2000 },
      settings: settingsWith({ overrides: { own: { timeoutMs: 9000, idleTimeoutMs: 3000 } } }),
      expected: { timeoutMs: 9000, idleTimeoutMs: 3000 },
    },
    {
      name: "an override of one limit keeps the tool's own other limit",
      tool: { name: "own", timeoutMs: 30_000, idleTimeoutMs: 2000 },
      settings: settingsWith({ overrides: { own: { timeoutMs: 9000 } } }),
      expected: { timeoutMs: 9000, idleTimeoutMs: 2000 },
    },
    {
      name: "an override of one limit keeps the default other limit",
      tool: { name: "plain" },
      settings: settingsWith({ overrides: { plain: { idleTimeoutMs: 4000 } } }),
      expected: { timeoutMs: 120_000, idleTimeoutMs: 4000 },
    },
    {
      name: "an override of 0 (no limit) over a default limit",
      tool: { name: "plain" },
      settings: settingsWith({ overrides: { plain: { timeoutMs: 0 } } }),
      expected: { timeoutMs: 0, idleTimeoutMs: 0 },
    },
    {
      name: "another tool's override does not apply",
      tool: { name: "plain" },
      settings: settingsWith({ overrides: { other: { timeoutMs: 1 } } }),
      expected: { timeoutMs: 120_000, idleTimeoutMs: 0 },
    },
  ])("$name", ({ tool, settings, expected }) => {
    const resolved = resolveCall(tool, { a: 1 }, settings);
    expect(resolved.limits).toEqual(expected);
    expect(resolved.warnings).toEqual([]);
    expect(resolved.input).toEqual({ a: 1 });
  });
});

describe("resolveCall _meta.timeout", () => {
  const tool: ToolLimits = { name: "fetch", timeoutMs: 30_000, idleTimeoutMs: 0 };
  const settings = settingsWith({
    maxCallTimeoutMs: 60_000,
    overrides: { fetch: { timeoutMs: 20_000 } },
  });

  it.each<{ name: string; timeout: unknown; expectedMs: number; warning: RegExp | null }>([
    { name: "shorter than the override", timeout: 5000, expectedMs: 5000, warning: null },
    {
      name: "longer than the override, within the bound",
      timeout: 45_000,
      expectedMs: 45_000,
      warning: null,
    },
    { name: "exactly the bound", timeout: 60_000, expectedMs: 60_000, warning: null },
    {
      name: "above the bound",
      timeout: 1_000_000,
      expectedMs: 60_000,
      warning: /_meta\.timeout 1000000 exceeds maxCallTimeoutMs 60000/,
    },
    { name: "fractional ms rounded", timeout: 1500.6, expectedMs: 1501, warning: null },
    { name: "a string", timeout: "5000", expectedMs: 20_000, warning: /_meta\.timeout must be a positive/ },
    { name: "negative", timeout: -5, expectedMs: 20_000, warning: /_meta\.timeout must be a positive.*-5/ },
    { name: "zero", timeout: 0, expectedMs: 20_000, warning: /_meta\.timeout must be a positive/ },
    { name: "null", timeout: null, expectedMs: 20_000, warning: /_meta\.timeout must be a positive.*null/ },
    { name: "infinite", timeout: Infinity, expectedMs: 20_000, warning: /_meta\.timeout must be a positive/ },
    { name: "NaN", timeout: Number.NaN, expectedMs: 20_000, warning: /_meta\.timeout must be a positive/ },
    {
      name: "an object",
      timeout: { ms: 5 },
      expectedMs: 20_000,
      warning: /_meta\.timeout must be a positive/,
    },
  ])("$name", ({ timeout, expectedMs, warning }) => {
    const resolved = resolveCall(tool, { url: "u", _meta: { timeout } }, settings);
    expect(resolved.limits.timeoutMs).toBe(expectedMs);
    expect(resolved.input).toEqual({ url: "u" });
    if (warning === null) {
      expect(resolved.warnings).toEqual([]);
    } else {
      expect(resolved.warnings).toHaveLength(1);
      expect(resolved.warnings[0]).toMatch(warning);
    }
  });

  it("absent: no warning and the configured limit", () => {
    const resolved = resolveCall(tool, { url: "u", _meta: { trace: "abc" } }, settings);
    expect(resolved.limits.timeoutMs).toBe(20_000);
    expect(resolved.warnings).toEqual([]);
  });

  it("gives a limit to a tool that has none", () => {
    const resolved = resolveCall({ name: "free", timeoutMs: 0 }, { _meta: { timeout: 700 } }, SETTINGS);
    expect(resolved.limits).toEqual({ timeoutMs: 700, idleTimeoutMs: 0 });
  });

  it("a shorter total clamps the idle limit", () => {
    const resolved = resolveCall(
      { name: "beating", timeoutMs: 10_000, idleTimeoutMs: 3000 },
      { _meta: { timeout: 1000 } },
      SETTINGS,
    );
    expect(resolved.limits).toEqual({ timeoutMs: 1000, idleTimeoutMs: 1000 });
    expect(resolved.warnings).toHaveLength(1);
    expect(resolved.warnings[0]).toContain("beating.idleTimeoutMs (3000) exceeds beating.timeoutMs (1000)");
  });
});

describe("resolveCall strips _meta", () => {
  it.each<{ name: string; input: Record<string, unknown>; expectedInput: object; expectedMeta: object }>([
    {
      name: "an object _meta",
      input: { path: "a.txt", _meta: { timeout: 100, trace: "t" } },
      expectedInput: { path: "a.txt" },
      expectedMeta: { timeout: 100, trace: "t" },
    },
    {
      name: "a string _meta",
      input: { path: "a.txt", _meta: "x" },
      expectedInput: { path: "a.txt" },
      expectedMeta: {},
    },
    {
      name: "an array _meta",
      input: { path: "a.txt", _meta: [1] },
      expectedInput: { path: "a.txt" },
      expectedMeta: {},
    },
    {
      name: "a null _meta",
      input: { path: "a.txt", _meta: null },
      expectedInput: { path: "a.txt" },
      expectedMeta: {},
    },
    { name: "no _meta", input: { path: "a.txt" }, expectedInput: { path: "a.txt" }, expectedMeta: {} },
  ])("$name", ({ input, expectedInput, expectedMeta }) => {
    const resolved = resolveCall({ name: "read" }, input, SETTINGS);
    expect(resolved.input).toEqual(expectedInput);
    expect("_meta" in resolved.input).toBe(false);
    expect(resolved.meta).toEqual(expectedMeta);
  });

  it("leaves the caller's input object untouched", () => {
    const input = { path: "a.txt", _meta: { timeout: 100 } };
    resolveCall({ name: "read" }, input, SETTINGS);
    expect(input).toEqual({ path: "a.txt", _meta: { timeout: 100 } });
  });
});

describe("resolveCall clamp rules", () => {
  it.each<{
    name: string;
    tool: ToolLimits;
    expected: { timeoutMs: number; idleTimeoutMs: number };
    warnings: string[];
  }>([
    {
      name: "idle above total is clamped to total",
      tool: { name: "t", timeoutMs: 1000, idleTimeoutMs: 5000 },
      expected: { timeoutMs: 1000, idleTimeoutMs: 1000 },
      warnings: ["t.idleTimeoutMs (5000) exceeds t.timeoutMs (1000); clamped to 1000."],
    },
    {
      name: "idle equal to total is kept",
      tool: { name: "t", timeoutMs: 1000, idleTimeoutMs: 1000 },
      expected: { timeoutMs: 1000, idleTimeoutMs: 1000 },
      warnings: [],
    },
    {
      name: "idle with no total is kept",
      tool: { name: "t", timeoutMs: 0, idleTimeoutMs: 5000 },
      expected: { timeoutMs: 0, idleTimeoutMs: 5000 },
      warnings: [],
    },
    {
      name: "negative total becomes no limit, so idle is not clamped",
      tool: { name: "t", timeoutMs: -1, idleTimeoutMs: 5000 },
      expected: { timeoutMs: 0, idleTimeoutMs: 5000 },
      warnings: ["t.timeoutMs is negative (-1); treated as 0 (no wall-clock limit)."],
    },
    {
      name: "negative idle becomes no limit",
      tool: { name: "t", timeoutMs: 1000, idleTimeoutMs: -7 },
      expected: { timeoutMs: 1000, idleTimeoutMs: 0 },
      warnings: ["t.idleTimeoutMs is negative (-7); treated as 0 (no idle limit)."],
    },
  ])("$name", ({ tool, expected, warnings }) => {
    const resolved = resolveCall(tool, {}, SETTINGS);
    expect(resolved.limits).toEqual(expected);
    expect(resolved.warnings).toEqual(warnings);
  });

  it("labels the warnings of an unknown tool generically", () => {
    const resolved = resolveCall(
      undefined,
      {},
      settingsWith({ defaults: { timeoutMs: 100, idleTimeoutMs: 200 } }),
    );
    expect(resolved.limits).toEqual({ timeoutMs: 100, idleTimeoutMs: 100 });
    expect(resolved.warnings).toEqual([
      "tool.idleTimeoutMs (200) exceeds tool.timeoutMs (100); clamped to 100.",
    ]);
  });
});

describe("resolveCall regressions", () => {
  it("never turns a sub-millisecond _meta.timeout into 0 (no limit)", () => {
    const resolved = resolveCall({ name: "t" }, { _meta: { timeout: 0.4 } }, SETTINGS);
    expect(resolved.limits.timeoutMs).toBe(1);
  });

  it("keeps the tool's own wall-clock limit when an override sets only the idle limit", () => {
    const settings = settingsWith({ overrides: { fetch: { idleTimeoutMs: 1_000 } } });
    const resolved = resolveCall({ name: "fetch", timeoutMs: 5_000 }, {}, settings);
    expect(resolved.limits).toEqual({ timeoutMs: 5_000, idleTimeoutMs: 1_000 });
  });
});
