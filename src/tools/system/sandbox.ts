/**
 * The bubblewrap sandbox of `exec` (docs/semantics.md#isolation-and-limits): where `bwrap` is, whether it can
 * run on this machine (a start-up probe), and the arguments and environment that build one call's sandbox.
 *
 * A call sees: `/usr` (and the `/bin`, `/lib`… links into it) and a few `/etc` files read-only, its own
 * `/proc`, a minimal `/dev`, an empty `/tmp`, and the allowed roots read-write — nothing else of the
 * host. The server's private paths (DATA_DIR) are masked with an empty read-only directory even when
 * they lie inside a root. It runs as uid/gid 65534 without capabilities, in fresh user, PID, network,
 * IPC, UTS and cgroup namespaces: no other process is visible, there is no network, and every process
 * the command starts dies with the sandbox's init.
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants, lstatSync, readlinkSync, statSync } from "node:fs";
import path from "node:path";
import { ConfigError } from "../../errors.js";
import { isInside } from "./paths.js";

export type ExecIsolation = "bwrap" | "none";

/** How long the start-up probe may take before bwrap counts as unusable. */
const PROBE_TIMEOUT_MS = 10_000;
/** The unprivileged identity a command runs as inside the sandbox ("nobody" on most systems). */
const SANDBOX_USER_ID = "65534";
/** The command's PATH inside the sandbox; the server's own PATH may name directories that are not there. */
const SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/** Top-level directories that merged-/usr systems make links into /usr, and older ones keep as directories. */
const USR_COMPANIONS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/**
 * The /etc pieces common tools need, read-only, and nothing else of /etc: user and group names
 * (`id`, `ls -l`), the dynamic linker's cache, the Debian alternatives (`awk`, `editor`) and the local
 * time zone. All are world-readable on the host; secrets such as /etc/shadow stay out.
 */
const ETC_FILES = [
  "/etc/passwd",
  "/etc/group",
  "/etc/nsswitch.conf",
  "/etc/ld.so.cache",
  "/etc/alternatives",
  "/etc/localtime",
];
/** What of the server's environment a command sees (locale and terminal only; never keys or tokens). */
const PASSED_ENVIRONMENT = ["LANG", "LANGUAGE", "TERM", "TZ"];

/** bwrap cannot be used here; start-up stops with this message (unless EXEC_ISOLATION=none). */
export class SandboxUnavailableError extends ConfigError {}

/** What running `bwrap … /bin/sh -c true` once produced. */
export type SandboxProbeResult =
  { ok: true } | { ok: false; exitCode: number | null; stderr: string; errorCode?: string };

/** Runs bwrap with `probeArguments` once; injected by tests to stand for a machine without namespaces. */
export type SandboxProbe = (
  bwrapPath: string,
  probeArguments: readonly string[],
  environment: NodeJS.ProcessEnv,
) => SandboxProbeResult;

export type SandboxOptions = {
  /** The bwrap executable; by default the first `bwrap` on the server's PATH. */
  bwrapPath?: string;
  /** Where to look for `bwrap` when no path is given; the server's PATH by default. */
  searchPath?: string;
  /** The start-up check; by default bwrap really runs `/bin/sh -c true` in a sandbox. */
  probe?: SandboxProbe;
};

/** One call's sandbox: confined to `roots`, starting in `workingDirectory`, with `privatePaths` masked. */
export type SandboxCall = {
  readonly roots: readonly string[];
  readonly workingDirectory: string;
  readonly privatePaths: readonly string[];
  readonly command: string;
  /** The descriptor bwrap writes `{"child-pid": …}` to: the host pid of the sandbox's init. */
  readonly infoDescriptor?: number;
};

/** A bwrap that passed the start-up probe, and how this host's system directories are laid out. */
export type BwrapSandbox = {
  readonly bwrapPath: string;
  /** The command's whole environment (bwrap is started with it, so its own /proc entry shows no more). */
  readonly environment: NodeJS.ProcessEnv;
  /** The bwrap arguments for one call. */
  argumentsFor(call: SandboxCall): string[];
};

/** One bwrap mount operation, placed by the depth of its target. */
type Mount = { target: string; order: number; arguments: string[] };
/** Tie-break at equal depth: the system first, then the roots over it, then the masks over the roots. */
const SYSTEM_MOUNT = 0;
const ROOT_MOUNT = 1;
const PRIVATE_MOUNT = 2;

/**
 * Finds bwrap and runs the probe once. Throws SandboxUnavailableError naming what is missing (no
 * binary, or namespaces refused) and how to fix it.
 */
