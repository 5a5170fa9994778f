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

/**
 * Pids of live `sleep <marker…>` processes anywhere on the machine (the shells that started them are
 * not counted). Read synchronously, so the answer is the state right after the caller's last step.
 */
export function processesWith(marker: string): number[] {
  return listProcesses()
    .filter((process) => process.state !== "Z" && commandLineOf(process.pid).startsWith(`sleep\0${marker}`))
    .map((process) => process.pid);
}

function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return ""; // ended while we looked
  }
}

/**
 * Shell text that starts `sleep <marker>N` three ways a daemon escapes its caller (`setsid -f`, a
 * double fork, `nohup setsid`) and waits until all three are up: each touches a file, then becomes
 * the sleep.
 */
export function escapees(marker: string): string {
  const up = (index: number) => `up-${marker}-${index}`;
  const becomes = (index: number) => `sh -c 'touch ${up(index)}; exec sleep ${marker}${index}'`;
  return [
    `setsid -f ${becomes(1)}`,
    `( ( ${becomes(2)} & ) & )`,
    `nohup setsid ${becomes(3)} >/dev/null 2>&1 &`,
    `until [ -e ${up(1)} ] && [ -e ${up(2)} ] && [ -e ${up(3)} ]; do sleep 0.05; done`,
  ].join("\n");
}
