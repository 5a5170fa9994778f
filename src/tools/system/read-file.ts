/**
 * `read_file {path, maxBytes?}`: reads a regular file inside the allowed roots (relative paths start
 * at the workspace), at most `min(maxBytes, maxOutputBytes)` bytes, and says when it stopped short.
 * The path is checked before opening, for clear messages, and the opened descriptor is checked again
 * before a byte is read, so a symlink swapped into the path meanwhile cannot lead it out of its roots
 * (docs/semantics.md#isolation-and-limits).
 * It checks its signal before every read, so an aborted call stops at the next chunk and closes its
 * file handle.
 */
import { constants } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { StringDecoder } from "node:string_decoder";
import { z } from "zod";
import { PermanentToolError, ToolError } from "../resilience/tool-error.js";
import type { ToolDefinition } from "../types.js";
import {
  confineOpenedFile,
  confinePath,
  errorCodeOf,
  isInside,
  messageOf,
  realPathOrAsIs,
  resolveConfinement,
} from "./paths.js";

const READ_CHUNK_BYTES = 65_536;
// O_NOFOLLOW: the path was resolved by realpath, so a symlink as its last part means it was swapped
// since the check (a swapped directory earlier in the path is caught by confineOpenedFile).
// O_NONBLOCK: opening a FIFO must not block a thread-pool thread forever.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

const input = z.strictObject({
  path: z.string().min(1),
  maxBytes: z.number().int().positive().optional(),
});

export type ReadFileInput = z.infer<typeof input>;
export type ReadFileSettings = {
  maxOutputBytes: number;
  /** Directories never read even inside a root: the server's own data (DATA_DIR). */
  privatePaths?: readonly string[];
};

/** Builds `read_file`, capped at `settings.maxOutputBytes`. */
export function createReadFileTool(settings: ReadFileSettings): ToolDefinition<ReadFileInput> {
  const privateRealPaths = (settings.privatePaths ?? []).map(realPathOrAsIs);
  return {
    name: "read_file",
    description:
      "Reads a text file inside the allowed roots. Relative paths start at the workspace. Returns at most `maxBytes` bytes.",
    inputSchema: input,
    // Reads are independent and side-effect free.
    concurrency: "parallel",
    execute: async ({ path: requested, maxBytes }, context) => {
      context.signal.throwIfAborted();
      const confinement = await resolveConfinement(context, "read_file");
      const real = await confinePath(requested, confinement);
      context.signal.throwIfAborted();
      const limit = Math.min(maxBytes ?? Number.POSITIVE_INFINITY, settings.maxOutputBytes);
      const handle = await openFile(real, requested);
      try {
        // Judge the file that was opened, not the path: it may have changed since confinePath.
        const opened = await confineOpenedFile(handle.fd, real, requested, confinement);
        if (privateRealPaths.some((privatePath) => isInside(opened, privatePath))) {
          throw new PermanentToolError(
            `Tool "read_file" refused path "${requested}": it is the server's own data, which no tool may read.`,
            { errorCode: "EACCES" },
          );
        }
        const stats = await handle.stat();
        if (stats.isDirectory()) {
          throw new PermanentToolError(`"${requested}" is a directory, not a file.`, { errorCode: "EISDIR" });
        }
        if (!stats.isFile()) throw new PermanentToolError(`"${requested}" is not a regular file.`);
        const { bytes, truncated } = await readAtMost(handle, limit, context.signal);
        // The decoder holds back a character cut in half at the limit instead of mangling it.
        const text = new StringDecoder("utf8").write(bytes);
        if (!truncated) return text;
        const size = stats.size > limit ? ` of ${stats.size}` : "";
        const limitedBy =
          maxBytes !== undefined && maxBytes <= settings.maxOutputBytes ? "maxBytes" : "the output limit";
        return `${text}\n[truncated: showed the first ${limit} bytes${size}, limited by ${limitedBy}]`;
      } finally {
        await handle.close();
      }
    },
  };
}

async function openFile(real: string, requested: string): Promise<FileHandle> {
  try {
    return await open(real, OPEN_FLAGS);
  } catch (error) {
    const code = errorCodeOf(error);
    if (code === "ELOOP") {
      throw new PermanentToolError(`Refused "${requested}": it changed into a symlink while being opened.`, {
        errorCode: code,
      });
    }
    throw new ToolError(`Cannot open "${requested}": ${messageOf(error)}`, { errorCode: code, cause: error });
  }
}

/** Reads up to `limit` bytes, plus one to learn whether there was more. */
async function readAtMost(
  handle: FileHandle,
  limit: number,
  signal: AbortSignal,
): Promise<{ bytes: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let total = 0;
  while (total <= limit) {
    signal.throwIfAborted();
    const want = Math.min(READ_CHUNK_BYTES, limit + 1 - total);
    const buffer = Buffer.alloc(want);
    const { bytesRead } = await handle.read(buffer, 0, want, null);
    if (bytesRead === 0) break;
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
  }
  signal.throwIfAborted();
  const bytes = Buffer.concat(chunks);
  return total > limit ? { bytes: bytes.subarray(0, limit), truncated: true } : { bytes, truncated: false };
}
