/**
 * `exec` in its bubblewrap sandbox (docs/semantics.md#isolation-and-limits), with the real bwrap of this
 * machine and real processes: what a command can reach (the roots, no other file of the host, not DATA_DIR
 * inside a root; the server's environment is attacked over a real server in exec-isolation.test.ts), what
 * survives it (nothing: checked in /proc by a marker in each process's command line, the moment the call
 * settles), and the start-up check that refuses to build the tool when bwrap cannot run. The attacks here
 * succeed with `execIsolation: "none"`, which is the old behaviour.
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createExecTool, SandboxUnavailableError, systemTools } from "../../src/tools/system/index.js";
import type { SandboxProbe } from "../../src/tools/system/index.js";
import type { ToolContext } from "../../src/tools/types.js";
import { escapees, processesWith } from "../helpers/processes.js";

const GRACE_MS = 1_500;
/** Every process a test starts carries this in its command line (`sleep 1000.<run><n>`). */
const RUN_MARKER = `1000.${randomBytes(3).readUIntBE(0, 3)}`;
const SECRET = `sandbox-secret-${randomBytes(8).toString("hex")}`;

function makeContext(allowedRoots: string[]) {
  const controller = new AbortController();
  const context: ToolContext = {
    turnId: "turn-1",
    sessionId: "session-1",
    agentId: "agent-1",
    callId: "call-1",
    toolName: "exec",
    workspace: undefined,
    allowedRoots,
    depth: 0,
    signal: controller.signal,
    heartbeat: () => {},
    services: undefined,
  };
  return { context, controller };
}

let base: string;
let root: string;
let dataDir: string;
let outsideFile: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "reins-sandbox-")));
  root = path.join(base, "root");
  dataDir = path.join(root, "data");
  outsideFile = path.join(base, "outside", "secret.txt");
  await mkdir(dataDir, { recursive: true });
  await mkdir(path.dirname(outsideFile));
  await writeFile(path.join(root, "inside.txt"), "inside the root\n");
  await writeFile(path.join(dataDir, "reins.db"), `database holding ${SECRET}\n`);
  await writeFile(outsideFile, `outside holding ${SECRET}\n`);
});

afterAll(async () => {
  // a failing run (the old code) leaves its escapees behind: end them, they are ours
  for (const pid of processesWith(RUN_MARKER)) process.kill(pid, "SIGKILL");
  await rm(base, { recursive: true, force: true });
});

describe("exec in a bwrap sandbox", () => {
  let exec: ReturnType<typeof createExecTool>;
  beforeAll(() => {
    exec = createExecTool({
      execKillGraceMs: GRACE_MS,
      maxOutputBytes: 100_000,
      execIsolation: "bwrap",
      privatePaths: [dataDir],
    });
  });
  const run = (command: string) => {
    const { context, controller } = makeContext([root]);
    return { controller, result: exec.execute({ command }, context) as Promise<string> };
  };

  it("reads and writes under the roots, in the workspace", async () => {
    const text = await run("pwd; cat inside.txt; echo written > new.txt").result;
    expect(text).toContain("Exit code: 0");
    expect(text).toContain(`--- stdout ---\n${root}\ninside the root\n`);
    expect(await readFile(path.join(root, "new.txt"), "utf8")).toBe("written\n");
  });

  // (The server's environment through /proc is attacked in test/integration/exec-isolation.test.ts:
  // /proc/<pid>/environ shows a process's environment as it was started, which a test here cannot set.)
  it.each([
    ["a file outside the roots by absolute path", () => `cat ${outsideFile}`],
    ["a file outside the roots through ..", () => "cat ../outside/secret.txt"],
    ["the database in DATA_DIR inside the root", () => "cat data/reins.db; ls -A data"],
    ["the database by its absolute path", () => `cat ${path.join(dataDir, "reins.db")}`],
  ])("cannot read %s", async (_label, command) => {
    const text = await run(command()).result;
    expect(text).not.toContain(SECRET);
  });

  it("shows DATA_DIR inside a root as an empty directory that cannot be written", async () => {
    const text = await run("ls -A data; echo x > data/planted; echo status=$?").result;
    expect(text).toMatch(/--- stdout ---\nstatus=[1-9]/);
    expect(await readdir(dataDir)).toEqual(["reins.db"]);
  });

  it("leaves nothing running when a command ends: setsid, double fork and nohup daemons included", async () => {
    const marker = `${RUN_MARKER}1`;
    // they are up before the command ends, so their absence below is their death, not a late start
    const text = await run(`${escapees(marker)}\necho started`).result;
    expect(text).toContain("started");
    expect(processesWith(marker)).toEqual([]);
  });

  it("returns only once the last process of the sandbox has died, not merely bwrap", async () => {
    // Many daemons with their output closed: the result does not wait for the pipes, and killing the
    // namespace takes the kernel a moment after bwrap has exited with the command's status.
    const marker = `${RUN_MARKER}3`;
    const text = await run(
      `i=0; while [ $i -lt 300 ]; do setsid -f sleep ${marker} </dev/null >/dev/null 2>&1; i=$((i+1)); done; echo started`,
    ).result;
    expect(text).toContain("started");
    expect(processesWith(marker)).toEqual([]);
  });

  it("on abort sends SIGTERM first, SIGKILLs after the grace, and nothing survives the call", async () => {
    const marker = `${RUN_MARKER}2`;
    const termLog = path.join(root, "term.log");
    const command = `trap 'echo got-term >> ${termLog}' TERM\n${escapees(marker)}\nwhile :; do sleep ${marker}4 & wait; done`;
    const { controller, result } = run(command);
    await vi.waitFor(async () => expect(processesWith(marker)).toHaveLength(4), {
      timeout: 10_000,
      interval: 50,
    });
    const reason = new Error("stopped by the test");
    controller.abort(reason);
    await expect(result).rejects.toBe(reason);
    // the trap ran (SIGTERM came first) and kept the shell alive, so SIGKILL ended it
    expect(await readFile(termLog, "utf8")).toContain("got-term");
    expect(processesWith(marker)).toEqual([]);
  });
});

