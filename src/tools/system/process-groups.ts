/**
 * Process groups of `exec`: the set of groups started and not yet seen gone, which shutdown waits
 * for (each call's own SIGTERM → SIGKILL sequence runs in this process) and then kills, so no process
 * of a call outlives the server; and the signalling and liveness checks those sequences use. With a
 * record (process-record.ts) the groups are written to DATA_DIR too, so that the start after a crash
 * kills what the crashed server's calls left running.
 *
 * Under bubblewrap the tracked group is the outer bwrap process: killing it kills the sandbox's init
 * (`--die-with-parent`), and with it every process of the sandbox's PID namespace — a crash of the
 * server too. With `EXEC_ISOLATION=none` a command's group outlives a crash: the record is what ends it.
 */
import { readdir, readFile } from "node:fs/promises";
import { setTimeout as delay } from "node:timers/promises";
import { errorCodeOf } from "./paths.js";
import type { ProcessRecord } from "./process-record.js";

/** How often a stopping group is checked for survivors. */
const GROUP_POLL_MS = 20;
/** How long to wait for the group to vanish after SIGKILL (it cannot refuse; this bounds a stuck kernel). */
export const AFTER_KILL_WAIT_MS = 2_000;

/** The crash record of `exec`'s process groups, in DATA_DIR. */
export const EXEC_PROCESS_RECORD_FILE = "exec-process-groups.json";

export class ProcessGroups {
  private readonly live = new Set<number>();
  private readonly waiters = new Set<() => void>();

  constructor(private readonly record?: ProcessRecord) {}

  /**
   * SIGKILLs the groups a crashed predecessor's calls left running (those its record proves to be
   * the same), then forgets them; returns their ids.
   */
  killLeftovers(): number[] {
    return (this.record?.killLeftovers() ?? []).map((group) => group.groupId);
  }

  add(groupId: number): void {
    this.live.add(groupId);
    this.record?.add(groupId, "exec");
  }

  delete(groupId: number): void {
    this.live.delete(groupId);
    this.record?.remove(groupId);
    if (this.live.size === 0) for (const wake of [...this.waiters]) wake();
  }

  get size(): number {
    return this.live.size;
  }

  /** Resolves true once every group is gone, false if `withinMs` passes first. */
  drain(withinMs: number): Promise<boolean> {
    if (this.live.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const finish = (drained: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve(drained);
      };
      const wake = () => finish(true);
      const timer = setTimeout(() => finish(false), withinMs);
      this.waiters.add(wake);
    });
  }

  /**
   * SIGKILLs every group still tracked and removes the record (nothing outlives a SIGKILL); returns
   * how many were signalled. For the server's end only.
   */
  killAll(): number {
    let signalled = 0;
    for (const groupId of this.live) {
      try {
        process.kill(-groupId, "SIGKILL");
        signalled++;
      } catch {
        // already gone
      }
    }
    this.record?.clear();
    return signalled;
  }
}

/**
 * SIGTERM to the group, SIGKILL after `graceMs` unless every member is gone by then; resolves when
 * the group is gone (or, after SIGKILL, after a bounded wait).
 */
export async function stopProcessGroup(groupId: number, graceMs: number): Promise<void> {
  signalGroup(groupId, "SIGTERM");
  if (await waitUntilGroupGone(groupId, graceMs)) return;
  signalGroup(groupId, "SIGKILL");
  await waitUntilGroupGone(groupId, AFTER_KILL_WAIT_MS);
}

/** Sends `signal` to every process of the group; a group that is already gone is not an error. */
export function signalGroup(groupId: number, signal: NodeJS.Signals): void {
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
export async function groupHasLiveMembers(groupId: number): Promise<boolean> {
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
