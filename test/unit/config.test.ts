/**
 * Configuration loading (docs/semantics.md#operations): defaults < JSON file < environment; every bound
 * variable lands where it should; invalid values stop start-up naming the key and the variable; the §5.1
 * clamp rules warn; `.env.example` documents every variable.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig, parseConfig } from "../../src/config/load.js";
import { CONFIG_FILE_VARIABLE, ENV_BINDINGS, type EnvBinding } from "../../src/config/env.js";
import { ConfigError } from "../../src/errors.js";

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

let directory: string;

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), "reins-config-"));
});

afterEach(() => {
  rmSync(directory, { recursive: true, force: true });
});

function writeJson(relativePath: string, value: unknown): string {
  const path = join(directory, relativePath);
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, JSON.stringify(value));
  return path;
}

function valueAt(target: unknown, path: readonly string[]): unknown {
  let node = target;
  for (const key of path) node = (node as Record<string, unknown>)[key];
  return node;
}

/** Runs `load` and returns the ConfigError it throws; fails the test if it throws anything else or nothing. */
function configErrorOf(load: () => unknown): ConfigError {
  try {
    load();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe("config_invalid");
    return error as ConfigError;
  }
  throw new Error("expected a ConfigError, but the configuration loaded");
}

describe("defaults", () => {
  it("with no file and no variables, every key has its documented default", () => {
    const loaded = loadConfig({}, directory);
    expect(loaded.source).toBeNull();
    expect(loaded.warnings).toEqual([]);
    expect(loaded.config).toEqual({
      server: { port: 8787, host: "127.0.0.1", bodyLimitBytes: 1_048_576, corsOrigins: [] },
      dataDir: "./data",
      logLevel: "info",
      providers: {
        default: "scripted",
        anthropic: { model: "claude-sonnet-4-5", maxTokens: 4096, thinkingBudgetTokens: 0 },
        openai: { model: "gpt-4.1" },
        kimi: { baseUrl: "https://api.moonshot.ai/v1", model: "kimi-k2-0905-preview", thinking: false },
        mistral: { baseUrl: "https://api.mistral.ai/v1", model: "mistral-large-latest" },
      },
      tools: {
        timeoutMs: 120_000,
        idleTimeoutMs: 0,
        maxCallTimeoutMs: 600_000,
        maxParallelTools: 8,
        overrides: {},
        system: {
          enabled: [],
          allowedRoots: [],
          execKillGraceMs: 2_000,
          maxOutputBytes: 65_536,
          execIsolation: "bwrap",
          webFetchAllow: [],
        },
      },
      turns: {
        maxSteps: 25,
        timeoutMs: 300_000,
        finalAnswerTimeoutMs: 30_000,
        maxDepth: 3,
        stepPauseTimeoutMs: 30_000,
        stepOnTimeout: "continue",
        maxChildTurns: 16,
        maxConcurrentChildTurns: 4,
        maxEventsPerTurn: 20_000,
        deltaCoalesceMs: 30,
        deltaCoalesceChars: 2_048,
        loopDetector: { windowSize: 20, warnAt: 3, stopAt: 5 },
        approvalTimeoutMs: 600_000,
      },
      agents: {},
      mcpServers: {},
      limits: { maxTurnsPerPrincipal: 8, maxStreamsPerPrincipal: 32, historyCacheMb: 64 },
      auth: { tokens: [], disabled: false },
      resilience: {
        retry: {},
        breaker: { failureThreshold: 5, openMs: 30_000, halfOpenSuccesses: 2 },
      },
      stream: {
        progressAfterMs: 5000,
        progressIntervalMs: 5000,
        pingIntervalMs: 15_000,
        onDisconnect: "abort",
        disconnectGraceMs: 0,
      },
    });
  });

  it("the repository's own config/default.json loads cleanly", () => {
    const loaded = loadConfig({}, REPO_ROOT);
    expect(loaded.source).toBe(join(REPO_ROOT, "config", "default.json"));
    expect(loaded.warnings).toEqual([]);
    expect(loaded.config.tools.timeoutMs).toBe(120_000);
  });

  it("an empty variable counts as unset", () => {
    const loaded = loadConfig({ PORT: "", TOOL_TIMEOUT_MS: "" }, directory);
    expect(loaded.config.server.port).toBe(8787);
    expect(loaded.config.tools.timeoutMs).toBe(120_000);
  });
});

