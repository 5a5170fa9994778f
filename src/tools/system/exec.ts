/**
 * `exec {command, cwd?}`: runs `/bin/sh -c command` in its own process group, in a directory inside
 * the allowed roots, and returns the exit status with capped stdout and stderr (DESIGN.md §5.2).
 *
 * Nothing of the group outlives the call: when the signal aborts (timeout, cancel, turn end) the
 * group gets SIGTERM, then SIGKILL after `execKillGraceMs` unless it is already gone, and the call
 * settles only once the leader has exited. A command that exits leaving background processes behind
 * has them stopped the same way before its result is returned.
 */
import { spawn } from "node:child_process";
import type { ProcessGroups } from "./process-groups.js";
import { once } from "node:events";
import { readdir, readFile, stat } from "node:fs/promises";
import { StringDecoder } from "node:string_decoder";
import { setTimeout as delay } from "node:timers/promises";
import { z } from "zod";
import { PermanentToolError, ToolError } from "../resilience/tool-error.js";
import type { ToolContext, ToolDefinition } from "../types.js";
import { confinePath, errorCodeOf, messageOf, resolveConfinement } from "./paths.js";

/** How often a stopping group is checked for survivors. */
const GROUP_POLL_MS = 20;
/** How long to wait for the group to vanish after SIGKILL (it cannot refuse; this bounds a stuck kernel). */
const AFTER_KILL_WAIT_MS = 2_000;
/** How long to wait for stdout/stderr to close once the group is gone (a `setsid` escapee may hold them). */
const STDIO_DRAIN_MS = 1_000;

/**
 * What the command inherits. Not the server's whole environment: it holds provider keys and tokens
 * that a command run on a model's behalf must not be able to print.
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

const input = z.strictObject({
  command: z.string().min(1),
  cwd: z.string().min(1).optional(),
});

export type ExecInput = z.infer<typeof input>;
export type ExecSettings = {
  execKillGraceMs: number;
  maxOutputBytes: number;
  /** Where live process groups are tracked, so shutdown can wait for and kill them. */
  processGroups?: ProcessGroups;
};

/** Builds `exec` with the given kill grace and output cap. */
export function createExecTool(settings: ExecSettings): ToolDefinition<ExecInput> {
  return {
    name: "exec",
    description:
      "Runs a shell command (/bin/sh -c) in the workspace or `cwd` (inside the allowed roots). Returns the exit code, stdout and stderr.",
    inputSchema: input,
    // "parallel", not "exclusive": each call is its own process group with its own pipes, confined and
    // killed on abort independently, so serialising would only let one slow command hold back every
    // other call of the batch. Commands that must run in order can say so with `_meta.dependsOn`.
    concurrency: "parallel",
    execute: async ({ command, cwd }, context) => {
      context.signal.throwIfAborted();
      const confinement = await resolveConfinement(context, "exec");
      const directory = cwd === undefined ? confinement.workspace : await confinePath(cwd, confinement);
      if (!(await stat(directory)).isDirectory()) {
        throw new PermanentToolError(`cwd "${cwd ?? directory}" is not a directory.`, {
          errorCode: "ENOTDIR",
        });
      }
      context.signal.throwIfAborted();
      return runCommand(command, directory, settings, context);
    },
  };
}

