/**
 * Composition: builds the store, tools, runner, scheduler, loop, TurnManager, decision log and metrics
 * from a configuration. The server (`main.ts`), the tests and programs embedding reins all assemble it
 * the same way.
 */
import { join, resolve } from "node:path";
import pino, { type Logger } from "pino";
import { AgentRegistry } from "./agents/agent-registry.js";
import { unmatchedToolPatterns } from "./agents/config-checks.js";
import type { Config } from "./config/schema.js";
import { approvalPolicy } from "./agents/approval-policy.js";
import { DATABASE_FILE, fixDataDir } from "./data-dir.js";
import { SqliteHistoryStore } from "./history/sqlite-store.js";
import type { HistoryStore } from "./history/store.js";
import { McpServers } from "./mcp/index.js";
import { DecisionLog } from "./observability/decision-log.js";
import { Metrics } from "./observability/metrics.js";
import type { ModelEngine } from "./providers/engine.js";
import { AnthropicEngine } from "./providers/anthropic.js";
import { OpenAICompatibleEngine } from "./providers/openai-compatible.js";
import { ScriptedModel } from "./providers/scripted.js";
import { builtinTools } from "./tools/builtin/index.js";
import { ToolRegistry } from "./tools/registry.js";
import { DeadlineTimers } from "./tools/deadline-timers.js";
import { BreakerRegistry } from "./tools/resilience/circuit-breaker.js";
import { timeOrderedIds } from "./ids.js";
import { ToolRunner } from "./tools/runner.js";
import { ToolScheduler } from "./tools/scheduler.js";
import { EXEC_PROCESS_RECORD_FILE, ProcessGroups, ProcessRecord, systemTools } from "./tools/system/index.js";
import { normalizeAllowedRoots, realPathOrAsIs } from "./tools/system/paths.js";
import type { ToolDefinition } from "./tools/types.js";
import { ToolCallingLoop } from "./turns/loop.js";
import type { ToolResultObservers } from "./turns/tool-results.js";
import { DEFAULT_RETRY_POLICY } from "./tools/resilience/retry-policy.js";
import { TurnManager } from "./turns/manager.js";

export { DATABASE_FILE } from "./data-dir.js";

export type RuntimeOptions = {
  logger?: Logger;
  /**
   * The history store; default: the SQLite file in `dataDir`, whose commit slices fire the tool
   * deadlines due between them. A store passed here does not: deadlines due during a burst of its
   * commits wait for the rest of that turn of the event loop, as Node's timers do.
   */
  store?: HistoryStore;
  /** Extra tools beside the built-ins and the enabled system tools. */
  tools?: ToolDefinition[];
  /** Extra engines beside the scripted model, by provider name. */
  engines?: ModelEngine[];
  now?: () => number;
  generateId?: (prefix: string) => string;
  /** Source of retry jitter, in [0, 1). */
  random?: () => number;
  /** Also collect Node process metrics (the server does; tests need not). */
  processMetrics?: boolean;
};

export type Runtime = {
  config: Config;
  logger: Logger;
  store: HistoryStore;
  registry: ToolRegistry;
  breakers: BreakerRegistry;
  runner: ToolRunner;
  scheduler: ToolScheduler;
  loop: ToolCallingLoop;
  manager: TurnManager;
  metrics: Metrics;
  /** Process groups started by `exec` and still alive. */
  processGroups: ProcessGroups;
  /** The configured MCP servers, connecting from the start; `stop()` them before exit. */
  mcp: McpServers;
};

