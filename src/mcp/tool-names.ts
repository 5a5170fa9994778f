/**
 * Names under which an MCP server's tools are offered: `<server>__<tool>`, every character outside
 * `[A-Za-z0-9_-]` replaced by `_`, cut to 64 characters (what model APIs accept as a tool name).
 */
import { sanitizeToolName } from "../history/render/tool-names.js";

export const SERVER_TOOL_SEPARATOR = "__";

/** What a provider accepts as a tool name; any other name is rewritten by `sanitizeToolName`. */
const ACCEPTED_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The registry name of `tool` of MCP server `server`. */
export function mcpToolName(server: string, tool: string): string {
  return sanitizeToolName(`${server}${SERVER_TOOL_SEPARATOR}${tool}`, ACCEPTED_TOOL_NAME);
}

/** Whether `name` is under the prefix of `server`'s tools. */
export function isUnderServer(name: string, server: string): boolean {
  return name.startsWith(`${server}${SERVER_TOOL_SEPARATOR}`);
}
