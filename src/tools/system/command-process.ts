/**
 * Starting one `exec` command and stopping everything it started, in one of two ways chosen at
 * start-up (`tools.system.execIsolation`):
 *
 * - `bwrap`: `bwrap … /bin/sh -c command` (see sandbox.ts). bwrap's `--new-session` makes the sandbox's
 *   init the leader of the command's process group, so stopping sends SIGTERM to that group, then,
 *   after the grace, SIGKILL to the init: when a PID namespace's init dies the kernel kills every
 *   process in it, `setsid` and double-forked daemons included. When the command exits, bwrap exits
 *   with its status and the init dies with bwrap (`--die-with-parent`), taking what the command left
 *   behind; the sandbox counts as gone once bwrap has exited and its init is no more.
 * - `none`: `/bin/sh -c command` as a session and group leader; stopping signals the group. A process
 *   that leaves the group (`setsid`) is out of reach.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFile, readlink } from "node:fs/promises";
import { setTimeout as delay } from "node:timers/promises";
import type { Readable } from "node:stream";
import { AFTER_KILL_WAIT_MS, groupHasLiveMembers, signalGroup, stopProcessGroup } from "./process-groups.js";
import type { BwrapSandbox, SandboxCall } from "./sandbox.js";

/** The descriptor of the child on which bwrap reports its init's pid (`--info-fd`). */
const INFO_DESCRIPTOR = 3;
/** How often a stopping sandbox is checked for its init. */
const SANDBOX_POLL_MS = 20;

/**
 * What a command inherits without a sandbox. Not the server's whole environment: it holds provider
 * keys and tokens that a command run on a model's behalf must not be able to print.
 */
const INHERITED_ENVIRONMENT = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "TERM",
  "TZ",
  "TMPDIR",
];

export type CommandExit = { code: number | null; signal: NodeJS.Signals | null };

/** One started command. */
export type CommandProcess = {
  readonly child: ChildProcess;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** The group shutdown tracks: SIGKILL to it ends every process of the call. */
  readonly groupId: number | undefined;
  /** Settles when the process this server started has exited. */
  readonly exited: Promise<CommandExit>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once nothing of the call runs (bounded after SIGKILL). */
  stop(graceMs: number): Promise<void>;
  /** Once `exited` has settled: whether processes the command started still run. */
  hasSurvivors(): Promise<boolean>;
  /** Closes what the call opened besides stdout and stderr. */
  release(): void;
};

/** Starts `/bin/sh -c command` in `cwd` as the leader of its own session and process group. */
export function startInProcessGroup(command: string, cwd: string): CommandProcess {
  const child = spawn("/bin/sh", ["-c", command], {
    cwd,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: inheritedEnvironment(),
  });
  const groupId = child.pid;
  return {
    child,
    stdout: child.stdout,
    stderr: child.stderr,
    groupId,
    exited: exitOf(child),
    stop: (graceMs) => (groupId === undefined ? Promise.resolve() : stopProcessGroup(groupId, graceMs)),
    hasSurvivors: async () => groupId !== undefined && (await groupHasLiveMembers(groupId)),
    release: () => {},
  };
}

