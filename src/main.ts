/**
 * Process entry: read `.env` from the working directory if there is one (the real environment wins),
 * load configuration, open and migrate the database, recover turns a crash left running, serve, and
 * shut down cleanly on SIGTERM/SIGINT (active turns end with reason `shutdown`, the database is
 * closed, exit 0 within 10 s).
 */
import { serve } from "@hono/node-server";
import { existsSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import pino from "pino";
import { buildApp } from "./app.js";
import { loadConfig } from "./config/load.js";
import { ConfigError } from "./errors.js";
import { closeInheritedDescriptors } from "./inherited-descriptors.js";
import { createRuntime } from "./runtime.js";
import { BatchedLogDestination } from "./observability/batched-log-destination.js";
import { recoverInterruptedTurns } from "./turns/recovery.js";

/** How long a shutdown may take beyond `EXEC_KILL_GRACE_MS`, which exec's process groups get in full. */
const SHUTDOWN_DEADLINE_MS = 10_000;
const SHUTDOWN_TURN_WAIT_MS = 3_000;
const SHUTDOWN_FLUSH_WAIT_MS = 3_000;
const EXEC_DRAIN_MARGIN_MS = 1_000;

/** The optional file of variables read from the working directory at start-up (see `.env.example`). */
const ENV_FILE = ".env";

/**
 * Reads `.env` from the working directory into `process.env` when it exists; a variable already in the
 * real environment keeps its value (Node's `process.loadEnvFile` never overwrites one).
 */
function loadEnvFile(): void {
  const path = resolve(process.cwd(), ENV_FILE);
  if (!existsSync(path)) return;
  // process.loadEnvFile came with Node 20.12: an older Node would silently run without the file
  if (typeof process.loadEnvFile !== "function") {
    throw new ConfigError(
      `${path} exists but this Node (${process.version}) cannot read it: use Node ≥ 20.12`,
    );
  }
  try {
    process.loadEnvFile(path);
  } catch (error) {
    throw new ConfigError(`${path}: cannot be read (${(error as Error).message})`);
  }
}

function start(): void {
  // first, before anything can start a child: an inherited descriptor would reach every one of them,
  // exec's sandbox included, and open a host file outside the allowed roots
  const closedDescriptors = closeInheritedDescriptors();
  let loaded;
  try {
    loadEnvFile();
    loaded = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`reins: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const { config, warnings, source } = loaded;
  // Lines are written to stdout asynchronously and together (what waits is written synchronously on
  // exit): a synchronous write per line would stall the event loop — a turn's events, an abort — on the
  // pipe, and an asynchronous one per line costs a write and its completion per line.
  const logger = pino({ level: config.logLevel }, new BatchedLogDestination());
  for (const warning of warnings) logger.warn({ config: source }, warning);
  if (closedDescriptors.length > 0) {
    logger.info(
      { descriptors: closedDescriptors },
      "closed descriptors inherited without close-on-exec: commands and MCP servers would have inherited them",
    );
  }

  let runtime;
  try {
    runtime = createRuntime(config, { logger, processMetrics: true });
  } catch (error) {
    // e.g. SYSTEM_TOOLS enables exec and its sandbox (bubblewrap) cannot run on this machine
    if (error instanceof ConfigError) {
      process.stderr.write(`reins: ${error.message}\n`);
      process.exit(1);
    }
    if ((error as { code?: string }).code === "SQLITE_BUSY") {
      process.stderr.write(`reins: the database in ${config.dataDir} is in use by another reins process\n`);
      process.exit(1);
    }
    throw error;
  }
  const recovered = recoverInterruptedTurns(runtime.store);
  if (recovered.length > 0)
    logger.warn({ turnIds: recovered }, "turns interrupted by a previous crash were closed");

  const app = buildApp(runtime);
  const server = serve(
    { fetch: app.fetch, port: config.server.port, hostname: config.server.host },
    (info) => {
      logger.info({ host: info.address, port: info.port, dataDir: config.dataDir }, "listening");
    },
  );

  let stopping = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, activeTurns: runtime.manager.activeCount() }, "shutting down");
    setTimeout(() => {
      logger.error("shutdown deadline passed; exiting");
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS + config.tools.system.execKillGraceMs).unref();
    // Stop accepting; `closed` settles once every connection has ended.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    await runtime.manager.shutdown(SHUTDOWN_TURN_WAIT_MS);
    // MCP stdio servers' groups get SIGTERM, then SIGKILL after their grace, meanwhile exec drains
    const mcpStopped = runtime.mcp.stop();
    // exec's own SIGTERM → SIGKILL sequence runs in this process: let it finish, then kill what is left
    await runtime.processGroups.drain(config.tools.system.execKillGraceMs + EXEC_DRAIN_MARGIN_MS);
    runtime.processGroups.killAll();
    await mcpStopped;
    // Aborted turns' streams end by themselves once their last events are written; give them time to
    // flush to the socket before dropping whatever connections remain.
    if ("closeIdleConnections" in server) server.closeIdleConnections();
    let flushTimer: NodeJS.Timeout | undefined;
    await Promise.race([
      closed,
      new Promise((resolve) => (flushTimer = setTimeout(resolve, SHUTDOWN_FLUSH_WAIT_MS))),
    ]);
    clearTimeout(flushTimer);
    if ("closeAllConnections" in server) server.closeAllConnections();
    runtime.store.close();
    // the log destination writes what it holds synchronously on exit, this line included
    logger.info("stopped");
    process.exit(0);
  };
  process.on("exit", () => {
    runtime.processGroups.killAll();
    runtime.mcp.killAll();
  });
  process.on("unhandledRejection", (reason) => logger.error({ err: reason }, "unhandled rejection"));
  process.on("SIGTERM", (signal) => void shutdown(signal));
  process.on("SIGINT", (signal) => void shutdown(signal));
  server.on("error", (error: Error) => {
    logger.fatal({ err: error, port: (server.address() as AddressInfo | null)?.port }, "server error");
    process.exit(1);
  });
}

start();
