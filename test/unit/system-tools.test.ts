/**
 * The system tools against the real system (docs/semantics.md#cancellation, docs/semantics.md#resilience,
 * docs/semantics.md#the-scripted-model): `exec` with real child processes (process groups checked in /proc),
 * `read_file` with real files and symlinks in a temp directory, `web_fetch` against a real `node:http` server
 * on 127.0.0.1. Tools are called directly with a hand-built ToolContext; waits are bounded, never timed.
 */
import { getEventListeners } from "node:events";
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { classifyError } from "../../src/tools/resilience/classify.js";
import { PermanentToolError, ToolError, TransientToolError } from "../../src/tools/resilience/tool-error.js";
import {
  createExecTool,
  createReadFileTool,
  createWebFetchTool,
  systemTools,
} from "../../src/tools/system/index.js";
import type { ToolContext } from "../../src/tools/types.js";

const WAIT = { timeout: 5_000, interval: 20 };

function makeContext(patch: Partial<ToolContext> = {}) {
  const controller = new AbortController();
  const heartbeats: string[] = [];
  const context: ToolContext = {
    turnId: "turn-1",
    sessionId: "session-1",
    agentId: "agent-1",
    callId: "call-1",
    toolName: "test",
    workspace: undefined,
    allowedRoots: [],
    depth: 0,
    signal: controller.signal,
    heartbeat: (message) => heartbeats.push(message ?? ""),
    services: undefined,
    ...patch,
  };
  return { context, controller, heartbeats };
}

/** Ids of the processes of group `groupId` that are running (zombies excluded: they are dead). */
async function liveMembers(groupId: number): Promise<number[]> {
  const members: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const line = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => undefined);
    if (line === undefined) continue;
    const [state, , group] = line.slice(line.lastIndexOf(")") + 2).split(" ");
    if (Number(group) === groupId && state !== "Z") members.push(Number(entry));
  }
  return members;
}

async function readPid(file: string): Promise<number> {
  let pid = 0;
  await vi.waitFor(async () => {
    pid = Number((await readFile(file, "utf8")).trim());
    expect(pid).toBeGreaterThan(0);
  }, WAIT);
  return pid;
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable("expected a rejection"),
    (error: unknown) => error,
  );
}

let base: string;
let root: string;
let outside: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "reins-system-")));
  root = path.join(base, "root");
  outside = path.join(base, "outside");
  await mkdir(path.join(root, "sub"), { recursive: true });
  await mkdir(outside);
  await writeFile(path.join(root, "hello.txt"), "hello, world\n");
  await writeFile(path.join(root, "sub", "inner.txt"), "inner\n");
  await writeFile(path.join(root, "big.txt"), "x".repeat(1_000));
  await writeFile(path.join(root, "euro.txt"), "€€€");
  await writeFile(path.join(outside, "secret.txt"), "secret\n");
  await symlink(path.join(outside, "secret.txt"), path.join(root, "link-out.txt"));
  await symlink(outside, path.join(root, "link-dir-out"));
  await symlink(path.join(root, "hello.txt"), path.join(root, "link-in.txt"));
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

describe("systemTools", () => {
  it("returns only the enabled tools", () => {
    const settings = { execKillGraceMs: 100, maxOutputBytes: 1_000 };
    expect(systemTools({ ...settings, enabled: [] })).toEqual([]);
    expect(systemTools({ ...settings, enabled: ["web_fetch", "exec"] }).map((tool) => tool.name)).toEqual([
      "exec",
      "web_fetch",
    ]);
    const all = systemTools({ ...settings, enabled: ["exec", "read_file", "web_fetch"] });
    expect(all.map((tool) => tool.concurrency)).toEqual(["parallel", "parallel", "parallel"]);
  });
});

