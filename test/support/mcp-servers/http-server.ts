/**
 * A real Streamable HTTP MCP server (the SDK's McpServer, stateful sessions) on a loopback port, for
 * tests: `startHttpMcpServer()` resolves with its URL, a `close()`, and a `kill()` that drops every
 * connection and stops listening, as a server whose process died would. Its tools: `echo {text}`, and
 * `hang {}`, which never answers.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

function newServer(): McpServer {
  const server = new McpServer({ name: "reins-test-http", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echoes text over HTTP.", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text: `http: ${text}` }] }),
  );
  server.registerTool("hang", { description: "Never answers." }, () => new Promise<never>(() => {}));
  return server;
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

export async function startHttpMcpServer(): Promise<{
  url: string;
  close(): Promise<void>;
  kill(): void;
}> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const httpServer: Server = createServer((request, response) => {
    void (async () => {
      const sessionId = request.headers["mcp-session-id"];
      const body = request.method === "POST" ? await readJson(request) : undefined;
      let transport = typeof sessionId === "string" ? transports.get(sessionId) : undefined;
      if (!transport && request.method === "POST" && isInitializeRequest(body)) {
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            transports.set(id, created);
          },
        });
        transport = created;
        await newServer().connect(created);
      }
      if (!transport) {
        response.writeHead(404, { "content-type": "application/json" }).end(
          JSON.stringify({
            jsonrpc: "2.0",
            error: { code: -32001, message: "Session not found" },
            id: null,
          }),
        );
        return;
      }
      await transport.handleRequest(request, response, body);
    })();
  });
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      for (const transport of transports.values()) await transport.close();
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
    kill: () => {
      httpServer.close();
      httpServer.closeAllConnections();
    },
  };
}

/**
 * An MCP server that speaks only the older SSE transport (GET opens the stream, POSTs go to
 * `/messages`); Streamable HTTP's POST to the URL gets 405. Counts the SSE streams it was asked for.
 */
export async function startSseOnlyMcpServer(): Promise<{
  url: string;
  streams(): number;
  close(): Promise<void>;
}> {
  const transports = new Map<string, SSEServerTransport>();
  let streams = 0;
  const httpServer: Server = createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? "/", "http://localhost");
      if (request.method === "GET" && url.pathname === "/mcp") {
        streams++;
        const transport = new SSEServerTransport("/messages", response);
        transports.set(transport.sessionId, transport);
        await newServer().connect(transport);
        return;
      }
      const transport = transports.get(url.searchParams.get("sessionId") ?? "");
      if (request.method === "POST" && url.pathname === "/messages" && transport) {
        await transport.handlePostMessage(request, response);
        return;
      }
      response.writeHead(405).end();
    })();
  });
  await new Promise<void>((resolve) => httpServer.listen(0, "127.0.0.1", resolve));
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    streams: () => streams,
    close: async () => {
      for (const transport of transports.values()) await transport.close();
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    },
  };
}
