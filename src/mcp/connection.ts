/**
 * One configured MCP server: its connection (stdio in its own process group, or Streamable HTTP with
 * a fall back to SSE), its status (`connecting` → `ready`, or `down`), the tools it lists (refreshed on
 * `notifications/tools/list_changed`), and reconnection with capped exponential backoff whenever it
 * fails to start, its process exits or its connection drops — the backoff starts over only after the
 * connection stayed up for the longest delay, so a server that fails soon after every start is retried
 * ever more slowly. An error of a ready HTTP connection's transport (a refused or broken request or
 * stream) is checked with a ping, and a server that does not answer it is down. Every reconnection starts from
 * a fresh client and transport: no `Mcp-Session-Id` of a previous server instance is ever sent again.
 */
import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  CallToolResultSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Progress,
  ErrorCode,
  McpError,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type { McpServerConfig } from "../config/schema.js";
import { GroupStdioTransport, type GroupLifecycle } from "./stdio-transport.js";

export type McpServerStatus = "connecting" | "ready" | "down";
export type McpTransportKind = "stdio" | "http";

export type BackoffSettings = { initialDelayMs: number; maxDelayMs: number };

export const DEFAULT_BACKOFF: BackoffSettings = { initialDelayMs: 1_000, maxDelayMs: 30_000 };
/**
 * Bound on the handshake, and on the tool listing, all its pages together (not on tool calls: reins'
 * own limits bound those).
 */
export const CONNECT_TIMEOUT_MS = 30_000;
/** The most tools one server may list: a server listing more fails to connect. */
export const MAX_SERVER_TOOLS = 1_000;
/** The most pages of a tool list (empty pages count): a server paging on fails to connect. */
export const MAX_TOOL_PAGES = 1_000;
/** How long the ping that checks a connection after a transport error may take. */
export const PING_TIMEOUT_MS = 10_000;
/** Grace between SIGTERM and SIGKILL when a stdio server's group is stopped. */
export const DEFAULT_KILL_GRACE_MS = 2_000;
/**
 * The SDK's own request timer must never fire before reins' limits (its default is 60 s, progress or
 * not): the largest delay a Node timer accepts, re-armed by progress.
 */
export const SDK_REQUEST_TIMEOUT_MS = 2_147_483_647;

const CLIENT_INFO = { name: "reins", version: "1" };

export type ConnectionDeps = {
  logger: Logger;
  backoff: BackoffSettings;
  killGraceMs: number;
  groups: GroupLifecycle;
  /** Told whenever the server's tool list may have changed (listed, refreshed). */
  onToolsChanged: (connection: McpConnection) => void;
};

export type CallOptions = {
  signal: AbortSignal;
  onprogress: (progress: Progress) => void;
};

export class McpConnection {
  readonly transportKind: McpTransportKind;
  status: McpServerStatus = "connecting";
  lastError: string | null = null;
  /** Connection attempts after the first (restarts of a stdio server, reconnections over HTTP). */
  restarts = 0;
  /** The tools of the last successful listing; undefined until the server has listed any. */
  tools: Tool[] | undefined;

  private client: Client | undefined;
  private transport: Transport | undefined;
  private failures = 0;
  /** When the connection last became ready (epoch ms); undefined while it is not. */
  private readySince: number | undefined;
  private pinging = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private attempts = 0;

  constructor(
    readonly name: string,
    private readonly config: McpServerConfig,
    private readonly deps: ConnectionDeps,
  ) {
    this.transportKind = "command" in config ? "stdio" : "http";
  }

  /** Starts connecting in the background; never throws, never blocks. */
  start(): void {
    void this.connect();
  }