describe("exec", () => {
  // Its own process group, no sandbox: these cases watch the group through host pids (`$$`) and pid
  // files outside the root, which a sandbox hides. The sandboxed tool: test/unit/exec-sandbox.test.ts.
  const exec = createExecTool({ execKillGraceMs: 200, maxOutputBytes: 1_000, execIsolation: "none" });
  /** For a shell that must get to run its SIGTERM trap before the SIGKILL, however busy the machine. */
  const patientExec = createExecTool({
    execKillGraceMs: 1_500,
    maxOutputBytes: 1_000,
    execIsolation: "none",
  });
  const run = (command: string, patch: Partial<ToolContext> = {}, cwd?: string, tool = exec) => {
    const made = makeContext({ allowedRoots: [root], ...patch });
    return { ...made, result: tool.execute({ command, cwd }, made.context) };
  };

  it("captures stdout, stderr and a non-zero exit code as a normal result, with heartbeats", async () => {
    const { context, heartbeats, result } = run("echo out; echo err >&2; exit 3");
    const text = (await result) as string;
    expect(text).toContain("Exit code: 3");
    expect(text).toMatch(/--- stdout ---\nout\n/);
    expect(text).toMatch(/--- stderr ---\nerr\n/);
    expect(heartbeats.length).toBeGreaterThan(0);
    expect(getEventListeners(context.signal, "abort")).toHaveLength(0);
  });

  it("runs in the workspace by default, and in a cwd inside the roots when asked", async () => {
    expect(await run("pwd").result).toContain(`--- stdout ---\n${root}\n`);
    expect(await run("pwd", {}, "sub").result).toContain(`--- stdout ---\n${path.join(root, "sub")}\n`);
    const inWorkspace = run("pwd", { workspace: path.join(root, "sub") });
    expect(await inWorkspace.result).toContain(`--- stdout ---\n${path.join(root, "sub")}\n`);
  });

  it("caps each stream at maxOutputBytes and says how much was left out", async () => {
    const text = (await run("head -c 5000 /dev/zero | tr '\\0' a; echo done >&2").result) as string;
    expect(text).toContain(`${"a".repeat(1_000)}\n[truncated: 4000 more bytes of stdout not shown`);
    expect(text).not.toContain("a".repeat(1_001));
    expect(text).toMatch(/--- stderr ---\ndone\n$/);
  });

  it.each([
    ["an absolute path outside the roots", "/"],
    ["a ../ escape", ".."],
    ["a symlink to a directory outside", "link-dir-out"],
  ])("refuses a cwd that is %s, before running anything", async (_label, cwd) => {
    const marker = path.join(outside, "ran");
    const error = await rejectionOf(run(`touch ${marker}`, {}, cwd).result);
    expect(error).toBeInstanceOf(PermanentToolError);
    expect((error as Error).message).toContain(`"${cwd}"`);
    expect(classifyError(error).classification).toBe("permanent");
    await expect(readFile(marker)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("refuses a cwd that is a file or does not exist, as permanent", async () => {
    expect(await rejectionOf(run("true", {}, "hello.txt").result)).toMatchObject({ errorCode: "ENOTDIR" });
    const missing = await rejectionOf(run("true", {}, "no-such-dir").result);
    expect(missing).toBeInstanceOf(PermanentToolError);
    expect(missing).toMatchObject({ errorCode: "ENOENT" });
  });

  it("refuses every call when no allowed root is configured", async () => {
    const error = await rejectionOf(run("true", { allowedRoots: [] }).result);
    expect(error).toBeInstanceOf(PermanentToolError);
    expect((error as Error).message).toContain("ALLOWED_ROOTS is not configured");
  });

  it("does not start when the signal is already aborted, and rejects with its reason", async () => {
    const { context, controller } = makeContext({ allowedRoots: [root] });
    const reason = new Error("cancelled before start");
    controller.abort(reason);
    const marker = path.join(root, "not-started");
    await expect(exec.execute({ command: `touch ${marker}` }, context)).rejects.toBe(reason);
    await expect(readFile(marker)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("on abort kills the whole process group, children included, before it settles", async () => {
    const pidFile = path.join(base, "group.pid");
    const { context, controller, result } = run(`echo $$ > ${pidFile}; sleep 100 & sleep 100 & wait`);
    const groupId = await readPid(pidFile);
    await vi.waitFor(async () => expect(await liveMembers(groupId)).toHaveLength(3), WAIT);

    const reason = new Error("stopped by the test");
    controller.abort(reason);
    await expect(result).rejects.toBe(reason);
    // Nothing of the group survives its call: checked the moment the call settled, not later.
    expect(await liveMembers(groupId)).toEqual([]);
    expect(getEventListeners(context.signal, "abort")).toHaveLength(0);
  });

  it("SIGKILLs a group that ignores SIGTERM once the grace has passed", async () => {
    const pidFile = path.join(base, "stubborn.pid");
    const { controller, result } = run(`trap "" TERM; echo $$ > ${pidFile}; sleep 100`);
    const groupId = await readPid(pidFile);
    await vi.waitFor(async () => expect((await liveMembers(groupId)).length).toBeGreaterThan(0), WAIT);

    controller.abort(new Error("stop"));
    await expect(result).rejects.toThrow("stop");
    expect(await liveMembers(groupId)).toEqual([]);
  });

  it("sends SIGTERM first: a shell that traps it sees it, and is SIGKILLed after the grace", async () => {
    const pidFile = path.join(base, "trapper.pid");
    const termLog = path.join(base, "term.log");
    const command = `trap 'echo got-term >> ${termLog}' TERM; echo $$ > ${pidFile}; while :; do sleep 100 & wait; done`;
    const { controller, result } = run(command, {}, undefined, patientExec);
    const groupId = await readPid(pidFile);
    await vi.waitFor(async () => expect(await liveMembers(groupId)).toHaveLength(2), WAIT);

    controller.abort(new Error("stop"));
    await expect(result).rejects.toThrow("stop");
    expect(await readFile(termLog, "utf8")).toContain("got-term");
    expect(await liveMembers(groupId)).toEqual([]);
  });

  it("stops background processes a finished command left behind before returning its result", async () => {
    const pidFile = path.join(base, "leftover.pid");
    const text = (await run(`echo $$ > ${pidFile}; sleep 100 & echo started`).result) as string;
    expect(text).toContain("Exit code: 0");
    expect(text).toContain("started");
    const groupId = Number((await readFile(pidFile, "utf8")).trim());
    expect(await liveMembers(groupId)).toEqual([]);
  });
});

describe("read_file", () => {
  const readFileTool = createReadFileTool({ maxOutputBytes: 100 });
  const read = (filePath: string, maxBytes?: number, patch: Partial<ToolContext> = {}) =>
    readFileTool.execute(
      { path: filePath, maxBytes },
      makeContext({ allowedRoots: [root], ...patch }).context,
    );

  it("reads a file inside the root, by relative or absolute path", async () => {
    expect(await read("hello.txt")).toBe("hello, world\n");
    expect(await read(path.join(root, "sub", "inner.txt"))).toBe("inner\n");
    expect(await read("inner.txt", undefined, { workspace: path.join(root, "sub") })).toBe("inner\n");
  });

  it("follows a symlink that stays inside the root", async () => {
    expect(await read("link-in.txt")).toBe("hello, world\n");
  });

  it.each([
    ["a ../ escape", "../outside/secret.txt"],
    ["an absolute path outside", "OUTSIDE/secret.txt"],
    ["a symlink pointing outside", "link-out.txt"],
    ["a missing file behind a symlinked directory outside", "link-dir-out/missing.txt"],
    ["a missing file after a ../ escape", "../outside/missing.txt"],
  ])("refuses %s, naming the path", async (_label, requested) => {
    const filePath = requested.replace("OUTSIDE", outside);
    const error = await rejectionOf(read(filePath));
    expect(error).toBeInstanceOf(PermanentToolError);
    expect((error as Error).message).toContain(`refused path "${filePath}"`);
    expect((error as Error).message).not.toContain("secret\n");
  });

  it("reports a missing file as a permanent ENOENT", async () => {
    const error = await rejectionOf(read("missing.txt"));
    expect(error).toBeInstanceOf(PermanentToolError);
    expect(error).toMatchObject({ errorCode: "ENOENT" });
    expect(classifyError(error).classification).toBe("permanent");
  });

  it("refuses a directory", async () => {
    const error = await rejectionOf(read("sub"));
    expect(error).toBeInstanceOf(PermanentToolError);
    expect(error).toMatchObject({ errorCode: "EISDIR" });
  });

  it("reads at most min(maxBytes, maxOutputBytes) bytes and says it stopped short", async () => {
    expect(await read("big.txt", 10)).toBe(
      `${"x".repeat(10)}\n[truncated: showed the first 10 bytes of 1000, limited by maxBytes]`,
    );
    expect(await read("big.txt", 5_000)).toBe(
      `${"x".repeat(100)}\n[truncated: showed the first 100 bytes of 1000, limited by the output limit]`,
    );
    expect(await read("hello.txt", 13)).toBe("hello, world\n");
  });

  it("does not cut a character in half at the limit", async () => {
    // "€" is three bytes; four bytes hold one whole euro sign and a third of the next.
    expect(await read("euro.txt", 4)).toMatch(/^€\n\[truncated/);
  });

  it("refuses every call when no allowed root is configured", async () => {
    await expect(read("hello.txt", undefined, { allowedRoots: [] })).rejects.toThrow(
      "ALLOWED_ROOTS is not configured",
    );
  });

  it("rejects with the abort reason when the signal is already aborted", async () => {
    const { context, controller } = makeContext({ allowedRoots: [root] });
    const reason = new Error("aborted");
    controller.abort(reason);
    await expect(readFileTool.execute({ path: "hello.txt" }, context)).rejects.toBe(reason);
  });
});

describe("web_fetch", () => {
  // The test server is on loopback, which web_fetch refuses unless allowed (web-fetch-ssrf.test.ts).
  const webFetch = createWebFetchTool({ maxOutputBytes: 1_000, webFetchAllow: ["127.0.0.1"] });
  let server: Server;
  let origin: string;
  const slowResponses = new Set<ServerResponse>();

  beforeAll(async () => {
    server = createServer((request, response) => {
      switch (request.url) {
        case "/ok":
          response
            .writeHead(200, { "content-type": "text/plain; charset=utf-8" })
            .end("hello from the server");
          return;
        case "/redirect":
          response.writeHead(302, { location: "/ok" }).end();
          return;
        case "/missing":
          response.writeHead(404, { "content-type": "text/plain" }).end("no such page");
          return;
        case "/overloaded":
          response.writeHead(503).end("try later");
          return;
        case "/busy":
          response.writeHead(429).end();
          return;
        case "/big":
          response.writeHead(200, { "content-type": "text/plain" });
          for (let index = 0; index < 10; index++) response.write("y".repeat(1_000));
          response.end();
          return;
        case "/slow":
          // One chunk, then nothing: the body never ends unless the client goes away.
          response.writeHead(200, { "content-type": "text/plain" });
          response.write("first chunk");
          slowResponses.add(response);
          response.on("close", () => slowResponses.delete(response));
          return;
        default:
          response.writeHead(500).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const fetchUrl = (url: string, maxBytes?: number) => {
    const made = makeContext();
    return { ...made, result: webFetch.execute({ url, maxBytes }, made.context) };
  };

  it("returns status, content type and body of a 200", async () => {
    const { context, heartbeats, result } = fetchUrl(`${origin}/ok`);
    expect(await result).toBe(
      "HTTP 200 OK\nContent-Type: text/plain; charset=utf-8\n\nhello from the server",
    );
    expect(heartbeats.length).toBeGreaterThan(0);
    expect(getEventListeners(context.signal, "abort")).toHaveLength(0);
  });

  it("follows redirects and names the final URL", async () => {
    expect(await fetchUrl(`${origin}/redirect`).result).toContain(`URL: ${origin}/ok\n`);
  });

  it.each([
    ["/missing", 404, "permanent", "no such page"],
    ["/overloaded", 503, "transient", "try later"],
    ["/busy", 429, "transient", ""],
  ])(
    "turns %s into a ToolError with status %i, classified %s",
    async (route, status, classification, body) => {
      const error = await rejectionOf(fetchUrl(`${origin}${route}`).result);
      expect(error).toBeInstanceOf(ToolError);
      expect(error).toMatchObject({ status });
      expect((error as Error).message).toContain(`HTTP ${status}`);
      expect((error as Error).message).toContain(body);
      expect(classifyError(error).classification).toBe(classification);
    },
  );

  it.each([["file:///etc/passwd"], ["ftp://127.0.0.1/file"], ["data:text/plain,hi"], ["not a url"]])(
    "refuses %s as permanent",
    async (url) => {
      const error = await rejectionOf(fetchUrl(url).result);
      expect(error).toBeInstanceOf(PermanentToolError);
      expect((error as Error).message).toContain(url);
    },
  );

  it("stops reading at the cap and says the body was cut", async () => {
    const text = (await fetchUrl(`${origin}/big`, 50).result) as string;
    expect(text).toContain(`\n\n${"y".repeat(50)}\n[truncated: showed the first 50 bytes`);
    expect(text).not.toContain("y".repeat(51));
    const capped = (await fetchUrl(`${origin}/big`).result) as string;
    expect(capped).toContain(`${"y".repeat(1_000)}\n[truncated: showed the first 1000 bytes`);
  });

  it("rejects with the abort reason when aborted mid-body, and the connection is released", async () => {
    const { controller, heartbeats, result } = fetchUrl(`${origin}/slow`);
    await vi.waitFor(() => expect(heartbeats.length).toBeGreaterThan(0), WAIT);
    const reason = new Error("cancelled mid-body");
    controller.abort(reason);
    await expect(result).rejects.toBe(reason);
    await vi.waitFor(() => expect(slowResponses.size).toBe(0), WAIT);
  });

  it("turns a refused connection into a TransientToolError with the cause's code", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = await rejectionOf(fetchUrl(`http://127.0.0.1:${port}/`).result);
    expect(error).toBeInstanceOf(TransientToolError);
    expect(error).toMatchObject({ errorCode: "ECONNREFUSED" });
  });
});
