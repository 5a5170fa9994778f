#!/usr/bin/env node
/**
 * An example MCP server anyone can run with reins (stdio, built with the MCP SDK's McpServer):
 * a tiny in-memory documentation set with two tools.
 * - `search_docs {query}`: the pages whose title or text contains the query;
 * - `reindex {pages, delayMs?}`: a slow job that reports progress for every page (reins turns each
 *   report into `tool_progress` and re-arms the call's idle limit).
 *
 * Configure it under `mcpServers` (see README, "MCP servers"):
 *   { "mcpServers": { "docs": { "command": "node", "args": ["examples/mcp-docs-server.mjs"] } } }
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { setTimeout as delay } from "node:timers/promises";
import { z } from "zod";

const PAGES = [
  { title: "Getting started", text: "Install reins, start it with npm start, open the page." },
  { title: "Timeouts", text: "Every tool call has a wall-clock limit and an idle limit." },
  { title: "MCP servers", text: "Tools of MCP servers appear as server__tool." },
];

const server = new McpServer({ name: "reins-docs-example", version: "1.0.0" });

server.registerTool(
  "search_docs",
  {
    description: "Searches the documentation; answers the matching pages as title: text lines.",
    inputSchema: { query: z.string().min(1).describe("Words to look for") },
  },
  async ({ query }) => {
    const needle = query.toLowerCase();
    const found = PAGES.filter((page) => `${page.title} ${page.text}`.toLowerCase().includes(needle));
    const text =
      found.length === 0 ? "No page matches." : found.map((page) => `${page.title}: ${page.text}`).join("\n");
    return { content: [{ type: "text", text }] };
  },
);

server.registerTool(
  "reindex",
  {
    description: "Rebuilds the search index, reporting progress page by page.",
    inputSchema: {
      pages: z.number().int().min(1).max(1000).describe("How many pages to index"),
      delayMs: z.number().int().min(0).max(10_000).default(500).describe("Time per page"),
    },
  },
  async ({ pages, delayMs }, extra) => {
    const progressToken = extra._meta?.progressToken;
    for (let page = 1; page <= pages; page++) {
      if (extra.signal.aborted) {
        return { isError: true, content: [{ type: "text", text: `cancelled after ${page - 1} pages` }] };
      }
      await delay(delayMs);
      if (progressToken !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: {
            progressToken,
            progress: page,
            total: pages,
            message: `indexed page ${page} of ${pages}`,
          },
        });
      }
    }
    return { content: [{ type: "text", text: `indexed ${pages} pages` }] };
  },
);

await server.connect(new StdioServerTransport());