export function prepareBwrapSandbox(options: SandboxOptions = {}): BwrapSandbox {
  const searchPath = options.searchPath ?? process.env.PATH ?? "";
  const bwrapPath = options.bwrapPath ?? findExecutable("bwrap", searchPath);
  if (bwrapPath === undefined) {
    throw new SandboxUnavailableError(
      `${PREAMBLE}, but no "bwrap" executable was found on PATH (${searchPath || "empty"}). ` +
        `Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), ${OPT_OUT}`,
    );
  }
  const sandbox = createBwrapSandbox(bwrapPath);
  const probeArguments = sandbox.argumentsFor({
    roots: [],
    workingDirectory: "/",
    privatePaths: [],
    command: "true",
  });
  const result = (options.probe ?? runProbe)(bwrapPath, probeArguments, sandbox.environment);
  if (!result.ok) throw new SandboxUnavailableError(probeFailureMessage(bwrapPath, result));
  return sandbox;
}

/** A sandbox for `bwrapPath` on this host, without probing it. */
function createBwrapSandbox(bwrapPath: string): BwrapSandbox {
  const systemMounts = hostSystemMounts();
  const environment = sandboxEnvironment(process.env);
  return {
    bwrapPath,
    environment,
    argumentsFor: (call) => bwrapArguments(call, systemMounts),
  };
}

/** The full bwrap command line (after the executable) for one call. */
function bwrapArguments(call: SandboxCall, systemMounts: readonly Mount[]): string[] {
  const rootMounts = call.roots.map((root) => ({
    target: root,
    order: ROOT_MOUNT,
    arguments: ["--bind", root, root],
  }));
  // Masked only where a root would show it; elsewhere it is simply not mounted.
  const shown = call.privatePaths.filter((privatePath) =>
    call.roots.some((root) => isInside(privatePath, root)),
  );
  const privateMounts = shown.map((privatePath) => ({
    target: privatePath,
    order: PRIVATE_MOUNT,
    arguments: ["--tmpfs", privatePath, "--remount-ro", privatePath],
  }));
  const pinnedMounts = [...new Set(shown.flatMap((privatePath) => pathsToPin(privatePath, call.roots)))].map(
    (directory) => ({ target: directory, order: ROOT_MOUNT, arguments: ["--bind", directory, directory] }),
  );
  // bwrap mounts in argument order, so a parent must come before what is mounted inside it:
  // /tmp before a root under /tmp, a root before the DATA_DIR mask inside it.
  const mounts = [...systemMounts, ...rootMounts, ...pinnedMounts, ...privateMounts].sort(
    (left, right) => depthOf(left.target) - depthOf(right.target) || left.order - right.order,
  );
  return [
    "--unshare-all",
    "--unshare-user",
    "--uid",
    SANDBOX_USER_ID,
    "--gid",
    SANDBOX_USER_ID,
    "--cap-drop",
    "ALL",
    "--die-with-parent",
    "--new-session",
    ...mounts.flatMap((mount) => mount.arguments),
    "--chdir",
    call.workingDirectory,
    ...(call.infoDescriptor === undefined ? [] : ["--info-fd", String(call.infoDescriptor)]),
    "--",
    "/bin/sh",
    "-c",
    call.command,
  ];
}

/**
 * The directories between the roots that hold `privatePath` and the path itself, each to be bound onto
 * itself: a mount point cannot be renamed or removed (EBUSY). Without them a command could rename a
 * parent of DATA_DIR (root/var, when DATA_DIR is root/var/data) — on the host, through the root's bind
 * — and the database, still open and written by the server, would then lie at a path no mask covers.
 * The mask over `privatePath` and the roots' own binds pin the rest.
 */
function pathsToPin(privatePath: string, roots: readonly string[]): string[] {
  const pinned: string[] = [];
  let directory = path.dirname(privatePath);
  while (!roots.includes(directory) && roots.some((root) => isInside(directory, root))) {
    pinned.push(directory);
    directory = path.dirname(directory);
  }
  return pinned;
}

/** /usr, its companions as this host has them, the /etc pieces, /proc, /dev and an empty /tmp. */
function hostSystemMounts(): Mount[] {
  const mounts: Mount[] = [{ target: "/usr", order: SYSTEM_MOUNT, arguments: ["--ro-bind", "/usr", "/usr"] }];
  for (const directory of USR_COMPANIONS) {
    const kind = entryKind(directory);
    if (kind === "link") {
      const target = readlinkSync(directory);
      mounts.push({ target: directory, order: SYSTEM_MOUNT, arguments: ["--symlink", target, directory] });
    } else if (kind === "directory") {
      mounts.push({ target: directory, order: SYSTEM_MOUNT, arguments: ["--ro-bind", directory, directory] });
    }
  }
  for (const file of ETC_FILES) {
    mounts.push({ target: file, order: SYSTEM_MOUNT, arguments: ["--ro-bind-try", file, file] });
  }
  mounts.push(
    { target: "/proc", order: SYSTEM_MOUNT, arguments: ["--proc", "/proc"] },
    { target: "/dev", order: SYSTEM_MOUNT, arguments: ["--dev", "/dev"] },
    { target: "/tmp", order: SYSTEM_MOUNT, arguments: ["--tmpfs", "/tmp"] },
  );
  return mounts;
}

