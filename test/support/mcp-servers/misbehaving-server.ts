/**
 * MCP servers over stdio that break the protocol's expectations, one per mode, for the MCP failure
 * tests: `node --import tsx test/support/mcp-servers/misbehaving-server.ts <mode>`.
 * - `same-cursor`: every `tools/list` page says there is a next one, under the same cursor;
 * - `endless-pages`: pages of 300 tools, each with a new cursor, without end;
 * - `exit-after-ready`: exits 300 ms after the client's `initialized` (it has listed its tools by then);
 * - `busy`: one tool, `busy {}`, that prints a line that is not JSON-RPC and then holds its only thread
 *   for 12 s (longer than reins' 10 s ping timeout) before answering "done";
 * - `malformed`: one tool, `bad {}`, whose result is not a tool result (`content` is a string). The SDK's
 *   server classes refuse to send that, so this mode speaks JSON-RPC over the SDK's stdio transport
 *   itself. Every call it receives is appended as a line to the file named by MCP_RECORD_FILE.
 */
import { appendFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { ListToolsRequestSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const mode = process.argv[2];
const PAGE_SIZE = 300;

function pagingServer(nextCursor: (page: number) => string): Server {
  const server = new Server({ name: "paging", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, (request) => {
    const page = Number(request.params?.cursor?.replace("page-", "") ?? 0);
    return {
      tools: Array.from({ length: PAGE_SIZE }, (_, index) => ({
        name: `tool_${page}_${index}`,
        inputSchema: { type: "object" as const },
      })),
      nextCursor: nextCursor(page),
    };
  });
  return server;
}

function exitAfterReady(): McpServer {
  const server = new McpServer({ name: "flapping", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echoes text.", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  server.server.oninitialized = () => setTimeout(() => process.exit(1), 300);
  return server;
}

function busy(): McpServer {
  const server = new McpServer({ name: "busy", version: "1.0.0" });
  server.registerTool("busy", { description: "Works for 12 s, answering nothing meanwhile." }, async () => {
    process.stdout.write("debug: starting the work\n");
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 12_000);
    return { content: [{ type: "text", text: "done" }] };
  });
  return server;
}

async function malformed(): Promise<void> {
  const transport = new StdioServerTransport();
  const reply = (id: string | number, result: unknown) =>
    void transport.send({ jsonrpc: "2.0", id, result } as JSONRPCMessage);
  transport.onmessage = (message) => {
    if (!("method" in message) || !("id" in message)) return;
    const params = (message.params ?? {}) as Record<string, unknown>;
    if (message.method === "initialize") {
      reply(message.id, {
        protocolVersion: params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "malformed", version: "1.0.0" },
      });
    } else if (message.method === "tools/list") {
      reply(message.id, { tools: [{ name: "bad", inputSchema: { type: "object" } }] });
    } else if (message.method === "tools/call") {
      const recordFile = process.env.MCP_RECORD_FILE;
      if (recordFile) appendFileSync(recordFile, `${JSON.stringify({ tool: params.name })}\n`);
      reply(message.id, { content: "not an array" });
    } else {
      reply(message.id, {});
    }
  };
  await transport.start();
}

process.on("SIGHUP", () => {});
if (mode === "same-cursor") await pagingServer(() => "again").connect(new StdioServerTransport());
else if (mode === "endless-pages") {
  await pagingServer((page) => `page-${page + 1}`).connect(new StdioServerTransport());
} else if (mode === "exit-after-ready") await exitAfterReady().connect(new StdioServerTransport());
else if (mode === "busy") await busy().connect(new StdioServerTransport());
else if (mode === "malformed") await malformed();
else throw new Error(`unknown mode: ${String(mode)}`);