  /** Calls `tool` on the connected server; rejects with the SDK's error when it fails. */
  async callTool(
    tool: string,
    input: Record<string, unknown>,
    options: CallOptions,
  ): Promise<CallToolResult> {
    const client = this.client;
    if (!client || this.status !== "ready") throw new Error(`not connected (${this.status})`);
    try {
      return (await client.callTool({ name: tool, arguments: input }, CallToolResultSchema, {
        signal: options.signal,
        onprogress: options.onprogress,
        timeout: SDK_REQUEST_TIMEOUT_MS,
        resetTimeoutOnProgress: true,
      })) as CallToolResult;
    } catch (error) {
      // a restarted HTTP server no longer knows our session: start a new one
      if (error instanceof StreamableHTTPError && error.code === 404 && client === this.client) {
        this.failed(client, `session expired (${error.message})`);
      }
      throw error;
    }
  }

  /** Closes the connection (stopping a stdio server's whole group) and stops reconnecting. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    this.status = "down";
    await client?.close().catch(() => undefined);
    await this.transport?.close().catch(() => undefined);
  }

  /** SIGKILL to a stdio server's group now (the process is exiting). */
  killNow(): void {
    if (this.transport instanceof GroupStdioTransport) this.transport.killNow();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    if (this.attempts++ > 0) this.restarts++;
    this.status = "connecting";
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      void this.refreshTools(client);
    });
    // set before the handshake: a server that exits during it fails the attempt the same way
    client.onclose = () => this.failed(client, closedDetail(this.transport));
    // over HTTP only: a stdio server's loss is its process's exit, and a busy one may not answer a ping
    // for a while (the errors it reports are of its output, not of the connection)
    if (!("command" in this.config)) client.onerror = (error) => this.check(client, errorText(error));
    try {
      await this.open(client);
      if (this.stopped) {
        await client.close().catch(() => undefined);
        return;
      }
      await this.listTools(client);
      this.status = "ready";
      this.lastError = null;
      this.readySince = Date.now();
      this.deps.logger.info({ mcpServer: this.name, tools: this.tools?.length }, "MCP server ready");
      this.deps.onToolsChanged(this);
    } catch (error) {
      this.failed(client, errorText(error));
    }
  }

  /** Connects `client` over the configured transport; an HTTP URL without Streamable HTTP gets SSE. */
  private async open(client: Client): Promise<Transport> {
    if ("command" in this.config) {
      const transport = new GroupStdioTransport(
        { command: this.config.command, args: this.config.args, env: this.config.env, cwd: this.config.cwd },
        this.deps.groups,
        this.deps.killGraceMs,
      );
      this.transport = transport;
      this.client = client;
      try {
        await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
      } catch (error) {
        const stderr = transport.stderr;
        throw new Error(stderr ? `${errorText(error)}; stderr: ${stderr}` : errorText(error), {
          cause: error,
        });
      }
      return transport;
    }
    const url = new URL(this.config.url);
    const requestInit = { headers: this.config.headers };
    const streamable = new StreamableHTTPClientTransport(url, { requestInit });
    this.transport = streamable;
    // Not this connection's client while the first protocol is only tried: a refused attempt closes
    // the transport (and fires the client's onclose), which is the fallback, not a lost connection.
    this.client = undefined;
    try {
      await client.connect(streamable, { timeout: CONNECT_TIMEOUT_MS });
      this.client = client;
      return streamable;
    } catch (error) {
      if (!speaksOtherProtocol(error)) {
        this.client = client;
        throw error;
      }
      await streamable.close().catch(() => undefined);
    }
    // Client.connect refuses a second transport until the first is closed
    await client.close().catch(() => undefined);
    const sse = new SSEClientTransport(url, {
      requestInit,
      eventSourceInit: { fetch: headerFetch(this.config.headers) },
    });
    this.transport = sse;
    this.client = client;
    await client.connect(sse, { timeout: CONNECT_TIMEOUT_MS });
    return sse;
  }

  /** Lists every page of the server's tools, within CONNECT_TIMEOUT_MS and MAX_SERVER_TOOLS. */
  private async listTools(client: Client): Promise<void> {
    const deadline = Date.now() + CONNECT_TIMEOUT_MS;
    const tools: Tool[] = [];
    // digests, not the cursors: a server may send cursors of any size
    const cursors = new Set<string>();
    let cursor: string | undefined;
    do {
      const timeout = deadline - Date.now();
      if (timeout <= 0) throw new Error(`listing the tools took longer than ${CONNECT_TIMEOUT_MS} ms`);
      if (cursors.size >= MAX_TOOL_PAGES) {
        throw new Error(`the server's tool list has more than ${MAX_TOOL_PAGES} pages`);
      }
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout });
      tools.push(...page.tools);
      if (tools.length > MAX_SERVER_TOOLS) {
        throw new Error(`the server lists more than ${MAX_SERVER_TOOLS} tools`);
      }
      cursor = page.nextCursor;
      if (cursor === undefined) break;
      const digest = createHash("sha256").update(cursor).digest("base64");
      if (cursors.has(digest)) {
        throw new Error(
          `the server's tool list repeats a page (cursor ${JSON.stringify(cursor.slice(0, 40))})`,
        );
      }
      cursors.add(digest);
    } while (cursor !== undefined);
    this.tools = tools;
  }

  private async refreshTools(client: Client): Promise<void> {
    if (client !== this.client || this.status !== "ready") return;
    try {
      await this.listTools(client);
      this.deps.onToolsChanged(this);
    } catch (error) {
      this.deps.logger.warn({ mcpServer: this.name, err: error }, "MCP tool list refresh failed");
    }
  }

  /**
   * The transport of a ready `client` reported an error (a request or stream refused or broken): a
   * server that no longer answers a ping is down; one that does lost only that request or stream.
   */
  private check(client: Client, detail: string): void {
    if (client !== this.client || this.status !== "ready" || this.pinging) return;
    this.pinging = true;
    client
      .ping({ timeout: PING_TIMEOUT_MS })
      .then(
        () => undefined,
        (error: unknown) => {
          // an error answer is an answer: the server is there
          if (error instanceof McpError && error.code !== ErrorCode.RequestTimeout) return;
          this.failed(client, `${detail}; then a ping failed: ${errorText(error)}`);
        },
      )
      .finally(() => (this.pinging = false));
  }

  /**
   * The connection of `client` failed or dropped (process exit, closed stream, expired session, no
   * answer to a ping); ignored for a client that is no longer this connection's.
   */
  private failed(client: Client, detail: string): void {
    if (client !== this.client || this.stopped) return;
    this.client = undefined;
    this.status = "down";
    this.lastError = detail;
    const { initialDelayMs, maxDelayMs } = this.deps.backoff;
    // a connection that stayed up for the longest delay has recovered: its backoff starts over
    if (this.readySince !== undefined && Date.now() - this.readySince >= maxDelayMs) this.failures = 0;
    this.readySince = undefined;
    const delayMs = Math.min(maxDelayMs, initialDelayMs * 2 ** Math.min(this.failures, 30));
    this.failures++;
    this.deps.logger.warn({ mcpServer: this.name, error: detail, retryInMs: delayMs }, "MCP server down");
    void client.close().catch(() => undefined);
    void this.transport?.close().catch(() => undefined);
    this.retryTimer = setTimeout(() => void this.connect(), delayMs);
    this.retryTimer.unref();
    this.deps.onToolsChanged(this);
  }
}

/** A URL that answered Streamable HTTP's POST with 4xx (404, 405, …) may be an SSE-only server. */
function speaksOtherProtocol(error: unknown): boolean {
  return (
    error instanceof StreamableHTTPError && error.code !== undefined && error.code >= 400 && error.code < 500
  );
}

/** The configured headers on the SSE stream's GET too (`requestInit` covers only the POSTs). */
function headerFetch(headers: Record<string, string>): typeof fetch {
  return (input, init) => {
    const merged = new Headers(init?.headers);
    for (const [name, value] of Object.entries(headers)) merged.set(name, value);
    return fetch(input, { ...init, headers: merged });
  };
}

function closedDetail(transport: Transport | undefined): string {
  if (transport instanceof GroupStdioTransport) {
    if (transport.startError) return `the server could not be started: ${transport.startError}`;
    if (transport.closeReason) return transport.closeReason;
    const stderr = transport.stderr;
    return stderr ? `the server process exited; stderr: ${stderr.slice(-300)}` : "the server process exited";
  }
  return "the connection closed";
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
