/**
 * Configuration loading: defaults < JSON file (`CONFIG_FILE`, default `config/default.json`) <
 * environment variables; `AGENTS_FILE` may name a JSON file of agents merged over the file's.
 * Invalid values stop start-up with a `ConfigError` that names the key.
 */
import { existsSync, readFileSync } from "node:fs";
import { delimiter, resolve } from "node:path";
import { ConfigError } from "../errors.js";
import { checkAgentsConfig } from "../agents/config-checks.js";
import { clampTimeouts } from "./clamp.js";
import {
  AGENTS_FILE_VARIABLE,
  CONFIG_FILE_VARIABLE,
  DEFAULT_CONFIG_FILE,
  ENV_BINDINGS,
  type EnvBinding,
} from "./env.js";
import { configSchema, type Config, type ProviderName } from "./schema.js";

export type LoadedConfig = { config: Config; warnings: string[]; source: string | null };

type JsonObject = Record<string, unknown>;

/**
 * Builds the configuration from `env` (usually `process.env`) and the file it names. A missing default
 * file is fine; a missing file named explicitly by `CONFIG_FILE` is an error.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): LoadedConfig {
  // an empty value counts as not set, as for every other variable
  const explicitFile = env[CONFIG_FILE_VARIABLE] || undefined;
  const filePath = resolve(cwd, explicitFile ?? DEFAULT_CONFIG_FILE);
  let fileValues: JsonObject = {};
  let source: string | null = null;
  if (existsSync(filePath)) {
    fileValues = readJsonFile(filePath, CONFIG_FILE_VARIABLE);
    source = filePath;
  } else if (explicitFile !== undefined) {
    throw new ConfigError(`CONFIG_FILE: file not found: ${filePath}`);
  }
  const agentsFile = env[AGENTS_FILE_VARIABLE];
  if (agentsFile !== undefined && agentsFile !== "") {
    fileValues = withAgentsFile(fileValues, resolve(cwd, agentsFile));
  }
  return { ...parseConfig(mergeDeep(fileValues, readEnv(env))), source };
}

/**
 * The configuration file's values with the agents of `AGENTS_FILE` over them: an agent of that file
 * replaces the file's agent of the same id whole (never merged field by field: an agent is read as
 * written in one place), and its `defaultAgent`, when set, wins.
 */
function withAgentsFile(fileValues: JsonObject, path: string): JsonObject {
  if (!existsSync(path)) throw new ConfigError(`AGENTS_FILE: file not found: ${path}`);
  const { agents, defaultAgent, ...rest } = readJsonFile(path, AGENTS_FILE_VARIABLE);
  const unexpected = Object.keys(rest);
  if (unexpected.length > 0) {
    throw new ConfigError(
      `AGENTS_FILE: ${path} may hold only "agents" and "defaultAgent"; found ${unexpected.map((key) => `"${key}"`).join(", ")}`,
    );
  }
  if (agents !== undefined && !isJsonObject(agents))
    throw new ConfigError(`AGENTS_FILE: "agents" in ${path} must be an object of agents by id`);
  const merged: JsonObject = { ...fileValues };
  if (agents !== undefined) {
    merged.agents = { ...(isJsonObject(fileValues.agents) ? fileValues.agents : {}), ...agents };
  }
  if (defaultAgent !== undefined) merged.defaultAgent = defaultAgent;
  return merged;
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Validates a raw configuration object, applies defaults, then the clamp rules. */
export function parseConfig(raw: unknown): { config: Config; warnings: string[] } {
  const protoKey = protoKeyPath(raw);
  if (protoKey !== undefined) {
    throw new ConfigError(`Invalid configuration: ${protoKey}: "__proto__" cannot be a key`);
  }
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => {
      const key = issue.path.join(".") || "(root)";
      // the variable that sets the key, or the list or object the key is an element of (AUTH_TOKENS)
      const variable = ENV_BINDINGS.find((binding) => {
        const bound = binding.path.join(".");
        return key === bound || key.startsWith(`${bound}.`);
      })?.variable;
      // a record's bad key: zod's own message is only "Invalid key in record"; the key's rule says why
      const message =
        issue.code === "invalid_key" ? issue.issues.map((inner) => inner.message).join("; ") : issue.message;
      return `${key}${variable ? ` (${variable})` : ""}: ${message}`;
    });
    throw new ConfigError(`Invalid configuration: ${issues.join("; ")}`, { issues });
  }
  const config = parsed.data;
  const warnings: string[] = [];
  const defaults = clampTimeouts(config.tools, "tools");
  config.tools.timeoutMs = defaults.value.timeoutMs;
  config.tools.idleTimeoutMs = defaults.value.idleTimeoutMs;
  warnings.push(...defaults.warnings);
  for (const [name, override] of Object.entries(config.tools.overrides)) {
    // Only configured limits are stored, so an unset one still falls back to the tool's own (limits.ts);
    // an unset total counts as 0 here, which leaves the idle limit to be clamped per call.
    const clamped = clampTimeouts(
      { timeoutMs: override.timeoutMs ?? 0, idleTimeoutMs: override.idleTimeoutMs ?? 0 },
      `tools.overrides.${name}`,
    );
    if (override.timeoutMs !== undefined) override.timeoutMs = clamped.value.timeoutMs;
    if (override.idleTimeoutMs !== undefined) override.idleTimeoutMs = clamped.value.idleTimeoutMs;
    warnings.push(...clamped.warnings);
  }
  checkExposure(config);
  config.providers.default = defaultProvider(config);
  warnings.push(...checkAgentsConfig(config));
  return { config, warnings };
}