describe("precedence: defaults < file < environment", () => {
  it("reads config/default.json under cwd when CONFIG_FILE is unset", () => {
    const path = writeJson("config/default.json", { server: { port: 9000 } });
    const loaded = loadConfig({}, directory);
    expect(loaded.source).toBe(path);
    expect(loaded.config.server.port).toBe(9000);
    expect(loaded.config.server.host).toBe("127.0.0.1");
    // an empty CONFIG_FILE (a `.env` line `CONFIG_FILE=`) counts as unset, like every other variable
    const empty = loadConfig({ CONFIG_FILE: "" }, directory);
    expect(empty.source).toBe(path);
    expect(empty.config.server.port).toBe(9000);
  });

  it("a variable beats the file, and the file's sibling keys survive", () => {
    writeJson("config/default.json", {
      server: { port: 9000, host: "0.0.0.0" },
      tools: { timeoutMs: 1000, idleTimeoutMs: 200 },
      auth: { disabled: true },
    });
    const loaded = loadConfig({ TOOL_TIMEOUT_MS: "3000", PORT: "9100" }, directory);
    expect(loaded.config.tools.timeoutMs).toBe(3000);
    expect(loaded.config.tools.idleTimeoutMs).toBe(200);
    expect(loaded.config.server).toEqual({
      port: 9100,
      host: "0.0.0.0",
      bodyLimitBytes: 1_048_576,
      corsOrigins: [],
    });
  });

  it("CONFIG_FILE names a file relative to cwd", () => {
    const path = writeJson("elsewhere/reins.json", { turns: { maxSteps: 3 } });
    writeJson("config/default.json", { turns: { maxSteps: 99 } });
    const loaded = loadConfig({ CONFIG_FILE: "elsewhere/reins.json" }, directory);
    expect(loaded.source).toBe(path);
    expect(loaded.config.turns.maxSteps).toBe(3);
  });

  it("CONFIG_FILE may be absolute", () => {
    const path = writeJson("abs.json", { logLevel: "debug" });
    const loaded = loadConfig({ CONFIG_FILE: path }, tmpdir());
    expect(loaded.source).toBe(path);
    expect(loaded.config.logLevel).toBe("debug");
  });

  it("a CONFIG_FILE that does not exist stops start-up, naming the variable and the path", () => {
    const error = configErrorOf(() => loadConfig({ CONFIG_FILE: "missing.json" }, directory));
    expect(error.message).toContain("CONFIG_FILE");
    expect(error.message).toContain(join(directory, "missing.json"));
  });

  it.each([
    { name: "not JSON", text: "{ port: 1 " },
    { name: "an array", text: "[1, 2]" },
    { name: "a number", text: "42" },
  ])("a file that is $name stops start-up naming CONFIG_FILE", ({ text }) => {
    writeFileSync(join(directory, "bad.json"), text);
    const error = configErrorOf(() => loadConfig({ CONFIG_FILE: "bad.json" }, directory));
    expect(error.message).toContain("CONFIG_FILE");
    expect(error.message).toContain(join(directory, "bad.json"));
  });
});

