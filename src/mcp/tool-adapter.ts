/**
 * An MCP server's tool as a reins tool: the server's description and JSON Schema offered to the
 * model, input checked against that schema (input-schema.ts), and a call that runs under
 * reins' limits — MCP progress is its heartbeat, and an abort of the call (turn abort, per-tool
 * cancel, timeout) aborts the request, which makes the SDK send `notifications/cancelled` with a
 * fixed reason. `isError: true` is a tool error (permanent); transport failures are transient.
 */
import type { CallToolResult, Progress, Tool } from "@modelcontextprotocol/sdk/types.js";
import { PermanentToolError } from "../tools/resilience/tool-error.js";
import type { ToolContext, ToolDefinition } from "../tools/types.js";
import type { McpConnection } from "./connection.js";
import { callFailure, MCP_CANCEL_REASON, McpUnavailableError } from "./errors.js";
import { anyObject, mcpInputSchema } from "./input-schema.js";

/** How a call ended, for metrics. */
export type McpCallOutcome = "ok" | "tool_error" | "transport_error" | "unavailable" | "cancelled";
export type McpCallObserver = (server: string, outcome: McpCallOutcome) => void;

/**
 * The registry entry for `tool` of `connection`'s server, under `name`; `warn` hears why its schema
 * cannot be used, if so.
 */
export function mcpToolDefinition(
  connection: McpConnection,
  tool: Tool,
  name: string,
  observe: McpCallObserver,
  warn: (message: string) => void,
): ToolDefinition<Record<string, unknown>> {
  const jsonSchema = { ...tool.inputSchema, type: "object" };
  return {
    name,
    description: tool.description ?? tool.title ?? `Tool "${tool.name}" of MCP server "${connection.name}".`,
    inputSchema: mcpInputSchema(jsonSchema, (problem) =>
      warn(`the input schema of MCP tool "${name}" ${problem}`),
    ),
    jsonSchema,
    concurrency: "parallel",
    execute: (input, context) => callMcpTool(connection, tool.name, input, context, observe),
  };
}

/** A tool of a server that is down and has never listed its tools: it can only say so. */
export function unavailableToolDefinition(
  connection: McpConnection,
  name: string,
  observe: McpCallObserver,
): ToolDefinition<Record<string, unknown>> {
  return {
    name,
    description: `A tool of MCP server "${connection.name}", which is not available.`,
    inputSchema: anyObject,
    concurrency: "parallel",
    execute: () => {
      observe(connection.name, "unavailable");
      return Promise.reject(new McpUnavailableError(connection.name, describeStatus(connection)));
    },
  };
}

/** Calls `tool` on the connection's server for one reins call. */
export async function callMcpTool(
  connection: McpConnection,
  tool: string,
  input: Record<string, unknown>,
  context: ToolContext,
  observe: McpCallObserver,
): Promise<string> {
  if (connection.status !== "ready") {
    observe(connection.name, "unavailable");
    throw new McpUnavailableError(connection.name, describeStatus(connection));
  }
  // The call's own signal carries internal reasons (timeout errors, turn reasons); the SDK sends
  // String(reason) to the server, so the request gets a signal of its own with a fixed reason.
  const request = new AbortController();
  const onAbort = () => request.abort(MCP_CANCEL_REASON);
  if (context.signal.aborted) onAbort();
  else context.signal.addEventListener("abort", onAbort, { once: true });
  try {
    const result = await connection.callTool(tool, input, {
      signal: request.signal,
      onprogress: (progress) => context.heartbeat(progressMessage(progress)),
    });
    if (result.isError) {
      observe(connection.name, "tool_error");
      throw new PermanentToolError(resultText(result) || "the tool reported an error");
    }
    observe(connection.name, "ok");
    return resultText(result);
  } catch (error) {
    if (error instanceof PermanentToolError) throw error;
    if (request.signal.aborted) {
      observe(connection.name, "cancelled");
      throw error;
    }
    const failure = callFailure(connection.name, error);
    observe(connection.name, failure.classification === "permanent" ? "tool_error" : "transport_error");
    throw failure;
  } finally {
    context.signal.removeEventListener("abort", onAbort);
  }
}

/** What the model reads: text parts as they are, other parts (images, resources) as JSON. */
export function resultText(result: CallToolResult): string {
  const parts = result.content.map((part) => (part.type === "text" ? part.text : JSON.stringify(part)));
  if (parts.length === 0 && result.structuredContent !== undefined) {
    return JSON.stringify(result.structuredContent);
  }
  return parts.join("\n");
}

/** The progress message, else "progress/total" so the client sees the call moving. */
function progressMessage(progress: Progress): string {
  if (progress.message) return progress.message;
  return progress.total === undefined ? String(progress.progress) : `${progress.progress}/${progress.total}`;
}

function describeStatus(connection: McpConnection): string {
  if (connection.status === "connecting") return "still connecting";
  return connection.lastError ? `down: ${connection.lastError}` : "down";
}
