/**
 * `exec` isolation over the real server (docs/semantics.md#isolation-and-limits), performed as attacks: a
 * server with auth tokens and a secret in its environment, DATA_DIR inside the allowed root, and one
 * principal whose exec calls try to read the server's environment, another principal's messages in the
 * database, files outside the root, and the server's own API on loopback; then daemons (`setsid -f`, a double
 * fork, `nohup setsid`) that must be gone after a call completes, is aborted, times out, and after the server
 * is stopped with SIGTERM or killed. Processes are found in /proc by a marker in their command line.
 * Start-up: a server whose exec cannot be sandboxed refuses to start unless EXEC_ISOLATION=none.
 *
 * All of it passes only with the sandbox: with EXEC_ISOLATION=none (the old behaviour) every attack
 * succeeds and the `setsid` daemons survive.
 */
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import { eventually } from "../helpers/eventually.js";
import { escapees, processesWith } from "../helpers/processes.js";
import { runServerToExit, startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, turnIdOf } from "../helpers/sse.js";

type ToolResult = Extract<TurnEvent, { type: "tool_result" }>;

const RUN = randomBytes(4).toString("hex");
const SECRET = `env-secret-${RUN}`;
const ALICE_TOKEN = `alice-token-${RUN}`;
const MALLORY_TOKEN = `mallory-token-${RUN}`;
const ALICE_NOTE = `alice-private-note-${RUN}`;
const OUTSIDE = `outside-the-root-${RUN}`;
/** Every daemon a test starts runs `sleep <RUN_MARKER><scenario><n>`. */
const RUN_MARKER = `1000.${randomBytes(3).readUIntBE(0, 3)}`;
const GRACE_MS = 500;
/** What leaks, should anything: none of it may appear in a command's output. */
const LEAKS = [SECRET, ALICE_TOKEN, MALLORY_TOKEN, ALICE_NOTE, OUTSIDE, '"status":"ok"'];

const execMessage = (command: string, meta?: Record<string, unknown>) =>
  `/tool exec ${JSON.stringify(meta === undefined ? { command } : { command, _meta: meta })}`;

function start(server: ServerHandle, token: string, message: string): Promise<SseStream> {
  return SseStream.open(`${server.baseUrl}/api/sessions/stream`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ message }),
  });
}

const toolResultOf = (events: TurnEvent[]) =>
  events.find((event): event is ToolResult => event.type === "tool_result");

/** One exec call of `command` as the principal of `token`, run to its turn's end: its result. */
async function execResult(server: ServerHandle, token: string, command: string) {
  return toolResultOf(await (await start(server, token, execMessage(command))).untilEnd());
}

let base: string;
let root: string;
let outsideFile: string;
/** Servers of one test, stopped after it. */
const servers: ServerHandle[] = [];

function serverEnvironment(extra: Record<string, string> = {}): Record<string, string> {
  return {
    SYSTEM_TOOLS: "exec",
    ALLOWED_ROOTS: root,
    AUTH_TOKENS: `alice:${ALICE_TOKEN},mallory:${MALLORY_TOKEN}`,
    REINS_TEST_SECRET: SECRET,
    EXEC_KILL_GRACE_MS: String(GRACE_MS),
    ...extra,
  };
}

/** A server whose DATA_DIR lies inside the allowed root: the database is where commands may go. */
function startServerWithDataInRoot(name: string): Promise<ServerHandle> {
  const dataDir = join(root, name);
  mkdirSync(dataDir);
  return startServer({ dataDir, env: serverEnvironment() });
}

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "reins-exec-isolation-")));
  root = join(base, "root");
  outsideFile = join(base, "outside", "secret.txt");
  mkdirSync(root);
  mkdirSync(join(base, "outside"));
  writeFileSync(outsideFile, `${OUTSIDE}\n`);
});

afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop("SIGKILL");
});

afterAll(() => {
  // on a failing run the daemons survive: they are ours, end them
  for (const pid of processesWith(RUN_MARKER)) process.kill(pid, "SIGKILL");
  rmSync(base, { recursive: true, force: true });
});