describe("every variable in ENV_BINDINGS lands in the configuration", () => {
  // Values valid for their key and, where the schema allows more than one value, unlike the default.
  const SAMPLE_BY_VARIABLE: Record<string, { text: string; value: unknown }> = {
    HOST: { text: "127.0.0.2", value: "127.0.0.2" },
    CORS_ORIGINS: {
      text: "https://a.example,https://b.example",
      value: ["https://a.example", "https://b.example"],
    },
    AUTH_TOKENS: {
      text: "alice:token-of-alice,bob:token:with:colons",
      value: [
        { principal: "alice", token: "token-of-alice" },
        { principal: "bob", token: "token:with:colons" },
      ],
    },
    STEP_ON_TIMEOUT: { text: "abort", value: "abort" },
    ...Object.fromEntries(
      ["ANTHROPIC", "OPENAI", "MISTRAL", "KIMI"].map((name) => [
        `${name}_BASE_URL`,
        { text: "http://127.0.0.1:9999/v1", value: "http://127.0.0.1:9999/v1" },
      ]),
    ),
    DATA_DIR: { text: "/var/lib/reins", value: "/var/lib/reins" },
    LOG_LEVEL: { text: "debug", value: "debug" },
    DEFAULT_PROVIDER: { text: "scripted", value: "scripted" },
    ON_DISCONNECT: { text: "continue", value: "continue" },
    SYSTEM_TOOLS: { text: "exec, read_file", value: ["exec", "read_file"] },
    MAX_TURN_DEPTH: { text: "2", value: 2 },
    EXEC_ISOLATION: { text: "none", value: "none" },
    WEB_FETCH_ALLOW: { text: "127.0.0.1,10.0.0.0/8", value: ["127.0.0.1", "10.0.0.0/8"] },
    MAX_EVENTS_PER_TURN: { text: "5000", value: 5000 },
  };
  const SAMPLE_BY_TYPE: Record<EnvBinding["parse"], { text: string; value: unknown }> = {
    integer: { text: "17", value: 17 },
    string: { text: "sample", value: "sample" },
    boolean: { text: "true", value: true },
    list: { text: "a,b", value: ["a", "b"] },
    "path-list": { text: "/srv/a:/srv/b", value: ["/srv/a", "/srv/b"] },
    tokens: { text: "ops:a-long-token", value: [{ principal: "ops", token: "a-long-token" }] },
  };

  it.each(ENV_BINDINGS.map((binding) => [binding.variable, binding] as const))("%s", (variable, binding) => {
    const sample = SAMPLE_BY_VARIABLE[variable] ?? SAMPLE_BY_TYPE[binding.parse];
    const loaded = loadConfig({ [variable]: sample.text }, directory);
    expect(valueAt(loaded.config, binding.path)).toEqual(sample.value);
  });

  it("the bindings name distinct variables and distinct keys", () => {
    const variables = ENV_BINDINGS.map((binding) => binding.variable);
    const paths = ENV_BINDINGS.map((binding) => binding.path.join("."));
    expect(new Set(variables).size).toBe(variables.length);
    expect(new Set(paths).size).toBe(paths.length);
    expect(variables).not.toContain(CONFIG_FILE_VARIABLE);
  });

  it("integer variables tolerate surrounding whitespace", () => {
    expect(loadConfig({ PORT: " 9001 " }, directory).config.server.port).toBe(9001);
  });

  it("variables outside the bindings are ignored", () => {
    const loaded = loadConfig({ PATH: "/usr/bin", HOME: "/root", port: "1" }, directory);
    expect(loaded.config.server.port).toBe(8787);
  });
});

