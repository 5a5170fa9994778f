/**
 * The environment variables of docs/semantics.md#operations and where each lands in the configuration. One
 * table, read by the loader and by the test that checks `.env.example` lists them all.
 */
type Parser = "string" | "integer" | "boolean" | "list" | "path-list" | "tokens";

export type EnvBinding = { variable: string; path: readonly string[]; parse: Parser };

export const ENV_BINDINGS: readonly EnvBinding[] = [
  { variable: "PORT", path: ["server", "port"], parse: "integer" },
  { variable: "HOST", path: ["server", "host"], parse: "string" },
  { variable: "BODY_LIMIT_BYTES", path: ["server", "bodyLimitBytes"], parse: "integer" },
  { variable: "CORS_ORIGINS", path: ["server", "corsOrigins"], parse: "list" },
  { variable: "AUTH_TOKENS", path: ["auth", "tokens"], parse: "tokens" },
  { variable: "AUTH_DISABLED", path: ["auth", "disabled"], parse: "boolean" },
  { variable: "DATA_DIR", path: ["dataDir"], parse: "string" },
  { variable: "LOG_LEVEL", path: ["logLevel"], parse: "string" },
  { variable: "DEFAULT_PROVIDER", path: ["providers", "default"], parse: "string" },
  { variable: "ANTHROPIC_API_KEY", path: ["providers", "anthropic", "apiKey"], parse: "string" },
  { variable: "ANTHROPIC_BASE_URL", path: ["providers", "anthropic", "baseUrl"], parse: "string" },
  { variable: "ANTHROPIC_MODEL", path: ["providers", "anthropic", "model"], parse: "string" },
  { variable: "OPENAI_API_KEY", path: ["providers", "openai", "apiKey"], parse: "string" },
  { variable: "OPENAI_BASE_URL", path: ["providers", "openai", "baseUrl"], parse: "string" },
  { variable: "OPENAI_MODEL", path: ["providers", "openai", "model"], parse: "string" },
  { variable: "MISTRAL_API_KEY", path: ["providers", "mistral", "apiKey"], parse: "string" },
  { variable: "MISTRAL_BASE_URL", path: ["providers", "mistral", "baseUrl"], parse: "string" },
  { variable: "MISTRAL_MODEL", path: ["providers", "mistral", "model"], parse: "string" },
  { variable: "KIMI_API_KEY", path: ["providers", "kimi", "apiKey"], parse: "string" },
  { variable: "KIMI_BASE_URL", path: ["providers", "kimi", "baseUrl"], parse: "string" },
  { variable: "KIMI_MODEL", path: ["providers", "kimi", "model"], parse: "string" },
  {
    variable: "ANTHROPIC_THINKING_BUDGET_TOKENS",
    path: ["providers", "anthropic", "thinkingBudgetTokens"],
    parse: "integer",
  },
  { variable: "TOOL_TIMEOUT_MS", path: ["tools", "timeoutMs"], parse: "integer" },
  { variable: "TOOL_IDLE_TIMEOUT_MS", path: ["tools", "idleTimeoutMs"], parse: "integer" },
  { variable: "MAX_CALL_TIMEOUT_MS", path: ["tools", "maxCallTimeoutMs"], parse: "integer" },
  { variable: "MAX_PARALLEL_TOOLS", path: ["tools", "maxParallelTools"], parse: "integer" },
  { variable: "SYSTEM_TOOLS", path: ["tools", "system", "enabled"], parse: "list" },
  { variable: "ALLOWED_ROOTS", path: ["tools", "system", "allowedRoots"], parse: "path-list" },
  { variable: "WORKSPACE_DIR", path: ["tools", "system", "workspace"], parse: "string" },
  { variable: "EXEC_KILL_GRACE_MS", path: ["tools", "system", "execKillGraceMs"], parse: "integer" },
  { variable: "TOOL_OUTPUT_MAX_BYTES", path: ["tools", "system", "maxOutputBytes"], parse: "integer" },
  { variable: "EXEC_ISOLATION", path: ["tools", "system", "execIsolation"], parse: "string" },
  { variable: "WEB_FETCH_ALLOW", path: ["tools", "system", "webFetchAllow"], parse: "list" },
  { variable: "MAX_STEPS", path: ["turns", "maxSteps"], parse: "integer" },
  { variable: "TURN_TIMEOUT_MS", path: ["turns", "timeoutMs"], parse: "integer" },
  { variable: "FINAL_ANSWER_TIMEOUT_MS", path: ["turns", "finalAnswerTimeoutMs"], parse: "integer" },
  { variable: "MAX_TURN_DEPTH", path: ["turns", "maxDepth"], parse: "integer" },
  { variable: "STEP_PAUSE_TIMEOUT_MS", path: ["turns", "stepPauseTimeoutMs"], parse: "integer" },
  { variable: "STEP_ON_TIMEOUT", path: ["turns", "stepOnTimeout"], parse: "string" },
  { variable: "APPROVAL_TIMEOUT_MS", path: ["turns", "approvalTimeoutMs"], parse: "integer" },
  { variable: "MAX_CHILD_TURNS", path: ["turns", "maxChildTurns"], parse: "integer" },
  {
    variable: "MAX_CONCURRENT_CHILD_TURNS",
    path: ["turns", "maxConcurrentChildTurns"],
    parse: "integer",
  },
  { variable: "MAX_EVENTS_PER_TURN", path: ["turns", "maxEventsPerTurn"], parse: "integer" },
  { variable: "DELTA_COALESCE_MS", path: ["turns", "deltaCoalesceMs"], parse: "integer" },
  { variable: "DELTA_COALESCE_CHARS", path: ["turns", "deltaCoalesceChars"], parse: "integer" },
  { variable: "LOOP_WINDOW", path: ["turns", "loopDetector", "windowSize"], parse: "integer" },
  { variable: "LOOP_WARN_AT", path: ["turns", "loopDetector", "warnAt"], parse: "integer" },
  { variable: "LOOP_STOP_AT", path: ["turns", "loopDetector", "stopAt"], parse: "integer" },
  { variable: "MAX_TURNS_PER_PRINCIPAL", path: ["limits", "maxTurnsPerPrincipal"], parse: "integer" },
  { variable: "MAX_STREAMS_PER_PRINCIPAL", path: ["limits", "maxStreamsPerPrincipal"], parse: "integer" },
  { variable: "HISTORY_CACHE_MB", path: ["limits", "historyCacheMb"], parse: "integer" },
  { variable: "RETRY_MAX_ATTEMPTS", path: ["resilience", "retry", "maxAttempts"], parse: "integer" },
  { variable: "RETRY_MAX_TIME_MS", path: ["resilience", "retry", "maxRetryTimeMs"], parse: "integer" },
  {
    variable: "BREAKER_FAILURE_THRESHOLD",
    path: ["resilience", "breaker", "failureThreshold"],
    parse: "integer",
  },
  { variable: "BREAKER_OPEN_MS", path: ["resilience", "breaker", "openMs"], parse: "integer" },
  { variable: "PROGRESS_AFTER_MS", path: ["stream", "progressAfterMs"], parse: "integer" },
  { variable: "PROGRESS_INTERVAL_MS", path: ["stream", "progressIntervalMs"], parse: "integer" },
  { variable: "PING_INTERVAL_MS", path: ["stream", "pingIntervalMs"], parse: "integer" },
  { variable: "ON_DISCONNECT", path: ["stream", "onDisconnect"], parse: "string" },
  { variable: "DISCONNECT_GRACE_MS", path: ["stream", "disconnectGraceMs"], parse: "integer" },
];

/** The variable that names the configuration file (not itself part of the configuration). */
export const CONFIG_FILE_VARIABLE = "CONFIG_FILE";
export const DEFAULT_CONFIG_FILE = "config/default.json";
/** The variable that names a JSON file of agents (`{"agents": {…}, "defaultAgent": …}`), merged over the file's. */
export const AGENTS_FILE_VARIABLE = "AGENTS_FILE";
