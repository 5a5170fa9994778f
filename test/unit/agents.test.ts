/**
 * Agents (docs/semantics.md#agents), below the HTTP layer: start-up checks of `agents` / `defaultAgent`,
 * `AGENTS_FILE` merged over the configuration file, the demonstration-tool rule, per-agent tool
 * overrides merged over the global ones, and the runner refusing a tool the agent may not use.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  AgentRegistry,
  agentAllowsTool,
  mergeToolOverrides,
  unmatchedToolPatterns,
} from "../../src/agents/index.js";
import { loadConfig, parseConfig } from "../../src/config/load.js";
import { ConfigError } from "../../src/errors.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import { ToolRunner } from "../../src/tools/runner.js";
import type { ToolDefinition } from "../../src/tools/types.js";
import { AgentNotFoundError } from "../../src/turns/errors.js";

let directory: string;
beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), "reins-agents-"));
});
afterEach(() => {
  rmSync(directory, { recursive: true, force: true });
});

function writeJson(name: string, value: unknown): string {
  const path = join(directory, name);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

function configErrorOf(load: () => unknown): ConfigError {
  try {
    load();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("start-up checks", () => {
  it("refuses a defaultAgent that names no configured agent, listing the agents", () => {
    const error = configErrorOf(() =>
      parseConfig({ agents: { support: {}, sales: {} }, defaultAgent: "suport" }),
    );
    expect(error.message).toBe(
      'defaultAgent is "suport", which is not a configured agent (agents: support, sales)',
    );
  });

  it("refuses a defaultAgent other than the built-in one when no agents are configured", () => {
    expect(configErrorOf(() => parseConfig({ defaultAgent: "support" })).message).toContain(
      'defaultAgent is "support" but no agents are configured',
    );
    expect(parseConfig({ defaultAgent: "default" }).config.defaultAgent).toBe("default");
  });

  it("refuses several agents without a defaultAgent, and takes the only agent as the default", () => {
    expect(configErrorOf(() => parseConfig({ agents: { a: {}, b: {} } })).message).toBe(
      "2 agents are configured and defaultAgent is not set: set it to one of a, b",
    );
    expect(parseConfig({ agents: { only: {} } }).config.defaultAgent).toBe("only");
  });

  it("refuses an agent whose provider has no key, naming the key and its variable", () => {
    const error = configErrorOf(() => parseConfig({ agents: { support: { provider: "anthropic" } } }));
    expect(error.message).toBe(
      'agents.support.provider is "anthropic" but providers.anthropic.apiKey (ANTHROPIC_API_KEY) is not set',
    );
    const keyed = parseConfig({
      providers: { anthropic: { apiKey: "sk-ant-test" } },
      agents: { support: { provider: "anthropic" }, demo: { provider: "scripted" } },
      defaultAgent: "demo",
    });
    expect(keyed.config.agents.support?.provider).toBe("anthropic");
  });

  it("clamps an agent's per-tool limits like the global overrides, with a warning naming the agent", () => {
    const { config, warnings } = parseConfig({
      agents: { support: { limits: { tools: { echo: { timeoutMs: 1_000, idleTimeoutMs: 5_000 } } } } },
    });
    expect(config.agents.support?.limits.tools?.echo).toEqual({ timeoutMs: 1_000, idleTimeoutMs: 1_000 });
    expect(warnings.join("\n")).toContain("agents.support.limits.tools.echo");
  });

  it("warns about instructions longer than the context budget of a provider the agent can use", () => {
    const { warnings } = parseConfig({
      providers: { openai: { contextBudgetTokens: 100 }, mistral: { contextBudgetTokens: 300 } },
      agents: { verbose: { instructions: "x".repeat(1_000) }, terse: { instructions: "Be brief." } },
      defaultAgent: "terse",
    });
    // 1,000 characters: about 250 tokens, over openai's 100 and under mistral's 300 and the defaults
    expect(warnings).toEqual([
      "agents.verbose.instructions: about 250 tokens, more than the context budget of openai " +
        "(providers.<name>.contextBudgetTokens): requests there will carry only the newest turn",
    ]);
    const pinned = parseConfig({
      providers: { openai: { contextBudgetTokens: 100 } },
      agents: { verbose: { provider: "scripted", instructions: "x".repeat(1_000) } },
    });
    expect(pinned.warnings).toEqual([]);
  });

  it("warns about a tool pattern that matches no tool, except under a configured MCP server's prefix", () => {
    const { config } = parseConfig({
      agents: {
        support: { tools: ["echo", "web_fecth", "docs__*", "nope__*"], approval: { "ech*": "always" } },
      },
      mcpServers: { docs: { command: "node" } },
    });
    const warnings = unmatchedToolPatterns(config, ["echo", "web_fetch"]);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(
      /^agents\.support\.tools: "web_fecth" matches no tool \(known: echo, web_fetch\)/,
    );
    expect(warnings[1]).toMatch(/^agents\.support\.tools: "nope__\*" matches no tool/);
  });
});

describe("AGENTS_FILE", () => {
  it("is merged over the configuration file: its agents replace theirs whole, its defaultAgent wins", () => {
    const configFile = writeJson("config.json", {
      agents: {
        support: { description: "from config", tools: ["echo"], limits: { maxSteps: 3 } },
        sales: { description: "kept" },
      },
      defaultAgent: "sales",
    });
    const agentsFile = writeJson("agents.json", {
      agents: { support: { description: "from agents file", instructions: "Be brief." } },
      defaultAgent: "support",
    });
    const { config } = loadConfig({ CONFIG_FILE: configFile, AGENTS_FILE: agentsFile }, directory);
    expect(config.defaultAgent).toBe("support");
    expect(config.agents.sales?.description).toBe("kept");
    expect(config.agents.support).toMatchObject({
      description: "from agents file",
      instructions: "Be brief.",
      tools: [],
      limits: {},
    });
  });

  it("is read relative to the working directory and validated like the configuration file", () => {
    writeJson("agents.json", { agents: { support: { tools: ["has space"] } } });
    const error = configErrorOf(() => loadConfig({ AGENTS_FILE: "agents.json" }, directory));
    expect(error.message).toContain("agents.support.tools.0");
  });

  it.each([
    ["a missing file", null, "AGENTS_FILE: file not found"],
    [
      "a file of other keys",
      { agents: {}, server: { port: 1 } },
      'may hold only "agents" and "defaultAgent"; found "server"',
    ],
    ["agents that are not an object", { agents: ["support"] }, '"agents" in'],
    ["not JSON", "{", "is not valid JSON"],
  ])("stops start-up for %s, naming AGENTS_FILE", (_name, content, expected) => {
    if (typeof content === "string") writeFileSync(join(directory, "agents.json"), content);
    else if (content !== null) writeJson("agents.json", content);
    const error = configErrorOf(() => loadConfig({ AGENTS_FILE: "agents.json" }, directory));
    expect(error.message).toContain("AGENTS_FILE");
    expect(error.message).toContain(expected);
  });
});

describe("which tools an agent may use", () => {
  it.each([
    [["*"], "echo", "scripted", true],
    [["*"], "echo", "anthropic", false],
    [["*"], "session_status", "anthropic", true],
    [["ech*"], "echo", "openai", false],
    [["echo"], "echo", "openai", true],
    [["echo"], "sleep", "openai", false],
    [["docs__*"], "docs__search", "openai", true],
    [["docs__*"], "web_fetch", "scripted", false],
    [[], "session_status", "scripted", false],
  ])("%j, %s on %s: %s", (patterns, toolName, provider, allowed) => {
    expect(agentAllowsTool(patterns, toolName, provider)).toBe(allowed);
  });

  it("lists the built-in agent when none is configured, and any id names it (a label, as before)", () => {
    const registry = new AgentRegistry({}, undefined, {
      toolNames: () => ["echo", "session_status"],
      defaultProvider: "anthropic",
      defaultModelOf: () => "claude-test",
      toolOverrides: {},
    });
    expect(registry.list()).toEqual([
      {
        id: "default",
        description: expect.any(String),
        provider: "anthropic",
        model: "claude-test",
        tools: ["session_status"],
        approval: {},
      },
    ]);
    expect(registry.resolve("anything").id).toBe("anything");
  });

  it("refuses an unknown id once agents are configured, and resolves tools when asked", () => {
    const names = ["echo"];
    const registry = new AgentRegistry(
      { support: { description: "", instructions: "secret", tools: ["*"], approval: {}, limits: {} } },
      "support",
      {
        toolNames: () => names,
        defaultProvider: "scripted",
        defaultModelOf: () => undefined,
        toolOverrides: {},
      },
    );
    expect(() => registry.resolve("sales")).toThrow(AgentNotFoundError);
    names.push("docs__search");
    expect(registry.list()[0]?.tools).toEqual(["echo", "docs__search"]);
    expect(JSON.stringify(registry.list())).not.toContain("secret");
  });

  it("merges an agent's tool overrides over the global ones field by field", () => {
    expect(
      mergeToolOverrides(
        {
          exec: { timeoutMs: 10_000, retry: { maxAttempts: 3, initialDelayMs: 50 } },
          other: { timeoutMs: 1 },
        },
        { exec: { timeoutMs: 2_000, retry: { maxAttempts: 1 } }, echo: { idleTimeoutMs: 5 } },
      ),
    ).toEqual({
      exec: { timeoutMs: 2_000, retry: { maxAttempts: 1, initialDelayMs: 50 } },
      other: { timeoutMs: 1 },
      echo: { idleTimeoutMs: 5 },
    });
  });
});

describe("the runner enforces the agent's tools", () => {
  const ran: string[] = [];
  const tool = (name: string): ToolDefinition => ({
    name,
    description: name,
    inputSchema: z.object({}),
    concurrency: "parallel",
    execute: async () => {
      ran.push(name);
      return `${name} ran`;
    },
  });
  const runner = new ToolRunner(new ToolRegistry([tool("allowed"), tool("forbidden"), tool("backup")]), {
    defaults: { timeoutMs: 1_000, idleTimeoutMs: 0 },
    maxCallTimeoutMs: 10_000,
    overrides: { allowed: { fallback: "backup" } },
    progressAfterMs: 1_000,
    progressIntervalMs: 1_000,
  });
  const scope = (allowed: string[]) => ({
    turnId: "turn_1",
    sessionId: "ses_1",
    agentId: "support",
    workspace: undefined,
    allowedRoots: [],
    depth: 0,
    signal: new AbortController().signal,
    toolPolicy: { allowsTool: (name: string) => allowed.includes(name), toolOverrides: {} },
  });

  it("answers a tool outside the agent's list exactly like an unknown tool, and never runs it", async () => {
    ran.length = 0;
    const refused = await runner.run({ callId: "c1", name: "forbidden", input: {} }, scope(["allowed"]));
    const unknown = await runner.run({ callId: "c2", name: "missing", input: {} }, scope(["allowed"]));
    expect(refused).toMatchObject({ status: "error", classification: "permanent" });
    expect(refused.result).toBe(unknown.result.replaceAll("missing", "forbidden"));
    expect(ran).toEqual([]);
    const allowed = await runner.run({ callId: "c3", name: "allowed", input: {} }, scope(["allowed"]));
    expect(allowed.result).toBe("allowed ran");
  });

  it("uses the agent's per-tool overrides in place of the global ones", async () => {
    const slow: ToolDefinition = {
      ...tool("slow"),
      execute: (_input, context) =>
        new Promise((_resolve, reject) =>
          context.signal.addEventListener("abort", () => reject(context.signal.reason)),
        ),
    };
    const limited = new ToolRunner(new ToolRegistry([slow]), {
      defaults: { timeoutMs: 60_000, idleTimeoutMs: 0 },
      maxCallTimeoutMs: 60_000,
      overrides: {},
      progressAfterMs: 60_000,
      progressIntervalMs: 60_000,
      retry: { maxAttempts: 1 },
    });
    const outcome = await limited.run(
      { callId: "c4", name: "slow", input: {} },
      {
        ...scope(["slow"]),
        toolPolicy: { allowsTool: () => true, toolOverrides: { slow: { timeoutMs: 50 } } },
      },
    );
    expect(outcome.status).toBe("timeout");
    expect(outcome.result).toContain("limit of 0.05s");
  });
});