describe("invalid values stop start-up naming the key and the variable", () => {
  it.each([
    { variable: "ON_DISCONNECT", text: "maybe", key: "stream.onDisconnect" },
    { variable: "MAX_PARALLEL_TOOLS", text: "0", key: "tools.maxParallelTools" },
    { variable: "MAX_PARALLEL_TOOLS", text: "257", key: "tools.maxParallelTools" },
    { variable: "PORT", text: "70000", key: "server.port" },
    { variable: "PORT", text: "-1", key: "server.port" },
    { variable: "LOG_LEVEL", text: "loud", key: "logLevel" },
    { variable: "DEFAULT_PROVIDER", text: "nope", key: "providers.default" },
    { variable: "MAX_STEPS", text: "0", key: "turns.maxSteps" },
    { variable: "BODY_LIMIT_BYTES", text: "0", key: "server.bodyLimitBytes" },
    { variable: "MAX_CALL_TIMEOUT_MS", text: "0", key: "tools.maxCallTimeoutMs" },
    { variable: "PROGRESS_AFTER_MS", text: "0", key: "stream.progressAfterMs" },
    { variable: "PROGRESS_INTERVAL_MS", text: "-5", key: "stream.progressIntervalMs" },
    { variable: "PING_INTERVAL_MS", text: "0", key: "stream.pingIntervalMs" },
    { variable: "DISCONNECT_GRACE_MS", text: "-1", key: "stream.disconnectGraceMs" },
  ])("$variable=$text", ({ variable, text, key }) => {
    const error = configErrorOf(() => loadConfig({ [variable]: text }, directory));
    expect(error.message).toContain(key);
    expect(error.message).toContain(variable);
  });

  it.each([
    { variable: "PORT", text: "abc" },
    { variable: "TOOL_TIMEOUT_MS", text: "1.5" },
    { variable: "MAX_STEPS", text: "1e3" },
    { variable: "DISCONNECT_GRACE_MS", text: "ten" },
  ])("$variable=$text (not a whole number) names the variable and the value", ({ variable, text }) => {
    const error = configErrorOf(() => loadConfig({ [variable]: text }, directory));
    expect(error.message).toContain(variable);
    expect(error.message).toContain(text);
  });

  it.each([
    { variable: "AUTH_TOKENS", text: "alice:short", key: "auth.tokens.0.token" },
    { variable: "CORS_ORIGINS", text: "example.com", key: "server.corsOrigins.0" },
  ])(
    "$variable=$text (a bad element of a list) names the element and the variable",
    ({ variable, text, key }) => {
      const error = configErrorOf(() => loadConfig({ [variable]: text }, directory));
      expect(error.message).toContain(key);
      expect(error.message).toContain(variable);
    },
  );

  it("a bad value in the file names the key and the variable that sets it", () => {
    writeJson("config/default.json", { server: { port: "80" } });
    const error = configErrorOf(() => loadConfig({}, directory));
    expect(error.message).toContain("server.port");
    expect(error.message).toContain("PORT");
  });

  it("a bad value for a key with no variable names the key", () => {
    writeJson("config/default.json", { tools: { overrides: { hang: { timeoutMs: "soon" } } } });
    const error = configErrorOf(() => loadConfig({}, directory));
    expect(error.message).toContain("tools.overrides.hang.timeoutMs");
  });

  it("a valid environment value does not rescue an invalid file", () => {
    writeJson("config/default.json", { turns: { maxSteps: 0 } });
    const error = configErrorOf(() => loadConfig({ PORT: "9000" }, directory));
    expect(error.message).toContain("turns.maxSteps");
  });
});

describe("unknown keys in the file are rejected, naming the key", () => {
  it.each([
    { name: "at the top level", file: { colour: "blue" }, names: ["colour"] },
    { name: "in a section", file: { tools: { timeout: 5000 } }, names: ["tools", "timeout"] },
    {
      name: "in a tool override",
      file: { tools: { overrides: { hang: { timeOutMs: 5 } } } },
      names: ["timeOutMs"],
    },
    { name: "a misspelt section", file: { stream: {}, streams: { pingIntervalMs: 1 } }, names: ["streams"] },
  ])("$name", ({ file, names }) => {
    writeJson("config/default.json", file);
    const error = configErrorOf(() => loadConfig({}, directory));
    for (const name of names) expect(error.message).toContain(name);
  });
});

describe("a key that would vanish silently is refused, naming where it is", () => {
  // JSON.parse makes "__proto__" an own key; a record's parse would drop it, and the agent, server or
  // override it names would be gone without a word (an agent's approval rules with it)
  it.each([
    [
      "an agent",
      '{"agents":{"__proto__":{"tools":["echo"],"approval":{"echo":"always"}}}}',
      "agents.__proto__",
    ],
    ["a server", '{"mcpServers":{"__proto__":{"command":"node"}}}', "mcpServers.__proto__"],
    ["an override", '{"tools":{"overrides":{"__proto__":{"timeoutMs":5}}}}', "tools.overrides.__proto__"],
    [
      "a server's variable",
      '{"mcpServers":{"m":{"command":"node","env":{"__proto__":"x"}}}}',
      "mcpServers.m.env.__proto__",
    ],
  ])("%s named __proto__", (_label, text, where) => {
    writeFileSync(join(directory, "config.json"), text);
    const error = configErrorOf(() => loadConfig({ CONFIG_FILE: "config.json" }, directory));
    expect(error.message).toBe(`Invalid configuration: ${where}: "__proto__" cannot be a key`);
  });
});

