/**
 * Crash bookkeeping of process groups the server starts: stdio MCP servers' and `exec`'s, one file
 * each in DATA_DIR. Each started group is written to the file (with the leader's start time and the
 * machine's boot id) and struck off when it has been stopped; a clean exit removes the file. A reins
 * killed with SIGKILL leaves the file behind, and the next start kills the groups it lists — only
 * those proven to be the ones recorded: same boot, and either the leader still alive with the
 * recorded start time, or, the leader gone, a member that was already running when the file was last
 * written (and none older than the leader). A group that died whole may have its id taken by an
 * unrelated process's group, but all of that group's processes start after the file was last written.
 * While groups are recorded the file is written again every `REFRESH_MS`, so that a member started
 * more than that before a crash proves its group (an MCP server's child, whose leader exits when the
 * server's stdin closes).
 *
 * The file is a convenience for the next start: one that cannot be written or removed (a full or
 * read-only disk) never fails what started or stopped the group.
 *
 * Linux only (it reads /proc); elsewhere nothing is recorded and nothing is killed.
 */
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** `server`: who started the group (an MCP server's name, or `exec`). */
type RecordedGroup = { groupId: number; startTime: number; server: string };
/** `writtenAt`: when it was written, in clock ticks since boot (as a process's start time). */
type RecordFile = { bootId: string; writtenAt?: number; groups: RecordedGroup[] };

/** Clock ticks a second in /proc (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** How often the file is written again while it lists groups. */
export const REFRESH_MS = 5_000;

/** Fields of `/proc/<pid>/stat` after `comm`: state is [0], pgrp [2], starttime [19]. */
type ProcessStat = { state: string; groupId: number; startTime: number };

export class ProcessRecord {
  private readonly path: string;
  private readonly groups = new Map<number, RecordedGroup>();
  private readonly bootId = readBootId();
  private refresh: NodeJS.Timeout | undefined;

  /** `fileName`: the record's file in `dataDir`. */
  constructor(dataDir: string, fileName: string) {
    this.path = join(dataDir, fileName);
  }

  /** Records the group led by `pid` (spawned detached, so its group id is its pid). */
  add(pid: number, server: string): void {
    if (this.bootId === undefined) return;
    const stat = readStat(pid);
    if (!stat) return;
    this.groups.set(pid, { groupId: pid, startTime: stat.startTime, server });
    this.write();
  }

  remove(groupId: number): void {
    if (this.groups.delete(groupId)) this.write();
  }

  /** Removes the file once nothing is left to record (a clean shutdown). */
  clear(): void {
    this.groups.clear();
    this.stopRefreshing();
    removeFile(this.path);
  }

  /**
   * SIGKILLs the recorded groups a previous process left running, then forgets them. Returns the
   * groups killed.
   */
  killLeftovers(): RecordedGroup[] {
    if (!existsSync(this.path)) return [];
    let recorded: RecordFile | undefined;
    try {
      recorded = JSON.parse(readFileSync(this.path, "utf8")) as RecordFile;
    } catch {
      recorded = undefined;
    }
    const killed: RecordedGroup[] = [];
    if (recorded && recorded.bootId === this.bootId && Array.isArray(recorded.groups)) {
      for (const group of recorded.groups) {
        if (!isOurs(group, recorded.writtenAt)) continue;
        try {
          process.kill(-group.groupId, "SIGKILL");
          killed.push(group);
        } catch {
          // gone meanwhile
        }
      }
    }
    removeFile(this.path);
    if (this.groups.size > 0) this.write();
    return killed;
  }

  private stopRefreshing(): void {
    clearInterval(this.refresh);
    this.refresh = undefined;
  }

  private write(): void {
    if (this.groups.size === 0) {
      this.stopRefreshing();
      removeFile(this.path);
      return;
    }
    // (it never holds the process open)
    this.refresh ??= setInterval(() => this.write(), REFRESH_MS).unref();
    const content: RecordFile = {
      bootId: this.bootId ?? "",
      writtenAt: ticksSinceBoot(),
      groups: [...this.groups.values()],
    };
    // written aside and renamed: a crash mid-write leaves the old list, never half of one
    const temporary = `${this.path}.${process.pid}.tmp`;
    try {
      writeFileSync(temporary, JSON.stringify(content));
      renameSync(temporary, this.path);
    } catch {
      // costs only the clean-up after a crash: this process still stops every group it started
      removeFile(temporary);
    }
  }
}

/**
 * Whether the group still running under the recorded id is the one recorded (`writtenAt`: when the
 * record was last written; a record without it proves no leaderless group).
 */
function isOurs(group: RecordedGroup, writtenAt: number | undefined): boolean {
  if (!Number.isInteger(group.groupId) || group.groupId <= 1) return false;
  const leader = readStat(group.groupId);
  if (leader && leader.state !== "Z") {
    return leader.groupId === group.groupId && leader.startTime === group.startTime;
  }
  if (typeof writtenAt !== "number") return false;
  const members = groupMembers(group.groupId);
  return (
    members.some((member) => member.startTime <= writtenAt) &&
    members.every((member) => member.startTime >= group.startTime)
  );
}

/** Deletes `path` if it is there; a file that cannot be removed (a directory in its place) stays. */
function removeFile(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // see the header: the record never fails its owner
  }
}

/** Now, in clock ticks since boot (/proc/uptime), as /proc/<pid>/stat gives start times. */
function ticksSinceBoot(): number | undefined {
  try {
    const seconds = Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]);
    return Number.isFinite(seconds) ? Math.floor(seconds * TICKS_PER_SECOND) : undefined;
  } catch {
    return undefined;
  }
}

function groupMembers(groupId: number): ProcessStat[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const members: ProcessStat[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (stat && stat.groupId === groupId && stat.state !== "Z") members.push(stat);
  }
  return members;
}

function readStat(pid: number): ProcessStat | undefined {
  let line: string;
  try {
    line = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // comm may hold spaces and parentheses; the fields after its last ")" do not
  const fields = line.slice(line.lastIndexOf(")") + 2).split(" ");
  const [state, , groupId] = fields;
  const startTime = fields[19];
  if (state === undefined || groupId === undefined || startTime === undefined) return undefined;
  return { state, groupId: Number(groupId), startTime: Number(startTime) };
}

function readBootId(): string | undefined {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return undefined;
  }
}
