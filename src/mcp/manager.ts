/**
 * The configured MCP servers (docs/semantics.md#mcp-servers): one connection each, all started at boot in
 * parallel without waiting; their tools kept in the ToolRegistry as `<server>__<tool>` (added and removed as
 * servers list them; a name taken already is refused with a warning naming both); the status list of `GET
 * /api/mcp/servers`; shutdown, which stops every stdio server's process group; and the crash record that lets
 * the next start kill the groups a killed reins left behind.
 */
import type { Logger } from "pino";
import type { McpServerConfig } from "../config/schema.js";
import type { ToolRegistry } from "../tools/registry.js";
import { ProcessRecord } from "../tools/system/process-record.js";
import {
  DEFAULT_BACKOFF,
  DEFAULT_KILL_GRACE_MS,
  McpConnection,
  type BackoffSettings,
  type McpServerStatus,
  type McpTransportKind,
} from "./connection.js";
import { mcpToolDefinition, unavailableToolDefinition, type McpCallObserver } from "./tool-adapter.js";
import { isUnderServer, mcpToolName } from "./tool-names.js";

/** The crash record of stdio servers' process groups, in DATA_DIR. */
export const MCP_PROCESS_RECORD_FILE = "mcp-process-groups.json";

export type McpServerInfo = {
  name: string;
  transport: McpTransportKind;
  status: McpServerStatus;
  tools: string[];
  lastError: string | null;
  restarts: number;
};

export type McpServersOptions = {
  servers: Record<string, McpServerConfig>;
  registry: ToolRegistry;
  logger: Logger;
  /** Where the crash record of stdio process groups is kept; none: no record. */
  dataDir?: string;
  observe?: McpCallObserver;
  backoff?: BackoffSettings;
  killGraceMs?: number;
};

export class McpServers {
  private readonly connections: McpConnection[] = [];
  /** Registered tool name → its server. */
  private readonly owners = new Map<string, string>();
  /** Tool names registered per server. */
  private readonly registered = new Map<string, Set<string>>();
  private readonly record: ProcessRecord | undefined;
  private readonly disposeResolver: () => void;
  private readonly observe: McpCallObserver;

  constructor(private readonly options: McpServersOptions) {
    this.record =
      options.dataDir === undefined ? undefined : new ProcessRecord(options.dataDir, MCP_PROCESS_RECORD_FILE);
    this.observe = options.observe ?? (() => {});
    const groups = {
      onStarted: (pid: number, server: string) => this.record?.add(pid, server),
      onStopped: (pid: number) => this.record?.remove(pid),
    };
    for (const [name, config] of Object.entries(options.servers)) {
      this.registered.set(name, new Set());
      this.connections.push(
        new McpConnection(name, config, {
          logger: options.logger,
          backoff: options.backoff ?? DEFAULT_BACKOFF,
          killGraceMs: options.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
          groups: { onStarted: (pid) => groups.onStarted(pid, name), onStopped: groups.onStopped },
          onToolsChanged: (connection) => this.syncTools(connection),
        }),
      );
    }
    this.disposeResolver = options.registry.addResolver((name) => this.resolveUnlisted(name));
  }

  /** Kills what a crashed predecessor left, then starts every connection; returns at once. */
  start(): void {
    const killed = this.record?.killLeftovers() ?? [];
    if (killed.length > 0) {
      this.options.logger.warn(
        { groups: killed.map((group) => ({ server: group.server, groupId: group.groupId })) },
        "killed MCP server processes left by a previous run",
      );
    }
    for (const connection of this.connections) connection.start();
  }

  list(): McpServerInfo[] {
    return this.connections.map((connection) => ({
      name: connection.name,
      transport: connection.transportKind,
      status: connection.status,
      tools: [...(this.registered.get(connection.name) ?? [])],
      lastError: connection.lastError,
      restarts: connection.restarts,
    }));
  }

  /** Stops every server (stdio groups: SIGTERM, SIGKILL after the grace) and removes the record. */
  async stop(): Promise<void> {
    this.disposeResolver();
    await Promise.all(this.connections.map((connection) => connection.stop()));
    this.record?.clear();
  }

  /** SIGKILL to every stdio group, synchronously: for `process.on("exit")`. */
  killAll(): void {
    for (const connection of this.connections) connection.killNow();
  }

  /** Makes the registry hold exactly the tools `connection` lists now (kept while it is down). */
  private syncTools(connection: McpConnection): void {
    const { registry, logger } = this.options;
    const mine = this.registered.get(connection.name) ?? new Set<string>();
    const listed = connection.tools ?? [];
    const wanted = new Map<string, (typeof listed)[number]>();
    for (const tool of listed) {
      const name = mcpToolName(connection.name, tool.name);
      const taken = wanted.get(name);
      if (taken) {
        logger.warn(
          { mcpServer: connection.name, tool: name },
          `MCP tool "${tool.name}" of server "${connection.name}" is refused: its name "${name}" collides with tool "${taken.name}" of the same server`,
        );
        continue;
      }
      wanted.set(name, tool);
    }
    // a status change alone (down, ready again) needs no new definitions: they read the connection
    for (const name of mine) {
      if (!wanted.has(name) || connection.status === "ready") {
        registry.unregister(name);
        this.owners.delete(name);
        mine.delete(name);
      }
    }
    for (const [name, tool] of wanted) {
      if (mine.has(name)) continue;
      if (registry.has(name)) {
        const owner = this.owners.get(name);
        const other = owner === undefined ? `the built-in tool "${name}"` : `a tool of MCP server "${owner}"`;
        logger.warn(
          { mcpServer: connection.name, tool: name },
          `MCP tool "${tool.name}" of server "${connection.name}" is refused: its name "${name}" is taken by ${other}`,
        );
        continue;
      }
      const warn = (message: string) => logger.warn({ mcpServer: connection.name, tool: name }, message);
      registry.register(mcpToolDefinition(connection, tool, name, this.observe, warn));
      this.owners.set(name, connection.name);
      mine.add(name);
    }
    this.registered.set(connection.name, mine);
  }

  /** A name under a server that has not listed its tools yet answers `[UNAVAILABLE]`. */
  private resolveUnlisted(name: string) {
    const connection = this.connections.find(
      (candidate) => candidate.tools === undefined && isUnderServer(name, candidate.name),
    );
    return connection && unavailableToolDefinition(connection, name, this.observe);
  }
}
