/**
 * Descriptors the server inherits without close-on-exec (docs/semantics.md#isolation-and-limits),
 * performed as an attack: the server is started with a descriptor open on a secret file outside every
 * allowed root, as a wrapper or process manager may leave one, and a command asks its sandbox for
 * `/proc/self/fd/<n>`. Neither the command nor an MCP stdio server the server started may hold it: the
 * file would be readable through the descriptor whatever the sandbox mounts.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import { eventually } from "../helpers/eventually.js";
import { listProcesses } from "../helpers/processes.js";
import { PROJECT_ROOT, startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream } from "../helpers/sse.js";

type ToolResult = Extract<TurnEvent, { type: "tool_result" }>;

const RUN = randomBytes(4).toString("hex");
const SECRET = `inherited-secret-${RUN}`;
/** The server's descriptor on the secret file: high, like one a wrapper leaves open (`exec 200<file`). */
const INHERITED_FD = 200;
const MCP_MARKER = `reins-inherited-fd-${RUN}`;
const MCP_SERVER_SCRIPT = join(PROJECT_ROOT, "test/support/mcp-servers/test-server.ts");

let base: string;
let root: string;
let secretDescriptor: number;
let server: ServerHandle;

/** `startServer`'s stdio from 3 on: the secret file's descriptor as the server's INHERITED_FD. */
const extraStdio = (): (number | "ignore")[] =>
  Array.from({ length: INHERITED_FD - 2 }, (_, index) =>
    index === INHERITED_FD - 3 ? secretDescriptor : "ignore",
  );

/** Descriptor numbers open in `pid`, as /proc lists them. */
const descriptorsOf = (pid: number) => readdirSync(`/proc/${pid}/fd`).map(Number);

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "reins-inherited-fds-")));
  root = join(base, "root");
  mkdirSync(root);
  mkdirSync(join(base, "outside"));
  const secretFile = join(base, "outside", "secret.txt");
  writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
  secretDescriptor = openSync(secretFile, "r");
  const config = join(base, "config.json");
  writeFileSync(
    config,
    JSON.stringify({
      mcpServers: {
        t: {
          command: process.execPath,
          args: ["--import", "tsx", MCP_SERVER_SCRIPT, MCP_MARKER],
          cwd: PROJECT_ROOT,
        },
      },
    }),
  );
  server = await startServer({
    env: { SYSTEM_TOOLS: "exec", ALLOWED_ROOTS: root, CONFIG_FILE: config },
    extraStdio: extraStdio(),
  });
});

afterAll(async () => {
  // SIGTERM: the server stops its MCP server's group on the way out
  await server?.stop();
  server?.cleanup();
  if (secretDescriptor !== undefined) closeSync(secretDescriptor);
  rmSync(base, { recursive: true, force: true });
});

describe("a descriptor the server inherited without close-on-exec", () => {
  it("is really passed on to what the server's parent starts (the attack's premise)", () => {
    const shell = spawnSync("/bin/sh", ["-c", `cat /proc/self/fd/${INHERITED_FD}`], {
      stdio: ["ignore", "pipe", "pipe", ...extraStdio()],
      encoding: "utf8",
    });
    expect(shell.stdout).toContain(SECRET);
  });

  it("does not reach an exec command's sandbox", async () => {
    const command = `cat /proc/self/fd/${INHERITED_FD}; ls /proc/self/fd`;
    const stream = await SseStream.open(`${server.baseUrl}/api/sessions/stream`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: `/tool exec ${JSON.stringify({ command })}` }),
    });
    const result = (await stream.untilEnd()).find(
      (event): event is ToolResult => event.type === "tool_result",
    );
    expect(result?.status).toBe("complete");
    const output = result?.result ?? "";
    expect(output).not.toContain(SECRET);
    const stdout = output.slice(output.indexOf("--- stdout ---"), output.indexOf("--- stderr ---"));
    const listed = stdout.split("\n").filter((line) => /^\d+$/.test(line));
    // stdin, stdout, stderr, and the directory `ls` itself opened to list them: nothing inherited
    expect(listed).toEqual(["0", "1", "2", "3"]);
    expect(listed).not.toContain(String(INHERITED_FD));
  });

  it("does not reach an MCP stdio server, nor stay open in the server itself, which says so", async () => {
    const mcpServer = await eventually(() => {
      const found = listProcesses().find(
        (entry) =>
          entry.ppid === server.child.pid &&
          readFileSync(`/proc/${entry.pid}/cmdline`, "utf8").includes(MCP_MARKER),
      );
      expect(found).toBeDefined();
      return found!;
    }, 20_000);
    expect(descriptorsOf(mcpServer.pid)).not.toContain(INHERITED_FD);
    expect(descriptorsOf(server.child.pid!)).not.toContain(INHERITED_FD);
    const warning = server
      .logs()
      .find((line) => line.includes('"msg":"closed descriptors inherited without close-on-exec'));
    expect((JSON.parse(warning ?? "{}") as { descriptors?: number[] }).descriptors).toContain(INHERITED_FD);
  });
});
