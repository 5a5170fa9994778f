/**
 * A real MCP server (the SDK's McpServer over stdio) for the MCP tests, run as a child process:
 * `node --import tsx test/support/mcp-servers/test-server.ts <marker>`. The marker is only there so
 * tests can find its processes in /proc. Its tools:
 * - `progress {steps, intervalMs}`: reports progress every intervalMs, then answers "done after N steps";
 * - `silent {ms}`: says nothing for `ms` and ignores cancellation (keeps running after it);
 * - `fail {message}`: answers `isError: true`;
 * - `exit_now {}`: the process exits in the middle of the call;
 * - `spawn_child {}`: starts a long-lived child process (same marker) and answers its pid;
 * - `add_tool {name}`: registers a new tool (`notifications/tools/list_changed`);
 * - `echo {text}`.
 * Every cancellation a tool observes (its signal aborted by `notifications/cancelled`) is appended as a
 * JSON line `{tool, reason, at}` (`at`: epoch ms) to the file named by MCP_RECORD_FILE.
 */
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const marker = process.argv[2] ?? "mcp-test-server";
const recordFile = process.env.MCP_RECORD_FILE;

function recordCancellation(tool: string, signal: AbortSignal): void {
  const write = () => {
    if (recordFile)
      appendFileSync(
        recordFile,
        `${JSON.stringify({ tool, reason: String(signal.reason), at: Date.now() })}\n`,
      );
  };
  if (signal.aborted) write();
  else signal.addEventListener("abort", write, { once: true });
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const server = new McpServer({ name: "reins-test", version: "1.0.0" });

server.registerTool(
  "progress",
  {
    description: "Reports progress every intervalMs for `steps` steps.",
    inputSchema: { steps: z.number().int().min(1), intervalMs: z.number().int().min(1) },
  },
  async ({ steps, intervalMs }, extra) => {
    recordCancellation("progress", extra.signal);
    const progressToken = extra._meta?.progressToken;
    for (let step = 1; step <= steps; step++) {
      await delay(intervalMs);
      if (extra.signal.aborted) break;
      if (progressToken !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken, progress: step, total: steps, message: `step ${step} of ${steps}` },
        });
      }
    }
    return { content: [{ type: "text", text: `done after ${steps} steps` }] };
  },
);

server.registerTool(
  "silent",
  {
    description: "Says nothing for `ms` milliseconds; ignores cancellation.",
    inputSchema: { ms: z.number() },
  },
  async ({ ms }, extra) => {
    recordCancellation("silent", extra.signal);
    await delay(ms);
    return { content: [{ type: "text", text: `slept ${ms} ms` }] };
  },
);

server.registerTool(
  "fail",
  { description: "Fails with isError.", inputSchema: { message: z.string() } },
  async ({ message }) => ({ isError: true, content: [{ type: "text", text: `failed: ${message}` }] }),
);

server.registerTool("exit_now", { description: "Exits mid-call." }, async () => {
  setTimeout(() => process.exit(3), 50);
  await delay(60_000);
  return { content: [{ type: "text", text: "never" }] };
});

server.registerTool("spawn_child", { description: "Starts a long-lived child process." }, async () => {
  const child = spawn(
    process.execPath,
    ["-e", "process.on('SIGHUP', () => {}); setInterval(() => {}, 1000)", marker],
    {
      stdio: "ignore",
    },
  );
  child.unref();
  return { content: [{ type: "text", text: String(child.pid) }] };
});

server.registerTool(
  "add_tool",
  { description: "Registers a new tool.", inputSchema: { name: z.string() } },
  async ({ name }) => {
    server.registerTool(name, { description: `Added at run time: ${name}` }, async () => ({
      content: [{ type: "text", text: `${name} answers` }],
    }));
    return { content: [{ type: "text", text: `added ${name}` }] };
  },
);

server.registerTool(
  "big",
  { description: "Answers with `bytes` characters.", inputSchema: { bytes: z.number().int().min(1) } },
  async ({ bytes }) => ({ content: [{ type: "text", text: "x".repeat(bytes) }] }),
);

server.registerTool(
  "echo",
  { description: "Echoes text.", inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: "text", text }] }),
);

process.on("SIGHUP", () => {});
await server.connect(new StdioServerTransport());
