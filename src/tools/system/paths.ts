/**
 * Confinement of the system tools to the configured allowed roots (docs/semantics.md#the-scripted-model).
 * Paths are compared after `realpath`, so `../` and symlinks are judged by where they really lead, and a path
 * that does not exist is judged by its nearest existing ancestor, so a refused location is never probed for
 * existence. A file that has been opened is judged again by what its descriptor really is, since the path may
 * have been swapped between the check and the open (docs/semantics.md#isolation-and-limits).
 */
import { fstat, realpathSync } from "node:fs";
import { readlink, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import type { ToolContext } from "../types.js";
import { PermanentToolError, ToolError } from "../resilience/tool-error.js";

/** Where one call may go: the real paths of the allowed roots, and the real working directory. */
export type Confinement = {
  readonly toolName: string;
  /** The roots as configured, for messages. */
  readonly configuredRoots: readonly string[];
  /** The real paths of the roots that exist. */
  readonly roots: readonly string[];
  /** The real path of the workspace (the configured one, else the first allowed root). */
  readonly workspace: string;
};

/**
 * Resolves the call's confinement from `context.allowedRoots` and `context.workspace`. Refuses with
 * a PermanentToolError when no root is configured or none exists, or when the workspace lies outside
 * the roots.
 */
export async function resolveConfinement(context: ToolContext, toolName: string): Promise<Confinement> {
  const configuredRoots = context.allowedRoots;
  const firstRoot = configuredRoots[0];
  if (firstRoot === undefined) {
    throw new PermanentToolError(
      `Tool "${toolName}" is unavailable: ALLOWED_ROOTS is not configured (tools.system.allowedRoots), so it may not touch the filesystem.`,
    );
  }
  const resolved = await Promise.all(
    configuredRoots.map((root) => realpath(path.resolve(root)).catch(() => undefined)),
  );
  const roots = resolved.filter((root): root is string => root !== undefined);
  if (roots.length === 0) {
    throw new PermanentToolError(
      `Tool "${toolName}" is unavailable: none of the allowed roots exists (${configuredRoots.join(", ")}).`,
    );
  }
  const partial = { toolName, configuredRoots, roots, workspace: roots[0] as string };
  const configuredWorkspace = context.workspace ?? firstRoot;
  try {
    const workspace = await confinePath(configuredWorkspace, partial, process.cwd());
    return { ...partial, workspace };
  } catch (error) {
    throw new PermanentToolError(
      `Tool "${toolName}" is unavailable: its workspace "${configuredWorkspace}" is not usable. ${messageOf(error)}`,
      { errorCode: error instanceof ToolError ? error.errorCode : errorCodeOf(error), cause: error },
    );
  }
}

/**
 * Resolves `requested` (relative paths against `base`, by default the workspace) to its real path
 * and returns it if it lies inside an allowed root. Outside → PermanentToolError naming the path;
 * missing → PermanentToolError with `errorCode` ENOENT (or ENOTDIR).
 */
export async function confinePath(
  requested: string,
  confinement: Confinement,
  base: string = confinement.workspace,
): Promise<string> {
  const absolute = path.resolve(base, requested);
  let real: string;
  try {
    real = await realpath(absolute);
  } catch (error) {
    const code = errorCodeOf(error);
    if (code === "ELOOP" || code === "ENAMETOOLONG") {
      throw new PermanentToolError(`Cannot resolve path "${requested}": ${messageOf(error)}`, {
        errorCode: code,
        cause: error,
      });
    }
    if (code !== "ENOENT" && code !== "ENOTDIR") {
      throw new ToolError(`Cannot resolve path "${requested}": ${messageOf(error)}`, {
        errorCode: code,
        cause: error,
      });
    }
    // Judge a missing path by the ancestor that exists, so "does it exist?" is never answered
    // for a place outside the roots (a `../` escape or a symlinked directory pointing out).
    const ancestor = await nearestExistingRealpath(path.dirname(absolute));
    if (!isInsideAny(ancestor, confinement.roots)) throw outsideRoots(requested, confinement);
    throw new PermanentToolError(`No such file or directory: "${requested}".`, {
      errorCode: code,
      cause: error,
    });
  }
  if (!isInsideAny(real, confinement.roots)) throw outsideRoots(requested, confinement);
  return real;
}

/**
 * Confirms that the open file `descriptor` (opened at the real path `openedPath` for `requested`)
 * is a file inside an allowed root, judged by what the descriptor is, not by what the path leads to
 * now: a directory on the path may have been swapped for a symlink after `confinePath` looked.
 * Returns the file's real path; outside or unconfirmable → PermanentToolError naming the path.
 */
export async function confineOpenedFile(
  descriptor: number,
  openedPath: string,
  requested: string,
  confinement: Confinement,
): Promise<string> {
  const described = await describeDescriptor(descriptor);
  if (described === undefined) {
    return confineDescriptorByIdentity(descriptor, openedPath, requested, confinement);
  }
  // Anything not an absolute path ("pipe:[…]", "anon_inode:…") is not a file under a root.
  if (!path.isAbsolute(described) || !isInsideAny(described, confinement.roots)) {
    throw outsideRoots(requested, confinement);
  }
  return described;
}

/**
 * The portable check, for systems without /proc/self/fd: the descriptor must be the very file
 * (same device and inode) that `openedPath` leads to, by a real path inside a root, both before and
 * after that file is looked up. An attacker who swaps the path back after the open fails, since the
 * inside path then names a different file. This narrows the race but cannot close it, because every
 * lookup by path follows a symlink swapped into a directory on the way (only the /proc view sees
 * the descriptor itself). Anything that cannot be confirmed is refused.
 */
export async function confineDescriptorByIdentity(
  descriptor: number,
  openedPath: string,
  requested: string,
  confinement: Confinement,
): Promise<string> {
  const unconfirmed = () =>
    new PermanentToolError(
      `Tool "${confinement.toolName}" refused path "${requested}": it changed while being opened, so it could not be confirmed inside the allowed roots (${confinement.configuredRoots.join(", ")}).`,
      { errorCode: "EACCES" },
    );
  const real = await realpath(openedPath).catch(() => undefined);
  if (real === undefined) throw unconfirmed();
  if (!isInsideAny(real, confinement.roots)) throw outsideRoots(requested, confinement);
  const pathStats = await stat(real, { bigint: true }).catch(() => undefined);
  const descriptorStats = await fstatAsync(descriptor, { bigint: true });
  // The path must still lead to the same real place after the stat, so the stat judged that place.
  const realAfter = await realpath(openedPath).catch(() => undefined);
  if (
    pathStats === undefined ||
    pathStats.dev !== descriptorStats.dev ||
    pathStats.ino !== descriptorStats.ino ||
    realAfter !== real
  ) {
    throw unconfirmed();
  }
  return real;
}

const fstatAsync = promisify(fstat);

/**
 * What the kernel says file descriptor `descriptor` is (Linux: the link /proc/self/fd/<fd>, e.g.
 * "/root/a.txt", or "/root/a.txt (deleted)" once unlinked, which still lies where it was opened);
 * undefined where the system offers no such view.
 */
async function describeDescriptor(descriptor: number): Promise<string | undefined> {
  if (process.platform !== "linux") return undefined;
  return readlink(`/proc/self/fd/${descriptor}`).catch(() => undefined);
}

/**
 * The allowed roots as the server uses them, fixed at start-up: each one's real path (as configured
 * when it does not exist yet), without duplicates and without roots that lie inside another root
 * (they add nothing, and a nested root's path could be rewritten from inside the outer one by a
 * command, so that its next call would be given some other directory). Returns the roots kept and the
 * ones dropped.
 */
export function normalizeAllowedRoots(configured: readonly string[]): { roots: string[]; dropped: string[] } {
  const real = configured.map(realPathOrAsIs);
  const roots: string[] = [];
  const dropped: string[] = [];
  real.forEach((root, index) => {
    const outer = real.some((other, otherIndex) =>
      other === root ? otherIndex < index : isInside(root, other),
    );
    if (outer) dropped.push(configured[index] as string);
    else roots.push(root);
  });
  return { roots, dropped };
}

/** The real path of `directory`, or its absolute path while it does not exist. */
export function realPathOrAsIs(directory: string): string {
  const absolute = path.resolve(directory);
  try {
    return realpathSync(absolute);
  } catch {
    return absolute;
  }
}

/** True when `candidate` is `root` or lies below it (both absolute, normalised). */
export function isInside(candidate: string, root: string): boolean {
  const relative = path.relative(root, candidate);
  return (
    relative === "" ||
    (relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
  );
}

function isInsideAny(candidate: string, roots: readonly string[]): boolean {
  return roots.some((root) => isInside(candidate, root));
}

async function nearestExistingRealpath(start: string): Promise<string> {
  let current = start;
  for (;;) {
    try {
      return await realpath(current);
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return current;
      current = parent;
    }
  }
}

function outsideRoots(requested: string, confinement: Confinement): PermanentToolError {
  return new PermanentToolError(
    `Tool "${confinement.toolName}" refused path "${requested}": it resolves outside the allowed roots (${confinement.configuredRoots.join(", ")}).`,
    { errorCode: "EACCES" },
  );
}

/** The `code` of a system error (`ENOENT`, …), if it has one. */
export function errorCodeOf(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