describe("exec over a real server with auth and secrets", () => {
  let server: ServerHandle;
  let dataDir: string;

  afterAll(async () => {
    await server.stop("SIGKILL");
  });

  beforeAll(async () => {
    server = await startServerWithDataInRoot("data");
    dataDir = server.dataDir;
    // alice's message, in the database (or its WAL) where mallory's command will look for it
    const stream = await start(server, ALICE_TOKEN, `remember ${ALICE_NOTE}`);
    await stream.untilEnd();
    await eventually(() => {
      const stored = readdirSync(dataDir).map((file) => readFileSync(join(dataDir, file)).toString("latin1"));
      expect(stored.join("")).toContain(ALICE_NOTE);
    });
  });

  const attack = async (command: string) => {
    const result = await execResult(server, MALLORY_TOKEN, command);
    expect(result?.status).toBe("complete");
    return result?.result ?? "";
  };

  it.each([
    ["the server's environment through /proc/$PPID", () => "cat /proc/$PPID/environ"],
    ["the environment of pid 1", () => "cat /proc/1/environ"],
    [
      "any environment in /proc",
      () => "cat /proc/*/environ | tr '\\0' '\\n' | grep -a -e REINS_TEST -e AUTH_TOKENS",
    ],
    ["the server's /proc entry by its pid", () => `cat /proc/${server.child.pid}/environ`],
    [
      "the database in DATA_DIR",
      () => `grep -a -o 'alice-private-note-[0-9a-f]*' ${dataDir}/reins.db ${dataDir}/reins.db-wal`,
    ],
    [
      "the database by a relative path",
      () => "cat data/reins.db-wal data/reins.db | grep -a -o 'alice-private-note-[0-9a-f]*'",
    ],
    ["a file outside the root by absolute path", () => `cat ${outsideFile}`],
    ["a file outside the root through ..", () => "cat ../outside/secret.txt"],
  ])("a command cannot read %s", async (_label, command) => {
    const output = await attack(command());
    for (const leak of LEAKS) expect(output).not.toContain(leak);
  });

  it("a command cannot reach the server's API on loopback (no network)", async () => {
    const output = await attack(`curl -sS -m 5 http://127.0.0.1:${server.port}/healthz`);
    // curl ran and could not connect (a missing curl would prove nothing)
    expect(output).toMatch(/curl: \(7\)/);
    expect(output).not.toContain('"status":"ok"');
  });

  it("a command still reads and writes files under the root", async () => {
    writeFileSync(join(root, "given.txt"), "given to the command\n");
    const output = await attack("cat given.txt; echo made by the command > made.txt");
    expect(output).toContain("Exit code: 0");
    expect(output).toContain("given to the command");
    expect(readFileSync(join(root, "made.txt"), "utf8")).toBe("made by the command\n");
  });

  it("leaves no daemon running once a call has completed", async () => {
    const marker = `${RUN_MARKER}1`;
    const stream = await start(server, MALLORY_TOKEN, execMessage(`${escapees(marker)}\necho started`));
    const result = toolResultOf(await stream.untilEnd());
    expect(result).toMatchObject({ status: "complete" });
    expect(result?.result).toContain("started");
    // checked the moment the result is out, not eventually
    expect(processesWith(marker)).toEqual([]);
  });

  it("leaves no daemon running once its turn is aborted", async () => {
    const marker = `${RUN_MARKER}2`;
    const stream = await start(server, MALLORY_TOKEN, execMessage(`${escapees(marker)}\nsleep ${marker}4`));
    await eventually(() => expect(processesWith(marker)).toHaveLength(4), 20_000);
    const abort = await fetch(`${server.baseUrl}/api/turns/${turnIdOf(stream)}/abort`, {
      method: "POST",
      headers: { authorization: `Bearer ${MALLORY_TOKEN}` },
    });
    expect(abort.status).toBe(200);
    await stream.untilEnd();
    await eventually(() => expect(processesWith(marker)).toEqual([]));
  });

  it("leaves no daemon running once a call times out", async () => {
    const marker = `${RUN_MARKER}3`;
    const stream = await start(
      server,
      MALLORY_TOKEN,
      execMessage(`${escapees(marker)}\nsleep ${marker}4`, { timeout: 6_000 }),
    );
    // all up before the limit, so what the timeout has to end is really there
    await eventually(() => expect(processesWith(marker)).toHaveLength(4), 20_000);
    expect(stream.events.some((event) => event.type === "tool_result")).toBe(false);
    const result = toolResultOf(await stream.untilEnd());
    expect(result).toMatchObject({ status: "timeout" });
    await eventually(() => expect(processesWith(marker)).toEqual([]));
  });
});

