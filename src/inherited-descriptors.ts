/**
 * Descriptors the server process inherited open and without close-on-exec (a wrapper's `exec 200<file`,
 * a process manager's leftovers), closed at start-up (docs/semantics.md#isolation-and-limits). Every
 * child inherits such a descriptor — bwrap passes it into an `exec` sandbox, MCP stdio servers get it
 * too — and `/proc/self/fd/<n>` then opens the host file whatever the sandbox mounts.
 *
 * Why at start-up and not in each child: Node's `spawn` and bwrap offer no way to close a child's
 * other descriptors, and a shell cannot do it reliably (dash redirects only descriptors 0–9). Closed
 * once here, no child can get them, those spawned later by code not written yet included. Nothing the
 * server opens is affected: libuv opens every descriptor close-on-exec (files, pipes, sockets, its
 * epoll and eventfd), so the only ones without it are the inherited ones. Linux only: without
 * `/proc/self/fdinfo` nothing is closed.
 */
import { closeSync, readdirSync, readFileSync } from "node:fs";

const FDINFO_DIRECTORY = "/proc/self/fdinfo";
/** The close-on-exec bit in the octal `flags:` line of /proc/self/fdinfo/<n>. */
const O_CLOEXEC = 0o2000000;
/** stdin, stdout and stderr: given to every child on purpose (or replaced by the child's own pipes). */
const LAST_STANDARD_DESCRIPTOR = 2;

/**
 * Closes every descriptor above 2 that is open without close-on-exec, except Node's IPC channel to a
 * parent (`process.send`, as a process manager uses it); answers the numbers closed.
 */
export function closeInheritedDescriptors(): number[] {
  let entries: string[];
  try {
    entries = readdirSync(FDINFO_DIRECTORY);
  } catch {
    return []; // no /proc: not Linux, or not mounted
  }
  // Node itself marks this one close-on-exec (and drops NODE_CHANNEL_FD from the environment), but
  // closing it would cut the parent's channel: never touch it, whatever a Node version does.
  const channel = (process.channel as { fd?: number } | undefined)?.fd;
  const closed: number[] = [];
  for (const entry of entries) {
    const descriptor = Number(entry);
    if (!Number.isInteger(descriptor) || descriptor <= LAST_STANDARD_DESCRIPTOR || descriptor === channel)
      continue;
    const flags = flagsOf(descriptor);
    // unreadable: closed meanwhile (the directory listing's own descriptor is one), leave it
    if (flags === undefined || (flags & O_CLOEXEC) !== 0) continue;
    try {
      closeSync(descriptor);
      closed.push(descriptor);
    } catch {
      // closed meanwhile
    }
  }
  return closed;
}

/** The open flags of `descriptor` from its fdinfo, or undefined if it is not open (any more). */
function flagsOf(descriptor: number): number | undefined {
  try {
    const match = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`${FDINFO_DIRECTORY}/${descriptor}`, "utf8"));
    return match?.[1] === undefined ? undefined : Number.parseInt(match[1], 8);
  } catch {
    return undefined;
  }
}
