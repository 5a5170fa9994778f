/**
 * Composition: builds the store, tools, runner, scheduler, loop and TurnManager from a configuration.
 * The server (`main.ts`), the tests and programs embedding reins all assemble it the same way.
 */
import { join } from "node:path";
import { customAlphabet } from "nanoid";
import pino, { type Logger } from "pino";
import type { Config } from "./config/schema.js";
import { SqliteHistoryStore } from "./history/sqlite-store.js";
import type { HistoryStore } from "./history/store.js";
import type { ModelEngine } from "./providers/engine.js";
import { ScriptedModel } from "./providers/scripted.js";
import { builtinTools } from "./tools/builtin/index.js";
import { ToolRegistry } from "./tools/registry.js";
import { ToolRunner } from "./tools/runner.js";
import { ToolScheduler } from "./tools/scheduler.js";
import type { ToolDefinition } from "./tools/types.js";
import { ToolCallingLoop } from "./turns/loop.js";
import { TurnManager } from "./turns/manager.js";

export const DATABASE_FILE = "reins.db";
const randomId = customAlphabet("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 16);

export type RuntimeOptions = {
  logger?: Logger;
  store?: HistoryStore;
  /** Extra tools beside the built-ins. */
  tools?: ToolDefinition[];
  /** Extra engines beside the scripted model, by provider name. */
  engines?: ModelEngine[];
  now?: () => number;
  generateId?: (prefix: string) => string;
};

export type Runtime = {
  config: Config;
  logger: Logger;
  store: HistoryStore;
  registry: ToolRegistry;
  runner: ToolRunner;
  scheduler: ToolScheduler;
  loop: ToolCallingLoop;
  manager: TurnManager;
};

export function createRuntime(config: Config, options: RuntimeOptions = {}): Runtime {
  const logger = options.logger ?? pino({ level: config.logLevel });
  const now = options.now ?? Date.now;
  const generateId = options.generateId ?? ((prefix: string) => `${prefix}_${randomId()}`);
  const store = options.store ?? new SqliteHistoryStore(join(config.dataDir, DATABASE_FILE), { now });
  const registry = new ToolRegistry([...builtinTools(), ...(options.tools ?? [])]);
  const runner = new ToolRunner(
    registry,
    {
      defaults: { timeoutMs: config.tools.timeoutMs, idleTimeoutMs: config.tools.idleTimeoutMs },
      maxCallTimeoutMs: config.tools.maxCallTimeoutMs,
      overrides: config.tools.overrides,
      progressAfterMs: config.stream.progressAfterMs,
      progressIntervalMs: config.stream.progressIntervalMs,
    },
    { now, warn: (message) => logger.warn(message) },
  );
  const scheduler = new ToolScheduler(runner, registry, { maxParallelTools: config.tools.maxParallelTools });
  const loop = new ToolCallingLoop({
    registry,
    scheduler,
    store,
    maxSteps: config.turns.maxSteps,
    generateCallId: () => generateId("call"),
    onDiscardedResult: (call, outcome) => {
      // The runner's own "cancelled" after an abort is expected; a real late result is worth a warning.
      const level = outcome.status === "cancelled" ? "debug" : "warn";
      logger[level](
        { callId: call.callId, tool: call.name, status: outcome.status },
        "late result of a closed call discarded",
      );
    },
  });
  const engines = new Map<string, ModelEngine>();
  for (const engine of [new ScriptedModel(), ...(options.engines ?? [])])
    engines.set(engine.provider, engine);
  const manager = new TurnManager({
    store,
    loop,
    engines,
    logger,
    now,
    generateId,
    settings: {
      defaultProvider: config.providers.default,
      defaultAgentId: "default",
      onDisconnect: config.stream.onDisconnect,
      disconnectGraceMs: config.stream.disconnectGraceMs,
    },
  });
  return { config, logger, store, registry, runner, scheduler, loop, manager };
}
