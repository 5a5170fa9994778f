/** MCP servers as tools (docs/semantics.md#mcp-servers): the public face of the folder. */
export { McpServers, type McpServerInfo, type McpServersOptions } from "./manager.js";
export type { McpServerStatus, McpTransportKind, BackoffSettings } from "./connection.js";
export { MCP_CANCEL_REASON, McpUnavailableError } from "./errors.js";
export { mcpToolName } from "./tool-names.js";
export type { McpCallOutcome } from "./tool-adapter.js";
