/**
 * The configuration schema: every key, its default and its bounds. Loading (file + environment) is in
 * `load.ts`; the §5.1 clamp rules that warn instead of failing are in `clamp.ts`.
 */
import { z } from "zod";

export const DEFAULT_TOOL_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_CALL_TIMEOUT_MS = 600_000;
export const DEFAULT_PROGRESS_AFTER_MS = 5_000;
export const DEFAULT_PROGRESS_INTERVAL_MS = 5_000;
export const DEFAULT_PING_INTERVAL_MS = 15_000;
export const DEFAULT_BODY_LIMIT_BYTES = 1_048_576;
export const DEFAULT_TURN_TIMEOUT_MS = 300_000;

export const SYSTEM_TOOL_NAMES = ["exec", "read_file", "web_fetch"] as const;
export const PROVIDER_NAMES = ["scripted", "anthropic", "openai", "kimi", "mistral"] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** A model provider's access: key, base URL (the official one when unset), model, context budget. */
function providerSchema(defaultModel: string, defaultBaseUrl?: string) {
  return z.strictObject({
    apiKey: z.string().min(1).optional(),
    baseUrl:
      defaultBaseUrl === undefined ? z.string().url().optional() : z.string().url().default(defaultBaseUrl),
    model: z.string().min(1).default(defaultModel),
    maxTokens: z.number().int().positive().optional(),
    /** Overrides the profile's context budget (estimated tokens): an agent's instructions and the transcript. */
    contextBudgetTokens: z.number().int().positive().optional(),
  });
}

/** Node timers cannot wait longer than 2^31−1 ms (about 24.8 days); a larger value would fire at once. */
export const MAX_TIMER_MS = 2_147_483_647;
const milliseconds = z.number().int().max(MAX_TIMER_MS);
const positiveMilliseconds = z.number().int().positive().max(MAX_TIMER_MS);

/** Per-tool overrides, keyed by tool name in `tools.overrides`. */
const retrySchema = z.strictObject({
  maxAttempts: z.number().int().min(1).max(100).optional(),
  initialDelayMs: milliseconds.min(0).optional(),
  multiplier: z.number().min(1).max(10).optional(),
  maxDelayMs: milliseconds.min(0).optional(),
  jitterRatio: z.number().min(0).max(1).optional(),
  maxRetryTimeMs: milliseconds.min(0).optional(),
  retryOnTimeout: z.boolean().optional(),
});

export const toolOverrideSchema = z.strictObject({
  timeoutMs: milliseconds.optional(),
  idleTimeoutMs: milliseconds.optional(),
  /** Retry policy fields for this tool (docs/semantics.md#resilience). */
  retry: retrySchema.optional(),
  /** A tool tried with the same input when this one fails permanently or its circuit is open. */
  fallback: z.string().min(1).optional(),
});

/** What an agent may run: tool names or `*` patterns (`docs__*`). */
const toolPattern = z.string().regex(/^[A-Za-z0-9_*-]{1,64}$/, "a tool name or a * pattern");

/** One agent (docs/semantics.md#agents): its prompt, model, tools, approval policy and limits. */
export const agentSchema = z.strictObject({
  description: z.string().default(""),
  /** The system prompt; never stored as a history block. */
  instructions: z.string().optional(),
  provider: z.enum(PROVIDER_NAMES).optional(),
  model: z.string().min(1).optional(),
  /** Tools offered to the model and allowed to run; names or `*` patterns. */
  tools: z.array(toolPattern).default([]),
  /** Tool name or pattern → whether a call waits for a person's approval (default `never`). */
  approval: z.record(toolPattern, z.enum(["always", "never"])).default({}),
  /** Limits that replace the global ones for this agent's turns. */
  limits: z
    .strictObject({
      maxSteps: z.number().int().min(1).max(1000).optional(),
      turnTimeoutMs: milliseconds.min(0).optional(),
      tools: z.record(z.string(), toolOverrideSchema).optional(),
    })
    .prefault({}),
});

/**
 * An MCP server (docs/semantics.md#mcp-servers), in the shape other MCP hosts use: a command (stdio) or a
 * URL.
 */
export const mcpServerSchema = z.union([
  z.strictObject({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
  }),
  z.strictObject({
    url: z.string().url(),
    headers: z.record(z.string(), z.string()).default({}),
  }),
]);

