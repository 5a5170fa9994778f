/**
 * `exec {command, cwd?}`: runs `/bin/sh -c command` in a directory inside the allowed roots and
 * returns the exit status with capped stdout and stderr (docs/semantics.md#cancellation,
 * docs/semantics.md#isolation-and-limits).
 *
 * By default (`execIsolation: "bwrap"`) each call runs in its own bubblewrap sandbox (sandbox.ts): it
 * sees the allowed roots but not the server's environment, memory, database or other files, and has
 * no network. With `"none"` it runs in its own process group with the server's view of the system.
 *
 * Nothing of a call outlives it: when the signal aborts (timeout, cancel, turn end) the command gets
 * SIGTERM, then SIGKILL after `execKillGraceMs` unless it is already gone, and the call settles only
 * once it has exited. Background processes a finished command leaves behind are stopped before its
 * result is returned (in the sandbox they die with it, `setsid` and double forks included).
 */
import { once } from "node:events";
import { realpath, stat } from "node:fs/promises";
import { StringDecoder } from "node:string_decoder";
import { z } from "zod";
import { PermanentToolError, ToolError } from "../resilience/tool-error.js";
import type { ToolContext, ToolDefinition } from "../types.js";
import { startInProcessGroup, startInSandbox, type CommandProcess } from "./command-process.js";
import { confinePath, errorCodeOf, messageOf, resolveConfinement } from "./paths.js";
import type { ProcessGroups } from "./process-groups.js";
import { prepareBwrapSandbox, type ExecIsolation, type SandboxOptions } from "./sandbox.js";

/** How long to wait for stdout/stderr to close once the group is gone (a `setsid` escapee may hold them). */
const STDIO_DRAIN_MS = 1_000;

const input = z.strictObject({
  command: z.string().min(1),
  cwd: z.string().min(1).optional(),
});

export type ExecInput = z.infer<typeof input>;
export type ExecSettings = {
  execKillGraceMs: number;
  maxOutputBytes: number;
  /**
   * `bwrap` (the default): every call in a bubblewrap sandbox; building the tool fails with a
   * SandboxUnavailableError when bwrap cannot run here. `none`: an own process group, no isolation.
   */
  execIsolation?: ExecIsolation;
  /** Paths a command must never see, masked even inside an allowed root: the server's DATA_DIR. */
  privatePaths?: readonly string[];
  /** Where bwrap is and how its start-up probe runs (tests and embedders inject these). */
  sandbox?: SandboxOptions;
  /** Where live process groups are tracked, so shutdown can wait for and kill them. */
  processGroups?: ProcessGroups;
};

/**
 * Builds `exec` with the given kill grace, output cap and isolation. With bwrap isolation this
 * probes bwrap once, synchronously, and throws SandboxUnavailableError if it cannot run.
 */
export function createExecTool(settings: ExecSettings): ToolDefinition<ExecInput> {
  const sandbox = settings.execIsolation === "none" ? undefined : prepareBwrapSandbox(settings.sandbox);
  return {
    name: "exec",
    description:
      "Runs a shell command (/bin/sh -c) in the workspace or `cwd` (inside the allowed roots). Returns the exit code, stdout and stderr." +
      (sandbox === undefined
        ? ""
        : " It runs in a sandbox: only the allowed roots, /usr and /tmp (empty, discarded after the call) are there, and there is no network."),
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
      const privatePaths = sandbox === undefined ? [] : await existingRealPaths(settings.privatePaths ?? []);
      context.signal.throwIfAborted();
      const started =
        sandbox === undefined
          ? startInProcessGroup(command, directory)
          : startInSandbox(sandbox, {
              roots: confinement.roots,
              workingDirectory: directory,
              privatePaths,
              command,
            });
      return runCommand(started, settings, context);
    },
  };
}

/** The real paths of those of `paths` that exist (one that does not exist has nothing to hide). */
async function existingRealPaths(paths: readonly string[]): Promise<string[]> {
  const real = await Promise.all(paths.map((entry) => realpath(entry).catch(() => undefined)));
  return real.filter((entry): entry is string => entry !== undefined);
}

async function runCommand(
  started: CommandProcess,
  settings: ExecSettings,
  context: ToolContext,
): Promise<string> {
  const stdout = new CappedOutput("stdout", settings.maxOutputBytes);
  const stderr = new CappedOutput("stderr", settings.maxOutputBytes);
  const { child, groupId } = started;
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const onOutput = (output: CappedOutput) => (chunk: Buffer) => {
    output.push(chunk);
    context.heartbeat(`exec: ${stdout.totalBytes} bytes of stdout, ${stderr.totalBytes} bytes of stderr`);
  };
  started.stdout.on("data", onOutput(stdout));
  started.stderr.on("data", onOutput(stderr));

  if (groupId !== undefined) settings.processGroups?.add(groupId);
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= started.stop(settings.execKillGraceMs));
  // Handled here so a failure to signal is not an unhandled rejection; it surfaces when awaited below.
  const onAbort = () => void stop().catch(() => {});
  context.signal.addEventListener("abort", onAbort, { once: true });
  let drainTimer: NodeJS.Timeout | undefined;
  try {
    try {
      await once(child, "spawn");
    } catch (error) {
      throw new ToolError(`exec could not start ${child.spawnfile}: ${messageOf(error)}`, {
        errorCode: errorCodeOf(error),
        cause: error,
      });
    }
    const exit = await started.exited;
    // The leader is gone; whatever it left running is stopped before the call settles.
    if (stopping === undefined && (await started.hasSurvivors())) await stop();
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
    started.stdout.destroy();
    started.stderr.destroy();
    started.release();
  }
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