describe("the start-up check", () => {
  const settings = { execKillGraceMs: 100, maxOutputBytes: 1_000 };

  it("refuses to build exec when no bwrap is on PATH, saying what to install or set", async () => {
    const emptyDirectory = await mkdtemp(path.join(base, "no-bwrap-"));
    const build = () => createExecTool({ ...settings, sandbox: { searchPath: emptyDirectory } });
    expect(build).toThrow(SandboxUnavailableError);
    expect(build).toThrow(`no "bwrap" executable was found on PATH (${emptyDirectory})`);
    expect(build).toThrow(/apt-get install bubblewrap.*EXEC_ISOLATION=none/);
  });

  it.each([
    [
      "namespaces are refused (Docker's seccomp)",
      "bwrap: Creating new namespace failed: Operation not permitted",
      /user namespaces.*--security-opt seccomp=unconfined.*EXEC_ISOLATION=none/,
    ],
    [
      "a fresh /proc is refused (a container's masked /proc)",
      "bwrap: Can't mount proc on /newroot/proc: Operation not permitted",
      /may not mount.*systempaths=unconfined.*EXEC_ISOLATION=none/,
    ],
    ["bwrap fails otherwise", "bwrap: something else", /start-up check .* failed.*EXEC_ISOLATION=none/],
  ])("refuses to build exec when %s, quoting bwrap and naming the fix", (_label, stderr, fix) => {
    const probe: SandboxProbe = () => ({ ok: false, exitCode: 1, stderr });
    const build = () =>
      systemTools({ ...settings, enabled: ["exec"], sandbox: { bwrapPath: "/usr/bin/bwrap", probe } });
    expect(build).toThrow(SandboxUnavailableError);
    expect(build).toThrow(stderr);
    expect(build).toThrow(fix);
  });

  it("probes once with `/bin/sh -c true` in the sandbox and the sandbox's environment only", () => {
    const probe = vi.fn<SandboxProbe>(() => ({ ok: true }));
    vi.stubEnv("REINS_PROBE_SECRET", SECRET);
    try {
      createExecTool({ ...settings, sandbox: { bwrapPath: "/usr/bin/bwrap", probe } });
    } finally {
      vi.unstubAllEnvs();
    }
    expect(probe).toHaveBeenCalledTimes(1);
    const [bwrapPath, probeArguments, environment] = probe.mock.calls[0] ?? [];
    expect(bwrapPath).toBe("/usr/bin/bwrap");
    expect(probeArguments?.slice(-4)).toEqual(["--", "/bin/sh", "-c", "true"]);
    expect(probeArguments).toContain("--unshare-all");
    expect(environment).toMatchObject({ PATH: expect.any(String), HOME: "/tmp" });
    expect(Object.keys(environment ?? {})).not.toContain("REINS_PROBE_SECRET");
  });

  it("does not probe when exec is off or EXEC_ISOLATION=none", () => {
    const probe = vi.fn<SandboxProbe>(() => ({ ok: false, exitCode: 1, stderr: "broken" }));
    const sandbox = { bwrapPath: "/nonexistent/bwrap", probe };
    expect(systemTools({ ...settings, enabled: ["read_file"], sandbox })).toHaveLength(1);
    expect(createExecTool({ ...settings, execIsolation: "none", sandbox }).name).toBe("exec");
    expect(probe).not.toHaveBeenCalled();
  });
});