describe("an MCP server's name leaves room for its tools' names", () => {
  it("is at most 32 characters", () => {
    const server = { command: "node" };
    expect(parseConfig({ mcpServers: { ["s".repeat(32)]: server } }).config.mcpServers).toHaveProperty(
      "s".repeat(32),
    );
    const error = configErrorOf(() => parseConfig({ mcpServers: { ["s".repeat(33)]: server } }));
    expect(error.message).toContain(`mcpServers.${"s".repeat(33)}: a server name: [A-Za-z0-9_-]{1,32}`);
  });
});

describe("the §5.1 clamp rules correct and warn instead of failing", () => {
  it.each([
    {
      name: "negative total",
      env: { TOOL_TIMEOUT_MS: "-5" },
      file: undefined,
      expected: { timeoutMs: 0, idleTimeoutMs: 0 },
      mentions: ["tools.timeoutMs", "negative"],
    },
    {
      name: "negative idle",
      env: { TOOL_IDLE_TIMEOUT_MS: "-1" },
      file: undefined,
      expected: { timeoutMs: 120_000, idleTimeoutMs: 0 },
      mentions: ["tools.idleTimeoutMs", "negative"],
    },
    {
      name: "idle above total",
      env: { TOOL_TIMEOUT_MS: "1000", TOOL_IDLE_TIMEOUT_MS: "5000" },
      file: undefined,
      expected: { timeoutMs: 1000, idleTimeoutMs: 1000 },
      mentions: ["tools.idleTimeoutMs", "tools.timeoutMs", "5000", "1000"],
    },
    {
      name: "idle above a total set in the file",
      env: { TOOL_IDLE_TIMEOUT_MS: "5000" },
      file: { tools: { timeoutMs: 2000 } },
      expected: { timeoutMs: 2000, idleTimeoutMs: 2000 },
      mentions: ["tools.idleTimeoutMs", "2000"],
    },
  ])("$name", ({ env, file, expected, mentions }) => {
    if (file) writeJson("config/default.json", file);
    const loaded = loadConfig(env, directory);
    expect({
      timeoutMs: loaded.config.tools.timeoutMs,
      idleTimeoutMs: loaded.config.tools.idleTimeoutMs,
    }).toEqual(expected);
    expect(loaded.warnings).toHaveLength(1);
    for (const mention of mentions) expect(loaded.warnings[0]).toContain(mention);
  });

  it("idle with no total limit is left alone", () => {
    const loaded = loadConfig({ TOOL_TIMEOUT_MS: "0", TOOL_IDLE_TIMEOUT_MS: "5000" }, directory);
    expect(loaded.config.tools.idleTimeoutMs).toBe(5000);
    expect(loaded.warnings).toEqual([]);
  });

  it.each([
    {
      name: "idle above total",
      override: { timeoutMs: 1000, idleTimeoutMs: 3000 },
      expected: { timeoutMs: 1000, idleTimeoutMs: 1000 },
      mentions: ["tools.overrides.hang.idleTimeoutMs", "3000"],
    },
    {
      name: "negative total",
      override: { timeoutMs: -1, idleTimeoutMs: 0 },
      expected: { timeoutMs: 0, idleTimeoutMs: 0 },
      mentions: ["tools.overrides.hang.timeoutMs", "negative"],
    },
  ])("a tool override with $name", ({ override, expected, mentions }) => {
    writeJson("config/default.json", { tools: { overrides: { hang: override } } });
    const loaded = loadConfig({}, directory);
    expect(loaded.config.tools.overrides.hang).toEqual(expected);
    expect(loaded.warnings).toHaveLength(1);
    for (const mention of mentions) expect(loaded.warnings[0]).toContain(mention);
  });
});

