/**
 * Process inspection for tests on Linux: children of a process and members of a process group, read
 * from /proc. Zombie entries (state Z) are dead processes waiting to be reaped and are left out.
 */
import { readdirSync, readFileSync } from "node:fs";

export type ProcessInfo = { pid: number; ppid: number; pgid: number; state: string; command: string };

export function listProcesses(): ProcessInfo[] {
  const processes: ProcessInfo[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // the command is in parentheses and may contain spaces; the fields after it are fixed
      const close = stat.lastIndexOf(")");
      const command = stat.slice(stat.indexOf("(") + 1, close);
      const [state = "", ppid = "0", pgid = "0"] = stat.slice(close + 2).split(" ");
      processes.push({ pid: Number(entry), ppid: Number(ppid), pgid: Number(pgid), state, command });
    } catch {
      // the process ended while we looked
    }
  }
  return processes;
}

/** Live (non-zombie) processes of a process group. */
export function liveMembersOfGroup(pgid: number): ProcessInfo[] {
  return listProcesses().filter((process) => process.pgid === pgid && process.state !== "Z");
}

/** Live descendants of `pid`. */
export function liveDescendants(pid: number): ProcessInfo[] {
  const all = listProcesses().filter((process) => process.state !== "Z");
  const found: ProcessInfo[] = [];
  let frontier = [pid];
  while (frontier.length > 0) {
    const children = all.filter((process) => frontier.includes(process.ppid));
    found.push(...children);
    frontier = children.map((process) => process.pid);
  }
  return found;
}
