/**
 * What a call of an MCP tool fails with: the server is not connected (`[UNAVAILABLE]`, transient), the
 * transport failed (transient), the server refused the request as malformed (permanent), it answered with
 * a result that is not a tool result (permanent: the same call gets the same answer), or the tool
 * answered `isError: true` (permanent: the tool itself said it failed).
 */
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { PermanentToolError, TransientToolError, type ToolError } from "../tools/resilience/tool-error.js";

/** The reason every `notifications/cancelled` carries: fixed, so no internal text reaches a server. */
export const MCP_CANCEL_REASON = "cancelled by reins";

/** The server is down or still connecting; the call never reached it. */
export class McpUnavailableError extends TransientToolError {
  /** The whole result the model sees (see attempt.ts). */
  readonly toolResult: string;

  constructor(server: string, detail: string) {
    const result = `[UNAVAILABLE] MCP server "${server}" is not available (${detail}). reins is reconnecting to it; try again later or use another tool.`;
    super(result);
    this.toolResult = result;
  }
}

/** JSON-RPC errors that say the request itself was wrong: retrying the same call cannot help. */
const PERMANENT_RPC_CODES = new Set<number>([
  ErrorCode.InvalidParams,
  ErrorCode.MethodNotFound,
  ErrorCode.InvalidRequest,
]);

/** How many of a malformed result's problems its error names. */
const NAMED_PROBLEMS = 3;

/**
 * Classifies what `callTool` threw: a server's refusal of the request or a malformed result (the SDK
 * checks every result against the protocol's schema), else a transport failure.
 */
export function callFailure(server: string, error: unknown): ToolError {
  if (error instanceof z.core.$ZodError) {
    const problems = error.issues
      .slice(0, NAMED_PROBLEMS)
      .map((issue) => `${issue.path.map(String).join(".") || "(result)"}: ${issue.message}`);
    const more =
      error.issues.length > NAMED_PROBLEMS ? `; and ${error.issues.length - NAMED_PROBLEMS} more` : "";
    return new PermanentToolError(
      `MCP server "${server}" answered with a malformed tool result (${problems.join("; ")}${more})`,
      { cause: error },
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof McpError && PERMANENT_RPC_CODES.has(error.code)) {
    return new PermanentToolError(`MCP server "${server}" refused the call: ${message}`, { cause: error });
  }
  return new TransientToolError(`MCP server "${server}": ${message}`, { cause: error });
}