/** An engine for every provider whose key is configured. */
function providerEngines(config: Config, logger: Logger): ModelEngine[] {
  const { anthropic, openai, kimi, mistral } = config.providers;
  const engines: ModelEngine[] = [];
  if (anthropic.apiKey) {
    engines.push(
      new AnthropicEngine({
        apiKey: anthropic.apiKey,
        baseUrl: anthropic.baseUrl,
        model: anthropic.model,
        maxTokens: anthropic.maxTokens,
        thinkingBudgetTokens: anthropic.thinkingBudgetTokens,
        contextBudgetTokens: anthropic.contextBudgetTokens,
        logger,
      }),
    );
  }
  for (const [profile, settings] of [
    ["openai", openai],
    ["kimi", kimi],
    ["mistral", mistral],
  ] as const) {
    if (!settings.apiKey) continue;
    engines.push(
      new OpenAICompatibleEngine({
        profile,
        apiKey: settings.apiKey,
        baseUrl: settings.baseUrl,
        model: settings.model,
        maxTokens: settings.maxTokens,
        thinking: "thinking" in settings ? settings.thinking : false,
        contextBudgetTokens: settings.contextBudgetTokens,
        logger,
      }),
    );
  }
  return engines;
}

export function createRuntime(config: Config, options: RuntimeOptions = {}): Runtime {
  const logger = options.logger ?? pino({ level: config.logLevel });
  const now = options.now ?? Date.now;
  const generateId = options.generateId ?? timeOrderedIds(now);
  // the deadlines of every call; the default store's commit slices fire those due between them
  // (DeadlineTimers.fireOverdue), which a burst of slices would otherwise hold up
  const deadlines = new DeadlineTimers();
  const { system } = config.tools;
  const { roots: allowedRoots, dropped: nestedRoots } = normalizeAllowedRoots(system.allowedRoots);
  if (nestedRoots.length > 0) {
    logger.warn({ dropped: nestedRoots }, "allowed roots inside another allowed root are ignored");
  }
  // fixed now, as the roots are: the database is opened, and hidden from commands, at this real path
  const dataDir =
    options.store === undefined ? fixDataDir(config.dataDir, allowedRoots) : realPathOrAsIs(config.dataDir);
  const store =
    options.store ??
    new SqliteHistoryStore(join(dataDir, DATABASE_FILE), {
      now,
      onWriteError: (error, detail) => logger.error({ err: error, detail }, "could not persist history"),
      beforeCommitSlice: () => deadlines.fireOverdue(),
      cachedCharacters: config.limits.historyCacheMb * 1024 * 1024,
    });
  // the crash records of exec's and MCP's process groups live beside the database, in the data
  // directory this runtime owns (its store holds the directory's lock); a runtime given a store of
  // its own keeps none, and so never kills what a server on the same directory recorded
  const recordsDir = options.store === undefined ? dataDir : undefined;
  const processGroups = new ProcessGroups(
    recordsDir === undefined ? undefined : new ProcessRecord(recordsDir, EXEC_PROCESS_RECORD_FILE),
  );
  const leftovers = processGroups.killLeftovers();
  if (leftovers.length > 0) {
    logger.warn({ groupIds: leftovers }, "killed exec processes left by a previous run");
  }
  const registry = new ToolRegistry([
    ...builtinTools(),
    ...systemTools({
      enabled: system.enabled,
      execKillGraceMs: system.execKillGraceMs,
      maxOutputBytes: system.maxOutputBytes,
      execIsolation: system.execIsolation,
      // a command must not see the database, even when DATA_DIR lies inside an allowed root
      privatePaths: [dataDir],
      processGroups,
      webFetchAllow: system.webFetchAllow,
    }),
    ...(options.tools ?? []),
  ]);
  const metrics = new Metrics({
    defaultMetrics: options.processMetrics,
    isKnownTool: (toolName) => registry.get(toolName) !== undefined,
  });
  const recorder = new DecisionLog(store, metrics, logger);
  // connections start now, in the background: a slow or failing server never delays start-up
  const mcp = new McpServers({
    servers: config.mcpServers,
    registry,
    logger,
    dataDir: recordsDir,
    observe: (server, outcome) => metrics.mcpCallEnded(server, outcome),
  });
  mcp.start();

  const breakers = new BreakerRegistry(config.resilience.breaker, now);
  const runner = new ToolRunner(
    registry,
    {
      defaults: { timeoutMs: config.tools.timeoutMs, idleTimeoutMs: config.tools.idleTimeoutMs },
      maxCallTimeoutMs: config.tools.maxCallTimeoutMs,
      overrides: config.tools.overrides,
      progressAfterMs: config.stream.progressAfterMs,
      progressIntervalMs: config.stream.progressIntervalMs,
      retry: config.resilience.retry,
    },
    {
      now,
      warn: (message) => logger.warn(message),
      breakers,
      recorder,
      random: options.random,
      timers: deadlines,
    },
  );
  const { zombies } = runner;
  const scheduler = new ToolScheduler(
    runner,
    registry,
    { maxParallelTools: config.tools.maxParallelTools },
    recorder,
  );
  const toolResults: ToolResultObservers = {
    onCallEnded: (call, status) => metrics.toolCallEnded(call.name, status),
    onDiscarded: (call, status) => {
      // The runner's own "cancelled" after an abort is expected; a real late result is worth a warning.
      const level = status === "cancelled" ? "debug" : "warn";
      logger[level](
        { callId: call.callId, tool: call.name, status },
        "late result of a closed call discarded",
      );
    },
  };
  const { turns } = config;
  const loop = new ToolCallingLoop({
    registry,
    scheduler,
    store,
    recorder,
    maxSteps: turns.maxSteps,
    generateCallId: () => generateId("call"),
    toolResults,
    loopDetector: turns.loopDetector,
    modelRetry: { ...DEFAULT_RETRY_POLICY, ...config.resilience.retry },
    coalesce: { windowMs: turns.deltaCoalesceMs, maxChars: turns.deltaCoalesceChars },
    random: options.random,
  });
  const engines = new Map<string, ModelEngine>();
  for (const engine of [
    new ScriptedModel(),
    ...providerEngines(config, logger),
    ...(options.engines ?? []),
  ]) {
    engines.set(engine.provider, engine);
  }
  // resolved against the registry when asked: tools registered later (MCP) are an agent's too
  const agents = AgentRegistry.fromConfig(config, {
    toolNames: () => registry.names(),
    defaultModelOf: (provider) => engines.get(provider)?.defaultModel,
  });
  for (const warning of unmatchedToolPatterns(config, registry.names())) logger.warn(warning);
  const manager = new TurnManager({
    store,
    loop,
    engines,
    logger,
    now,
    generateId,
    recorder,
    openCircuits: () => breakers.openCircuits(),
    onTurnEnded: (outcome, durationMs) => metrics.turnEnded(outcome, durationMs),
    toolResults,
    agents,
    approvalPolicy: (agentId) => approvalPolicy(config.agents, agentId),
    zombies,
    settings: {
      defaultProvider: config.providers.default ?? "scripted",
      defaultAgentId: agents.defaultAgentId,
      onDisconnect: config.stream.onDisconnect,
      disconnectGraceMs: config.stream.disconnectGraceMs,
      turnTimeoutMs: config.turns.timeoutMs,
      finalAnswerTimeoutMs: config.turns.finalAnswerTimeoutMs,
      maxDepth: config.turns.maxDepth,
      maxChildTurns: turns.maxChildTurns,
      maxConcurrentChildTurns: turns.maxConcurrentChildTurns,
      maxEventsPerTurn: turns.maxEventsPerTurn,
      stepPauseTimeoutMs: config.turns.stepPauseTimeoutMs,
      stepOnTimeout: config.turns.stepOnTimeout,
      approvalTimeoutMs: config.turns.approvalTimeoutMs,
      allowedRoots,
      workspace: system.workspace === undefined ? undefined : resolve(system.workspace),
    },
  });
  metrics.observe({
    activeTurns: () => manager.activeCount(),
    zombies: () => zombies.size,
    historyCache: store instanceof SqliteHistoryStore ? () => store.cacheStats : undefined,
  });
  return {
    config,
    logger,
    store,
    registry,
    breakers,
    runner,
    scheduler,
    loop,
    manager,
    metrics,
    processGroups,
    mcp,
  };
}