/** Starts the command in a bubblewrap sandbox built for `call`. */
export function startInSandbox(sandbox: BwrapSandbox, call: SandboxCall): CommandProcess {
  const child = spawn(sandbox.bwrapPath, sandbox.argumentsFor({ ...call, infoDescriptor: INFO_DESCRIPTOR }), {
    // bwrap changes into the working directory inside the sandbox; outside it needs none of the server's
    cwd: "/",
    detached: true,
    stdio: ["ignore", "pipe", "pipe", "pipe"],
    // bwrap's own environment is what the sandbox's init shows in /proc/1/environ: never the server's
    env: sandbox.environment,
  });
  // all three are pipes, as asked for in `stdio` above
  const [, stdout, stderr, infoPipe] = child.stdio as unknown as [null, Readable, Readable, Readable];
  const exited = exitOf(child);
  let bwrapExited = false;
  void exited.then(() => (bwrapExited = true));
  const info = readSandboxInfo(infoPipe);
  const outerGroupId = child.pid;
  // bwrap exits as soon as the command has, while its init may still be killing the rest
  const gone = async () => bwrapExited && !(await initAlive(await info));

  const stop = async (graceMs: number): Promise<void> => {
    const sandboxInfo = await info;
    if (await gone()) return;
    if (sandboxInfo !== undefined && (await initAlive(sandboxInfo))) {
      signalGroup(sandboxInfo.initPid, "SIGTERM");
      if (await pollUntil(gone, graceMs)) return;
      if (await initAlive(sandboxInfo)) signalGroup(sandboxInfo.initPid, "SIGKILL");
    }
    // bwrap itself: its death takes the init with it (--die-with-parent), should the init be unknown
    if (!bwrapExited && outerGroupId !== undefined) signalGroup(outerGroupId, "SIGKILL");
    await pollUntil(gone, AFTER_KILL_WAIT_MS);
  };
  return {
    child,
    stdout,
    stderr,
    groupId: outerGroupId,
    exited,
    stop,
    hasSurvivors: async () => !(await gone()),
    release: () => infoPipe.destroy(),
  };
}

function exitOf(child: ChildProcess): Promise<CommandExit> {
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
}

/** The sandbox's init (host pid) and its PID namespace as /proc names it (`pid:[4026532181]`). */
type SandboxInfo = { initPid: number; pidNamespace: string };

/**
 * What bwrap reports on `--info-fd` (`{"child-pid": 1234, "pid-namespace": 4026532181, …}`), or
 * undefined if it closed the pipe without it. The pipe is read to its end either way: a reader that
 * left early would make bwrap's remaining writes fail.
 */
function readSandboxInfo(pipe: Readable): Promise<SandboxInfo | undefined> {
  return new Promise((resolve) => {
    let text = "";
    const parse = (): SandboxInfo | undefined => {
      try {
        const report = JSON.parse(text) as Record<string, unknown>;
        const initPid = report["child-pid"];
        const namespace = report["pid-namespace"];
        if (typeof initPid !== "number" || typeof namespace !== "number") return undefined;
        return { initPid, pidNamespace: `pid:[${namespace}]` };
      } catch {
        return undefined; // not complete yet
      }
    };
    pipe.setEncoding("utf8");
    pipe.on("data", (chunk: string) => {
      text += chunk;
      const parsed = parse();
      if (parsed !== undefined) resolve(parsed);
    });
    pipe.once("close", () => resolve(parse()));
    pipe.once("error", () => resolve(undefined));
  });
}

/**
 * Whether the sandbox's init still runs. The pid is trusted only while it is in the sandbox's PID
 * namespace (it cannot have been reused by another process), and a zombie counts as gone: the
 * kernel lets a PID namespace's init finish exiting only after every other process in it has died.
 */
async function initAlive(info: SandboxInfo | undefined): Promise<boolean> {
  if (info === undefined) return false;
  const namespace = await readlink(`/proc/${info.initPid}/ns/pid`).catch(() => undefined);
  if (namespace !== info.pidNamespace) return false;
  const stat = await readFile(`/proc/${info.initPid}/stat`, "utf8").catch(() => undefined);
  return stat !== undefined && stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
}

/** Polls `check` until it holds (true) or `withinMs` has passed (false). */
async function pollUntil(check: () => Promise<boolean>, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (await check()) return true;
    const remaining = deadline - Date.now();
    if (remaining <= 0) return false;
    await delay(Math.min(SANDBOX_POLL_MS, remaining));
  }
}

function inheritedEnvironment(): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (INHERITED_ENVIRONMENT.includes(name) || name.startsWith("LC_")) environment[name] = value;
  }
  return environment;
}