/** The command's environment: a fixed PATH, HOME and TMPDIR in the sandbox's /tmp, the locale. */
function sandboxEnvironment(serverEnvironment: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = {
    PATH: SANDBOX_PATH,
    HOME: "/tmp",
    TMPDIR: "/tmp",
    SHELL: "/bin/sh",
  };
  for (const [name, value] of Object.entries(serverEnvironment)) {
    if (PASSED_ENVIRONMENT.includes(name) || name.startsWith("LC_")) environment[name] = value;
  }
  return environment;
}

/** Runs bwrap once, synchronously (start-up only), and reports how it went. */
function runProbe(
  bwrapPath: string,
  probeArguments: readonly string[],
  environment: NodeJS.ProcessEnv,
): SandboxProbeResult {
  const result = spawnSync(bwrapPath, probeArguments, {
    env: environment,
    cwd: "/",
    encoding: "utf8",
    stdio: ["ignore", "ignore", "pipe"],
    timeout: PROBE_TIMEOUT_MS,
    killSignal: "SIGKILL",
  });
  if (result.error !== undefined) {
    const errorCode = (result.error as NodeJS.ErrnoException).code;
    const stderr =
      errorCode === "ETIMEDOUT" ? `no answer within ${PROBE_TIMEOUT_MS} ms` : result.error.message;
    return { ok: false, exitCode: null, stderr, errorCode };
  }
  if (result.status === 0) return { ok: true };
  return { ok: false, exitCode: result.status, stderr: result.stderr.trim() };
}

const PREAMBLE =
  'SYSTEM_TOOLS enables "exec", which runs each command in a bubblewrap sandbox (EXEC_ISOLATION=bwrap)';
const OPT_OUT =
  "or set EXEC_ISOLATION=none to run exec without isolation (its commands can then read the server's environment, its database and every file the server can, and leave processes behind).";

/** Docker's defaults refuse user namespaces (seccomp), a fresh /proc (masked paths) and mounts (AppArmor). */
const DOCKER_HINT =
  "run the container with --security-opt seccomp=unconfined --security-opt systempaths=unconfined --security-opt apparmor=unconfined (or profiles that allow user namespaces and mounting proc)";

function probeFailureMessage(bwrapPath: string, result: Extract<SandboxProbeResult, { ok: false }>): string {
  if (result.errorCode === "ENOENT" || result.errorCode === "EACCES") {
    return `${PREAMBLE}, but ${bwrapPath} cannot be executed (${result.errorCode}). Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), ${OPT_OUT}`;
  }
  const said = result.stderr === "" ? `exit code ${result.exitCode}` : `"${result.stderr}"`;
  if (/mount/i.test(result.stderr)) {
    return (
      `${PREAMBLE}, but ${bwrapPath} may not mount the sandbox's filesystems: ${said}. ` +
      `In a container this is its masked /proc or its AppArmor profile: ${DOCKER_HINT}; ${OPT_OUT}`
    );
  }
  if (/namespace|not permitted|uid map|setgroups|No permissions/i.test(result.stderr)) {
    return (
      `${PREAMBLE}, but ${bwrapPath} may not create the namespaces it needs: ${said}. ` +
      "Allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0; " +
      "on Ubuntu 24.04 and later also kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap); " +
      `in Docker, whose default seccomp profile refuses them: ${DOCKER_HINT}; ${OPT_OUT}`
    );
  }
  return `${PREAMBLE}, but its start-up check (${bwrapPath} … /bin/sh -c true) failed: ${said}. Fix what it says, ${OPT_OUT}`;
}

/** The first executable regular file `name` in the absolute directories of `searchPath`. */
function findExecutable(name: string, searchPath: string): string | undefined {
  for (const directory of searchPath.split(path.delimiter)) {
    // a relative PATH entry would make the sandbox depend on the server's working directory
    if (!path.isAbsolute(directory)) continue;
    const candidate = path.join(directory, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

function entryKind(entry: string): "link" | "directory" | "other" | "missing" {
  try {
    const stats = lstatSync(entry);
    if (stats.isSymbolicLink()) return "link";
    return stats.isDirectory() ? "directory" : "other";
  } catch {
    return "missing";
  }
}

function depthOf(target: string): number {
  return target.split("/").filter((segment) => segment !== "").length;
}