const KEYED_PROVIDERS = ["anthropic", "openai", "kimi", "mistral"] as const;

/**
 * docs/semantics.md#operations: `scripted` unless a provider key is set; a named default must have its key.
 */
function defaultProvider(config: Config): ProviderName {
  const named = config.providers.default;
  if (named !== undefined && named !== "scripted" && !config.providers[named].apiKey) {
    throw new ConfigError(
      `providers.default (DEFAULT_PROVIDER) is "${named}" but providers.${named}.apiKey (${named.toUpperCase()}_API_KEY) is not set`,
    );
  }
  return named ?? KEYED_PROVIDERS.find((name) => config.providers[name].apiKey) ?? "scripted";
}

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "::1", "localhost"]);

/** With no tokens the API is open, so it may only listen on loopback unless auth is explicitly disabled. */
function checkExposure(config: Config): void {
  const { host } = config.server;
  const loopback = LOOPBACK_HOSTS.has(host) || host.startsWith("127.");
  if (!loopback && config.auth.tokens.length === 0 && !config.auth.disabled) {
    throw new ConfigError(
      `server.host (HOST) is "${host}", which is not loopback, and no auth.tokens (AUTH_TOKENS) are set: ` +
        "anyone who can reach it could run and abort turns. Set AUTH_TOKENS, or AUTH_DISABLED=true to allow it.",
    );
  }
  const principals = config.auth.tokens.map((entry) => entry.principal);
  const tokens = config.auth.tokens.map((entry) => entry.token);
  if (new Set(tokens).size !== tokens.length)
    throw new ConfigError("auth.tokens (AUTH_TOKENS): a token is listed twice");
  if (new Set(principals).size !== principals.length) {
    throw new ConfigError("auth.tokens (AUTH_TOKENS): a principal is listed twice");
  }
}

/**
 * Where `value` has an own `__proto__` key (JSON.parse makes one), if anywhere: a record's parse would
 * drop it silently — an agent, a server or an override of that name would vanish without a word.
 */
function protoKeyPath(value: unknown, path = ""): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  for (const [key, child] of Object.entries(value)) {
    const childPath = path ? `${path}.${key}` : key;
    if (key === "__proto__") return childPath;
    const found = protoKeyPath(child, childPath);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** `variable` is the variable that named the file, for the message. */
function readJsonFile(filePath: string, variable: string): JsonObject {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(filePath, "utf8"));
  } catch (error) {
    throw new ConfigError(`${variable}: ${filePath} is not valid JSON (${(error as Error).message})`);
  }
  if (!isJsonObject(parsed)) {
    throw new ConfigError(`${variable}: ${filePath} must contain a JSON object`);
  }
  return parsed as JsonObject;
}

function readEnv(env: NodeJS.ProcessEnv): JsonObject {
  const values: JsonObject = {};
  for (const binding of ENV_BINDINGS) {
    const text = env[binding.variable];
    if (text === undefined || text === "") continue;
    setPath(
      values,
      binding.path,
      parseEnvValue(`${binding.path.join(".")} (${binding.variable})`, text, binding.parse),
    );
  }
  return values;
}

/** `label` names the key and its variable, e.g. `server.port (PORT)`. */
function parseEnvValue(label: string, text: string, parse: EnvBinding["parse"]): unknown {
  if (parse === "string") return text;
  // comma-separated names; paths separated by the platform's delimiter (":" on POSIX)
  if (parse === "list")
    return text
      .split(",")
      .map((item) => item.trim())
      .filter(Boolean);
  if (parse === "path-list")
    return text
      .split(delimiter)
      .map((item) => item.trim())
      .filter(Boolean);
  if (parse === "tokens") return parseTokens(label, text);
  if (parse === "boolean") {
    if (text === "true" || text === "1") return true;
    if (text === "false" || text === "0") return false;
    throw new ConfigError(`${label}: expected true or false, got "${text}"`);
  }
  if (!/^-?\d+$/.test(text.trim())) throw new ConfigError(`${label}: expected a whole number, got "${text}"`);
  return Number(text.trim());
}

/** `principal:token,principal:token` (the token may itself contain ':'). */
function parseTokens(label: string, text: string): { principal: string; token: string }[] {
  return text
    .split(",")
    .map((pair) => pair.trim())
    .filter(Boolean)
    .map((pair) => {
      const colon = pair.indexOf(":");
      if (colon <= 0 || colon === pair.length - 1) {
        throw new ConfigError(`${label}: expected principal:token pairs separated by commas`);
      }
      return { principal: pair.slice(0, colon), token: pair.slice(colon + 1) };
    });
}

function setPath(target: JsonObject, path: readonly string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== "object" || next === null) node[key] = {};
    node = node[key] as JsonObject;
  }
  node[path[path.length - 1] as string] = value;
}

function mergeDeep(base: JsonObject, overlay: JsonObject): JsonObject {
  const merged: JsonObject = { ...base };
  for (const [key, value] of Object.entries(overlay)) {
    const existing = merged[key];
    const bothObjects =
      typeof value === "object" && value !== null && !Array.isArray(value) && typeof existing === "object";
    merged[key] =
      bothObjects && existing !== null && !Array.isArray(existing)
        ? mergeDeep(existing as JsonObject, value as JsonObject)
        : value;
  }
  return merged;
}