describe("exec and a DATA_DIR deeper inside the root", () => {
  it("a command cannot move a directory above DATA_DIR to uncover the database", async () => {
    // root/deep/var/data: the mask covers data, but deep and var are the command's to rename — and a
    // renamed var would take the open database (the server goes on writing it) past every mask
    mkdirSync(join(root, "deep", "var"), { recursive: true });
    const dataDir = join(root, "deep", "var", "data");
    mkdirSync(dataDir);
    const server = await startServer({ dataDir, env: serverEnvironment() });
    servers.push(server);
    await (await start(server, ALICE_TOKEN, `remember ${ALICE_NOTE}`)).untilEnd();

    const renamed = await execResult(
      server,
      MALLORY_TOKEN,
      "mv deep/var deep/moved; mv deep elsewhere; mv deep/var/data deep/var/open; ls -R .",
    );
    expect(renamed?.status).toBe("complete");
    expect(renamed?.result).toMatch(/Device or resource busy/);
    expect(readdirSync(dataDir)).toContain("reins.db");
    expect(readdirSync(join(root, "deep"))).toEqual(["var"]);

    const searched = await execResult(
      server,
      MALLORY_TOKEN,
      // under deep only: the root also holds the unmasked data directories of this file's other servers
      "grep -r -a -o 'alice-private-note-[0-9a-f]*' deep ; find deep -name 'reins.db*'",
    );
    expect(searched?.result).toContain("Exit code:");
    for (const leak of LEAKS) expect(searched?.result).not.toContain(leak);
    expect(searched?.result).not.toContain("reins.db");
  });
});

describe("exec daemons and the server's end", () => {
  it.each([
    ["a SIGTERM shutdown", "SIGTERM" as const, 0],
    ["the server being killed", "SIGKILL" as const, "SIGKILL"],
  ])("leaves no daemon running after %s", async (label, signal, exitStatus) => {
    const marker = `${RUN_MARKER}${signal === "SIGTERM" ? 4 : 5}`;
    const server = await startServerWithDataInRoot(`data-${signal}`);
    servers.push(server);
    // the shell ignores SIGTERM too, so shutdown has to go as far as SIGKILL
    const stream = await start(
      server,
      MALLORY_TOKEN,
      execMessage(`trap '' TERM\n${escapees(marker)}\nsleep ${marker}4`),
    );
    await eventually(() => expect(processesWith(marker)).toHaveLength(4), 20_000);
    expect(await server.stop(signal), label).toBe(exitStatus);
    await stream.done;
    await eventually(() => expect(processesWith(marker)).toEqual([]));
  });
});

describe("exec without the sandbox and the server killed", () => {
  it("the next start kills the commands the killed server's calls left running (EXEC_ISOLATION=none)", async () => {
    const marker = `${RUN_MARKER}6`;
    const dataDir = mkdtempSync(join(base, "unsandboxed-crash-"));
    const environment = serverEnvironment({ EXEC_ISOLATION: "none" });
    const first = await startServer({ dataDir, env: environment });
    servers.push(first);
    const stream = await start(first, MALLORY_TOKEN, execMessage(`sleep ${marker}1`));
    await eventually(() => expect(processesWith(marker).length).toBeGreaterThan(0), 20_000);
    expect(await first.stop("SIGKILL")).toBe("SIGKILL");
    await stream.done;
    // nothing of the killed server could stop its call: the command runs on
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(processesWith(marker).length).toBeGreaterThan(0);

    const second = await startServer({ dataDir, env: environment });
    servers.push(second);
    await eventually(() => expect(processesWith(marker)).toEqual([]));
    await eventually(() =>
      expect(second.logs().join("\n")).toContain("killed exec processes left by a previous run"),
    );
  });
});