async function runCommand(
  command: string,
  cwd: string,
  settings: ExecSettings,
  context: ToolContext,
): Promise<string> {
  const stdout = new CappedOutput("stdout", settings.maxOutputBytes);
  const stderr = new CappedOutput("stderr", settings.maxOutputBytes);
  // detached: the shell becomes a session and process-group leader, so the whole tree can be signalled.
  const child = spawn("/bin/sh", ["-c", command], {
    cwd,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: inheritedEnvironment(),
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const onOutput = (output: CappedOutput) => (chunk: Buffer) => {
    output.push(chunk);
    context.heartbeat(`exec: ${stdout.totalBytes} bytes of stdout, ${stderr.totalBytes} bytes of stderr`);
  };
  child.stdout.on("data", onOutput(stdout));
  child.stderr.on("data", onOutput(stderr));

  const groupId = child.pid;
  if (groupId !== undefined) settings.processGroups?.add(groupId);
  let stopping: Promise<void> | undefined;
  const stopGroup = (): Promise<void> =>
    (stopping ??=
      groupId === undefined ? Promise.resolve() : stopProcessGroup(groupId, settings.execKillGraceMs));
  // Handled here so a failure to signal is not an unhandled rejection; it surfaces when awaited below.
  const onAbort = () => void stopGroup().catch(() => {});
  context.signal.addEventListener("abort", onAbort, { once: true });
  let drainTimer: NodeJS.Timeout | undefined;
  try {
    try {
      await once(child, "spawn");
    } catch (error) {
      throw new ToolError(`exec could not start /bin/sh: ${messageOf(error)}`, {
        errorCode: errorCodeOf(error),
        cause: error,
      });
    }
    const exit = await exited;
    // The leader is gone; whatever it left running in its group is stopped before the call settles.
    if (stopping === undefined && groupId !== undefined && (await groupHasLiveMembers(groupId))) {
      await stopGroup();
    }
    await stopping;
    await Promise.race([
      closed,
      new Promise<void>((resolve) => (drainTimer = setTimeout(resolve, STDIO_DRAIN_MS))),
    ]);
    // An aborted call ends the same way whether the abort came before the exit or after it.
    context.signal.throwIfAborted();
    const status = exit.code !== null ? `Exit code: ${exit.code}` : `Terminated by signal ${exit.signal}`;
    return `${status}\n--- stdout ---\n${stdout.text()}\n--- stderr ---\n${stderr.text()}`;
  } finally {
    clearTimeout(drainTimer);
    context.signal.removeEventListener("abort", onAbort);
    // the group is gone (exited, or stopped above); an abort that lands later is handled by onAbort's stop
    if (groupId !== undefined && stopping === undefined) settings.processGroups?.delete(groupId);
    else if (groupId !== undefined) void stopping?.finally(() => settings.processGroups?.delete(groupId));
    child.stdout.destroy();
    child.stderr.destroy();
  }
}

function inheritedEnvironment(): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (INHERITED_ENVIRONMENT.includes(name) || name.startsWith("LC_")) environment[name] = value;
  }
  return environment;
}

/** One output stream, kept up to `capBytes` and counted in full. */
class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private keptBytes = 0;
  totalBytes = 0;

  constructor(
    private readonly name: string,
    private readonly capBytes: number,
  ) {}

  push(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    const room = this.capBytes - this.keptBytes;
    if (room <= 0) return;
    const kept = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(kept);
    this.keptBytes += kept.length;
  }

  text(): string {
    if (this.totalBytes === 0) return "(empty)";
    // The decoder holds back a character cut in half at the cap instead of mangling it.
    const text = new StringDecoder("utf8").write(Buffer.concat(this.chunks));
    const omitted = this.totalBytes - this.keptBytes;
    if (omitted === 0) return text;
    return `${text}\n[truncated: ${omitted} more bytes of ${this.name} not shown (limit ${this.capBytes} bytes)]`;
  }
}

/**
 * SIGTERM to the group, SIGKILL after `graceMs` unless every member is gone by then; resolves when
 * the group is gone (or, after SIGKILL, after a bounded wait).
 */
async function stopProcessGroup(groupId: number, graceMs: number): Promise<void> {
  signalGroup(groupId, "SIGTERM");
  if (await waitUntilGroupGone(groupId, graceMs)) return;
  signalGroup(groupId, "SIGKILL");
  await waitUntilGroupGone(groupId, AFTER_KILL_WAIT_MS);
}

function signalGroup(groupId: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-groupId, signal);
  } catch (error) {
    if (errorCodeOf(error) !== "ESRCH") throw error;
  }
}

async function waitUntilGroupGone(groupId: number, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (!(await groupHasLiveMembers(groupId))) return true;
    const remaining = deadline - Date.now();
    if (remaining <= 0) return false;
    await delay(Math.min(GROUP_POLL_MS, remaining));
  }
}

/**
 * Whether any process of the group is still running. `kill(-pgid, 0)` also answers for zombies, and
 * orphans stay zombies forever under an init that does not reap (a bare container), so on Linux a
 * positive answer is checked against /proc, counting only members that are not zombies.
 */
async function groupHasLiveMembers(groupId: number): Promise<boolean> {
  try {
    process.kill(-groupId, 0);
  } catch (error) {
    const code = errorCodeOf(error);
    if (code === "ESRCH") return false;
    if (code !== "EPERM") throw error;
  }
  if (process.platform !== "linux") return true;
  const entries = await readdir("/proc").catch(() => undefined);
  if (entries === undefined) return true;
  const states = await Promise.all(
    entries.filter((entry) => /^\d+$/.test(entry)).map((pid) => processGroupState(pid)),
  );
  return states.some((state) => state !== undefined && state.groupId === groupId && state.state !== "Z");
}

/** State and process group of one process from `/proc/<pid>/stat` (`pid (comm) state ppid pgrp …`). */
async function processGroupState(pid: string): Promise<{ state: string; groupId: number } | undefined> {
  const line = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  if (line === undefined) return undefined;
  // comm may contain spaces and parentheses; the fields after its closing parenthesis do not.
  const fields = line.slice(line.lastIndexOf(")") + 2).split(" ");
  const [state, , groupId] = fields;
  return state === undefined || groupId === undefined ? undefined : { state, groupId: Number(groupId) };
}