describe(".env.example", () => {
  const readExample = () => readFileSync(join(REPO_ROOT, ".env.example"), "utf8");
  /** `NAME=value` lines, commented out (`# NAME=`) or not. */
  const listedVariables = (text: string) =>
    new Set([...text.matchAll(/^[ \t]*#?[ \t]*([A-Z][A-Z0-9_]*)[ \t]*=/gm)].map((match) => match[1]));

  it.each([...ENV_BINDINGS.map((binding) => binding.variable), CONFIG_FILE_VARIABLE])(
    "lists %s",
    (variable) => {
      expect(listedVariables(readExample()).has(variable)).toBe(true);
    },
  );

  it("its values, used as they are, load without error or warning", () => {
    const env: Record<string, string> = {};
    for (const match of readExample().matchAll(/^[ \t]*([A-Z][A-Z0-9_]*)[ \t]*=(.*)$/gm)) {
      const [, name, raw] = match;
      if (name === undefined || raw === undefined) continue;
      env[name] = raw.trim().replace(/^(["'])(.*)\1$/, "$2");
    }
    const loaded = loadConfig(env, REPO_ROOT);
    expect(loaded.warnings).toEqual([]);
  });
});

describe("config regressions", () => {
  it("names the key as well as the variable when a number does not parse", () => {
    const error = configErrorOf(() => loadConfig({ PORT: "abc" }, directory));
    expect(error.message).toContain("server.port (PORT)");
  });

  it("stores only the limits an override configures, so the tool's own still apply", () => {
    writeJson("config/default.json", { tools: { overrides: { fetch: { idleTimeoutMs: 1_000 } } } });
    const { config } = loadConfig({}, directory);
    expect(config.tools.overrides.fetch).toEqual({ idleTimeoutMs: 1_000 });
  });
});

describe("exposure and auth settings", () => {
  it("refuses a non-loopback HOST without tokens, naming both keys", () => {
    const error = configErrorOf(() => loadConfig({ HOST: "0.0.0.0" }, directory));
    expect(error.message).toContain("server.host (HOST)");
    expect(error.message).toContain("AUTH_TOKENS");
  });

  it.each([
    ["tokens", { HOST: "0.0.0.0", AUTH_TOKENS: "ops:a-long-token" }],
    ["AUTH_DISABLED", { HOST: "0.0.0.0", AUTH_DISABLED: "true" }],
    ["a loopback host", { HOST: "127.0.0.5" }],
  ])("allows it with %s", (_name, env) => {
    expect(() => loadConfig(env, directory)).not.toThrow();
  });

  it.each([
    ["a pair without a colon", "alice", "principal:token pairs"],
    ["a token listed twice", "alice:same-token,bob:same-token", "a token is listed twice"],
    ["a principal listed twice", "alice:token-one-x,alice:token-two-y", "a principal is listed twice"],
    ["a short token", "alice:short", "auth.tokens"],
  ])("rejects AUTH_TOKENS with %s", (_name, value, message) => {
    expect(configErrorOf(() => loadConfig({ AUTH_TOKENS: value }, directory)).message).toContain(message);
  });
});

describe("default provider", () => {
  it.each([
    ["no key", {}, "scripted"],
    ["an OpenAI key", { OPENAI_API_KEY: "sk-1" }, "openai"],
    ["Anthropic and Mistral keys", { MISTRAL_API_KEY: "m-1", ANTHROPIC_API_KEY: "a-1" }, "anthropic"],
    ["a named default", { KIMI_API_KEY: "k-1", OPENAI_API_KEY: "o-1", DEFAULT_PROVIDER: "kimi" }, "kimi"],
    ["scripted named despite a key", { OPENAI_API_KEY: "o-1", DEFAULT_PROVIDER: "scripted" }, "scripted"],
  ])("with %s is %s", (_name, env, expected) => {
    expect(loadConfig(env, directory).config.providers.default).toBe(expected);
  });

  it("refuses a default provider without its key, naming both", () => {
    const error = configErrorOf(() => loadConfig({ DEFAULT_PROVIDER: "mistral" }, directory));
    expect(error.message).toContain("providers.default (DEFAULT_PROVIDER)");
    expect(error.message).toContain("MISTRAL_API_KEY");
  });
});