describe("a DATA_DIR a command could redirect before the next start", () => {
  it("is refused when its path runs through a symbolic link inside the root, naming the link and the real path", async () => {
    // the configuration helper 74's attack needed: a command repoints `link` at a directory of its own,
    // and the next start opened the database there
    const real = mkdtempSync(join(base, "real-data-"));
    const link = join(root, `data-link-${RUN}`);
    symlinkSync(real, link);
    const { code, stderr } = await runServerToExit({ ...serverEnvironment(), DATA_DIR: link });
    expect(code).toBe(1);
    expect(stderr).toContain(
      `DATA_DIR (${link}) is reached through the symbolic link ${link}, inside an allowed root`,
    );
    expect(stderr).toContain(`Set DATA_DIR to its real path, ${real}.`);
  });

  it("is refused when a command has left a hard link to its database file", async () => {
    const server = await startServerWithDataInRoot(`data-first-${RUN}`);
    servers.push(server);
    // mallory prepares a data directory whose database has a second name outside it
    const prepared = await execResult(
      server,
      MALLORY_TOKEN,
      `mkdir prepared-${RUN} && : > prepared-${RUN}/reins.db && ln prepared-${RUN}/reins.db stolen-${RUN}.db && echo done`,
    );
    expect(prepared?.result).toContain("done");
    const { code, stderr } = await runServerToExit({
      ...serverEnvironment(),
      DATA_DIR: join(root, `prepared-${RUN}`),
    });
    expect(code).toBe(1);
    expect(stderr).toContain(
      `DATA_DIR: ${join(root, `prepared-${RUN}`, "reins.db")} is one of 2 hard links to one file`,
    );
  });

  it("is used at its real path when a link to it lies outside every root", async () => {
    const real = join(root, `linked-data-${RUN}`);
    mkdirSync(real);
    const link = join(base, `outside-link-${RUN}`);
    symlinkSync(real, link);
    const server = await startServer({ dataDir: link, env: serverEnvironment() });
    servers.push(server);
    const stream = await start(server, ALICE_TOKEN, `remember ${ALICE_NOTE}`);
    await stream.untilEnd();
    expect(readdirSync(real)).toContain("reins.db");
    const output = await execResult(server, MALLORY_TOKEN, `ls -A linked-data-${RUN} | wc -l`);
    // the database's directory shows empty to a command
    expect(output?.result).toMatch(/^0$/m);
  });
});

describe("start-up when exec cannot be sandboxed", () => {
  const refusal = (path: string) =>
    runServerToExit({
      ...serverEnvironment(),
      PATH: path,
      DATA_DIR: mkdtempSync(join(base, "refused-")),
    });

  it("refuses to start without bwrap, naming what is missing and how to fix it", async () => {
    const noBwrap = mkdtempSync(join(base, "path-"));
    const { code, stderr } = await refusal(noBwrap);
    expect(code).toBe(1);
    expect(stderr).toContain(`no "bwrap" executable was found on PATH (${noBwrap})`);
    expect(stderr).toContain("apt-get install bubblewrap");
    expect(stderr).toContain("EXEC_ISOLATION=none");
  });

  it("refuses to start when bwrap may not create namespaces (Docker's default seccomp)", async () => {
    const fakeBin = mkdtempSync(join(base, "fake-bin-"));
    writeFileSync(
      join(fakeBin, "bwrap"),
      "#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n",
    );
    chmodSync(join(fakeBin, "bwrap"), 0o755);
    const { code, stderr } = await refusal(fakeBin);
    expect(code).toBe(1);
    expect(stderr).toContain("Creating new namespace failed: Operation not permitted");
    expect(stderr).toContain("user namespaces");
    expect(stderr).toContain("--security-opt seccomp=unconfined");
    expect(stderr).toContain("EXEC_ISOLATION=none");
  });

  it("starts without bwrap when EXEC_ISOLATION=none is set explicitly", async () => {
    const noBwrap = mkdtempSync(join(base, "path-"));
    const dataDir = mkdtempSync(join(base, "unsandboxed-"));
    const server = await startServer({
      dataDir,
      env: serverEnvironment({ PATH: noBwrap, EXEC_ISOLATION: "none" }),
    });
    servers.push(server);
    const stream = await start(server, MALLORY_TOKEN, execMessage("echo unsandboxed"));
    expect(toolResultOf(await stream.untilEnd())?.result).toContain("unsandboxed");
  });
});
