/**
 * DATA_DIR, fixed at start-up (README, "Security"): created if missing and resolved to its real path
 * once, so that the database is opened there, and hidden from every `exec` call there, for the whole
 * life of the process — a command that repoints a symbolic link on DATA_DIR's path moves neither.
 * Refused at start-up, because the next start would open a database a command can read:
 * - a path that reaches DATA_DIR through a symbolic link inside an allowed root (a command could
 *   repoint it to a directory of its own);
 * - a database file that is a symbolic link or has another hard link (a name outside the mask).
 */
import { lstatSync, mkdirSync, realpathSync, type Stats } from "node:fs";
import path from "node:path";
import { ConfigError } from "./errors.js";
import { isInside, realPathOrAsIs } from "./tools/system/paths.js";

/** The database and the files SQLite keeps beside it. */
export const DATABASE_FILE = "reins.db";
const DATABASE_FILES = [DATABASE_FILE, `${DATABASE_FILE}-wal`, `${DATABASE_FILE}-shm`];

/** DATA_DIR's real path; throws a ConfigError naming the problem when it cannot be trusted. */
export function fixDataDir(configured: string, allowedRoots: readonly string[]): string {
  const absolute = path.resolve(configured);
  // before anything is made: a refused path must not get directories where its link leads
  const link = linkInsideRoots(absolute, allowedRoots);
  if (link !== undefined) {
    throw new ConfigError(
      `DATA_DIR (${configured}) is reached through the symbolic link ${link}, inside an allowed root: ` +
        `a command could point it elsewhere before the next start. Set DATA_DIR to its real path, ${realPathOrAsIs(absolute)}.`,
    );
  }
  mkdirSync(absolute, { recursive: true });
  const real = realpathSync(absolute);
  for (const name of DATABASE_FILES) {
    const file = path.join(real, name);
    const stats = lstatOrUndefined(file);
    if (stats && (stats.isSymbolicLink() || stats.nlink > 1)) {
      throw new ConfigError(
        `DATA_DIR: ${file} is ${stats.isSymbolicLink() ? "a symbolic link" : `one of ${stats.nlink} hard links to one file`}: ` +
          "another name for the database would show every principal's messages outside DATA_DIR. " +
          "Move the database somewhere only reins writes to.",
      );
    }
  }
  return real;
}

/** The first symbolic link on `absolute`'s path that lies inside one of `roots`, where a command may change it. */
function linkInsideRoots(absolute: string, roots: readonly string[]): string | undefined {
  const parts = absolute.split(path.sep).filter(Boolean);
  for (let index = 1; index <= parts.length; index++) {
    const prefix = path.sep + parts.slice(0, index).join(path.sep);
    if (!lstatOrUndefined(prefix)?.isSymbolicLink()) continue;
    // where the link itself lives: its directory's real path
    const location = path.join(realpathSync(path.dirname(prefix)), path.basename(prefix));
    if (roots.some((root) => isInside(location, root))) return prefix;
  }
  return undefined;
}

function lstatOrUndefined(file: string): Stats | undefined {
  try {
    return lstatSync(file);
  } catch {
    return undefined;
  }
}