export const AGENT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** At most 32 characters: a tool's name, `<server>__<tool>` cut to 64, keeps 30 for the tool's own. */
export const MCP_SERVER_NAME_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;

export const configSchema = z.strictObject({
  server: z
    .strictObject({
      port: z.number().int().min(0).max(65_535).default(8787),
      host: z.string().min(1).default("127.0.0.1"),
      bodyLimitBytes: z.number().int().positive().default(DEFAULT_BODY_LIMIT_BYTES),
      /** Origins allowed to call the API from a browser (CORS); none by default (same origin only). */
      corsOrigins: z.array(z.string().url().or(z.literal("*"))).default([]),
    })
    .prefault({}),
  auth: z
    .strictObject({
      /** Bearer tokens and the principals they stand for. */
      tokens: z
        .array(
          z.strictObject({
            principal: z.string().regex(/^[A-Za-z0-9_.@-]{1,64}$/),
            token: z.string().min(8),
          }),
        )
        .default([]),
      /** Allows serving without tokens on a non-loopback host. */
      disabled: z.boolean().default(false),
    })
    .prefault({}),
  dataDir: z.string().min(1).default("./data"),
  logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  providers: z
    .strictObject({
      /** Provider for turns that name none; unset: the first provider with a key, else `scripted`. */
      default: z.enum(PROVIDER_NAMES).optional(),
      anthropic: providerSchema("claude-sonnet-4-5")
        .extend({
          maxTokens: z.number().int().positive().default(4096),
          /** Extended thinking budget (tokens); 0 = off. */
          thinkingBudgetTokens: z.number().int().min(0).default(0),
        })
        .prefault({}),
      openai: providerSchema("gpt-4.1").prefault({}),
      kimi: providerSchema("kimi-k2-0905-preview", "https://api.moonshot.ai/v1")
        .extend({
          /** Send and keep `reasoning_content` (thinking models). */
          thinking: z.boolean().default(false),
        })
        .prefault({}),
      mistral: providerSchema("mistral-large-latest", "https://api.mistral.ai/v1").prefault({}),
    })
    .prefault({}),
  tools: z
    .strictObject({
      /** Default wall-clock limit per call; 0 = none. */
      timeoutMs: milliseconds.default(DEFAULT_TOOL_TIMEOUT_MS),
      /** Default no-progress limit per call; 0 = none. */
      idleTimeoutMs: milliseconds.default(0),
      /** Upper bound for a call's own `_meta.timeout`. */
      maxCallTimeoutMs: positiveMilliseconds.default(DEFAULT_MAX_CALL_TIMEOUT_MS),
      maxParallelTools: z.number().int().min(1).max(256).default(8),
      overrides: z.record(z.string(), toolOverrideSchema).default({}),
      /** Tools that touch the system; each is off unless listed. */
      system: z
        .strictObject({
          enabled: z.array(z.enum(SYSTEM_TOOL_NAMES)).default([]),
          /** Directories `exec` and `read_file` are confined to (resolved, symlinks followed). */
          allowedRoots: z.array(z.string().min(1)).default([]),
          /** Working directory of `exec` and base of relative paths; defaults to the first allowed root. */
          workspace: z.string().min(1).optional(),
          /** Grace between SIGTERM and SIGKILL when an `exec` call is stopped. */
          execKillGraceMs: milliseconds.min(0).default(2_000),
          /** Cap on what `exec`, `read_file` and `web_fetch` return (bytes). */
          maxOutputBytes: z.number().int().positive().default(65_536),
          /** How `exec` is isolated: `bwrap` (bubblewrap namespaces) or `none` (explicit opt-out). */
          execIsolation: z.enum(["bwrap", "none"]).default("bwrap"),
          /** Destinations `web_fetch` may reach although private (hosts, IPs or CIDR ranges). */
          webFetchAllow: z.array(z.string().min(1)).default([]),
        })
        .prefault({}),
    })
    .prefault({}),
  turns: z
    .strictObject({
      maxSteps: z.number().int().min(1).max(1000).default(25),
      /** Per-turn limit (0 = none): then open calls are closed and one final inference answers. */
      timeoutMs: milliseconds.min(0).default(DEFAULT_TURN_TIMEOUT_MS),
      /** How long that final inference may take before the turn is aborted. */
      finalAnswerTimeoutMs: positiveMilliseconds.default(30_000),
      /** Deepest nesting of child turns started by `delegate`. */
      maxDepth: z.number().int().min(0).max(10).default(3),
      /** Step mode: how long a pause waits before it resolves by itself. */
      stepPauseTimeoutMs: positiveMilliseconds.default(30_000),
      /** …and then whether the turn continues or is aborted. */
      stepOnTimeout: z.enum(["continue", "abort"]).default("continue"),
      /** Child turns one root turn may start through `delegate`: in all, and running at once. */
      maxChildTurns: z.number().int().min(0).max(10_000).default(16),
      maxConcurrentChildTurns: z.number().int().min(1).max(1_000).default(4),
      /** Events one turn may write; reaching it ends the turn (reason `limit`). */
      maxEventsPerTurn: z.number().int().min(100).max(10_000_000).default(20_000),
      /** How long a call waits for a person's approval before it is rejected. */
      approvalTimeoutMs: positiveMilliseconds.default(600_000),
      /** Text and thinking deltas are coalesced for this long, or until this many characters. */
      deltaCoalesceMs: milliseconds.min(0).default(30),
      deltaCoalesceChars: z.number().int().min(1).max(1_000_000).default(2_048),
      /** The loop detector: the same call `warnAt` times in the last `windowSize` calls warns, `stopAt` stops. */
      loopDetector: z
        .strictObject({
          windowSize: z.number().int().min(1).max(1_000).default(20),
          warnAt: z.number().int().min(2).max(1_000).default(3),
          stopAt: z.number().int().min(2).max(1_000).default(5),
        })
        .prefault({}),
    })
    .prefault({}),
  resilience: z
    .strictObject({
      /** Retry defaults for every tool; `tools.overrides.<tool>.retry` and the tool's own win. */
      retry: retrySchema.prefault({}),
      breaker: z
        .strictObject({
          failureThreshold: z.number().int().min(1).default(5),
          openMs: positiveMilliseconds.default(30_000),
          halfOpenSuccesses: z.number().int().min(1).default(2),
        })
        .prefault({}),
    })
    .prefault({}),
  limits: z
    .strictObject({
      /** Running turns one principal may have (the unauthenticated loopback principal included). */
      maxTurnsPerPrincipal: z.number().int().min(1).max(100_000).default(8),
      /** Open SSE streams one principal may hold. */
      maxStreamsPerPrincipal: z.number().int().min(1).max(100_000).default(32),
      /**
       * MiB (2^20 characters) of stored history the sessions in memory may hold together;
       * idle sessions past it are dropped, least recently used first, and reload from the database.
       */
      historyCacheMb: z.number().int().min(1).max(65_536).default(64),
    })
    .prefault({}),
  /** Agents by id; none configured: one built-in agent `default`. */
  agents: z
    .record(z.string().regex(AGENT_ID_PATTERN, "an agent id: [A-Za-z0-9_-]{1,64}"), agentSchema)
    .default({}),
  /** The agent of turns that name none (and of new sessions). */
  defaultAgent: z.string().regex(AGENT_ID_PATTERN).optional(),
  /** MCP servers whose tools are offered as `<server>__<tool>`. */
  mcpServers: z
    .record(z.string().regex(MCP_SERVER_NAME_PATTERN, "a server name: [A-Za-z0-9_-]{1,32}"), mcpServerSchema)
    .default({}),
  stream: z
    .strictObject({
      progressAfterMs: positiveMilliseconds.default(DEFAULT_PROGRESS_AFTER_MS),
      progressIntervalMs: positiveMilliseconds.default(DEFAULT_PROGRESS_INTERVAL_MS),
      pingIntervalMs: positiveMilliseconds.default(DEFAULT_PING_INTERVAL_MS),
      onDisconnect: z.enum(["abort", "continue"]).default("abort"),
      disconnectGraceMs: milliseconds.min(0).default(0),
    })
    .prefault({}),
});

/** Configuration as written in a file: every key optional. */
export type ConfigInput = z.input<typeof configSchema>;
/** Configuration after defaults and clamping. */
export type Config = z.output<typeof configSchema>;
export type ToolOverride = z.output<typeof toolOverrideSchema>;
export type AgentConfig = z.output<typeof agentSchema>;
export type McpServerConfig = z.output<typeof mcpServerSchema>;
