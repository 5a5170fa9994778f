/**
 * Names under which an MCP server's tools are offered: `<server>__<tool>`, every character outside
 * `[A-Za-z0-9_-]` replaced by `_`, cut to 64 characters (what model APIs accept as a tool name).
 */
export const MAX_TOOL_NAME_LENGTH = 64;
export const SERVER_TOOL_SEPARATOR = "__";

/** The registry name of `tool` of MCP server `server`. */
export function mcpToolName(server: string, tool: string): string {
  const joined = `${server}${SERVER_TOOL_SEPARATOR}${tool}`.replace(/[^A-Za-z0-9_-]/g, "_");
  return joined.slice(0, MAX_TOOL_NAME_LENGTH);
}

/** Whether `name` is under the prefix of `server`'s tools. */
export function isUnderServer(name: string, server: string): boolean {
  return name.startsWith(`${server}${SERVER_TOOL_SEPARATOR}`);
}
