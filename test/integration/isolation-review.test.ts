/**
 * Attacks a review found after the first isolation work (docs/semantics.md#isolation-and-limits), each
 * performed for real:
 * - a nested allowed root that a command turns into a symlink, so the next call is given a host
 *   directory it was never allowed (the roots are now fixed at start-up, nested ones dropped);
 * - `read_file` reading the server's own database when DATA_DIR lies inside an allowed root.
 * (`web_fetch` sending the credentials a redirect put in its URL is tested with the other web_fetch
 * attacks, in web-fetch-ssrf.test.ts.)
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { normalizeAllowedRoots } from "../../src/tools/system/paths.js";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream } from "../helpers/sse.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), "reins-review-"));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

async function server(env: Record<string, string>): Promise<ServerHandle> {
  const handle = await startServer({ env });
  cleanups.push(async () => {
    await handle.stop();
    handle.cleanup();
  });
  return handle;
}

/** Runs one scripted tool call and returns its tool_result text. */
async function callTool(handle: ServerHandle, line: string): Promise<{ result: string; isError: boolean }> {
  const stream = await SseStream.start(handle.baseUrl, { message: line });
  const events = await stream.untilEnd();
  const result = events.find((event) => event.type === "tool_result");
  if (!result || result.type !== "tool_result") throw new Error(`no tool_result: ${JSON.stringify(events)}`);
  return { result: result.result, isError: result.isError };
}

describe("allowed roots are fixed at start-up", () => {
  it("drops roots inside another root and duplicates, keeping the real paths", () => {
    const outer = temporaryDirectory();
    mkdirSync(join(outer, "inner"));
    const other = temporaryDirectory();
    const { roots, dropped } = normalizeAllowedRoots([
      outer,
      join(outer, "inner"),
      join(outer, "later"),
      other,
      outer,
    ]);
    expect(roots).toEqual([outer, other]);
    expect(dropped).toEqual([join(outer, "inner"), join(outer, "later"), outer]);
  });

  it("a command cannot turn a nested root into a way out of the sandbox", async () => {
    const outer = temporaryDirectory();
    const secretDirectory = temporaryDirectory();
    writeFileSync(join(secretDirectory, "secret.txt"), "host secret");
    const handle = await server({
      SYSTEM_TOOLS: "exec,read_file",
      ALLOWED_ROOTS: `${outer}:${join(outer, "later")}`,
      WORKSPACE_DIR: outer,
    });
    const planted = await callTool(
      handle,
      `/tool exec ${JSON.stringify({ command: `ln -s ${secretDirectory} later && echo planted` })}`,
    );
    expect(planted.result).toContain("planted");
    const listed = await callTool(
      handle,
      `/tool exec ${JSON.stringify({ command: `cat ${secretDirectory}/secret.txt` })}`,
    );
    expect(listed.result).not.toContain("host secret");
    const read = await callTool(handle, `/tool read_file ${JSON.stringify({ path: "later/secret.txt" })}`);
    expect(read.isError).toBe(true);
    expect(read.result).not.toContain("host secret");
  }, 60_000);
});

describe("read_file and the server's data", () => {
  it("refuses the database when DATA_DIR lies inside an allowed root", async () => {
    const root = temporaryDirectory();
    const dataDir = join(root, "data");
    const handle = await server({ SYSTEM_TOOLS: "read_file", ALLOWED_ROOTS: root, DATA_DIR: dataDir });
    for (const path of ["data/reins.db", `${dataDir}/reins.db`, "data/reins.db-wal"]) {
      const { result, isError } = await callTool(handle, `/tool read_file ${JSON.stringify({ path })}`);
      expect(isError, path).toBe(true);
      expect(result, path).not.toContain("SQLite format");
    }
  }, 60_000);
});
