/**
 * `read_file` against a real symlink race (docs/semantics.md#isolation-and-limits): a child process keeps
 * swapping an intermediate directory of the requested path between a real directory inside the root and a
 * symlink to a directory outside it, while the tool reads through that directory hundreds of times. No read
 * may return the outside file. Also the plain cases around it: symlinks in and out, `../` escapes, a FIFO and
 * a device, and the identity check used where /proc is missing.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, open, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PermanentToolError, ToolError } from "../../src/tools/resilience/tool-error.js";
import { resolveConfinement, confineDescriptorByIdentity } from "../../src/tools/system/paths.js";
import { createReadFileTool } from "../../src/tools/system/read-file.js";
import type { ToolContext } from "../../src/tools/types.js";

const RACING_READS = 400;
const INSIDE_TEXT = "inside\n";
const OUTSIDE_TEXT = "OUTSIDE-SECRET\n";

// Swaps `dir` between the real directory and the symlink, one atomic rename at a time, until killed.
// It says "ready" once it has completed a full cycle, so the reads start while it is running.
const RACER_SOURCE = `
const { renameSync } = require("node:fs");
const [dir, parked, staged] = process.argv.slice(1);
let announced = false;
for (;;) {
  renameSync(dir, parked);
  renameSync(staged, dir);
  renameSync(dir, staged);
  renameSync(parked, dir);
  if (!announced) { announced = true; process.stdout.write("ready\\n"); }
}
`;

function makeContext(allowedRoots: string[]): ToolContext {
  return {
    turnId: "turn-1",
    sessionId: "session-1",
    agentId: "agent-1",
    callId: "call-1",
    toolName: "read_file",
    workspace: undefined,
    allowedRoots,
    depth: 0,
    signal: new AbortController().signal,
    heartbeat: () => undefined,
    services: undefined,
  };
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable("expected a rejection"),
    (error: unknown) => error,
  );
}

describe("read_file confinement at open time", () => {
  const readFileTool = createReadFileTool({ maxOutputBytes: 1_000 });
  let base: string;
  let root: string;
  let outside: string;
  let racer: ChildProcess | undefined;

  const read = (requested: string, roots: string[] = [root]) =>
    readFileTool.execute({ path: requested }, makeContext(roots));

  beforeEach(async () => {
    base = await realpath(await mkdtemp(path.join(tmpdir(), "reins-read-race-")));
    root = path.join(base, "root");
    outside = path.join(base, "outside");
    await mkdir(path.join(root, "dir"), { recursive: true });
    await mkdir(outside);
    await writeFile(path.join(root, "dir", "file.txt"), INSIDE_TEXT);
    await writeFile(path.join(outside, "file.txt"), OUTSIDE_TEXT);
  });

  afterEach(async () => {
    if (racer !== undefined && racer.exitCode === null && racer.signalCode === null) {
      const exited = once(racer, "exit");
      racer.kill("SIGKILL");
      await exited;
    }
    racer = undefined;
    await rm(base, { recursive: true, force: true });
  });

  async function startRacer(): Promise<void> {
    await symlink(outside, path.join(root, "staged-link"));
    const child = spawn(
      process.execPath,
      ["-e", RACER_SOURCE, path.join(root, "dir"), path.join(root, "parked"), path.join(root, "staged-link")],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    racer = child;
    const [chunk] = (await Promise.race([
      once(child.stdout!, "data"),
      once(child, "exit").then(() => expect.unreachable("the racer exited before it was ready")),
    ])) as [Buffer];
    expect(chunk.toString()).toContain("ready");
  }

  it(`never returns the outside file while a directory on the path is swapped for a symlink (${RACING_READS} reads)`, async () => {
    await startRacer();
    const outcomes = { inside: 0, outside: 0, refused: 0 };
    for (let attempt = 0; attempt < RACING_READS; attempt += 1) {
      try {
        const text = String(await read("dir/file.txt"));
        if (text.includes("OUTSIDE-SECRET")) outcomes.outside += 1;
        else if (text === INSIDE_TEXT) outcomes.inside += 1;
        else expect.unreachable(`unexpected content ${JSON.stringify(text)}`);
      } catch (error) {
        // Refused or vanished mid-swap: a tool error the model can read, never the secret.
        expect(error).toBeInstanceOf(ToolError);
        expect((error as Error).message).not.toContain("OUTSIDE-SECRET");
        outcomes.refused += 1;
      }
    }
    expect(racer?.exitCode).toBeNull();
    expect(outcomes.outside, JSON.stringify(outcomes)).toBe(0);
    expect(outcomes.inside + outcomes.refused).toBe(RACING_READS);
    // the race really ran: some reads met the swapped-in symlink (refused), some the real directory
    expect(outcomes.refused, JSON.stringify(outcomes)).toBeGreaterThan(0);
    expect(outcomes.inside, JSON.stringify(outcomes)).toBeGreaterThan(0);
  }, 120_000);

  it("refuses a symlink inside the root that points outside", async () => {
    await symlink(path.join(outside, "file.txt"), path.join(root, "link-out.txt"));
    await symlink(outside, path.join(root, "dir-out"));
    for (const requested of ["link-out.txt", "dir-out/file.txt"]) {
      const error = await rejectionOf(read(requested));
      expect(error).toBeInstanceOf(PermanentToolError);
      expect((error as Error).message).toContain(`refused path "${requested}"`);
      expect((error as Error).message).not.toContain("OUTSIDE-SECRET");
    }
  });

  it("reads through symlinks that stay inside the root", async () => {
    await symlink(path.join(root, "dir", "file.txt"), path.join(root, "link-in.txt"));
    await symlink(path.join(root, "dir"), path.join(root, "dir-in"));
    expect(await read("link-in.txt")).toBe(INSIDE_TEXT);
    expect(await read("dir-in/file.txt")).toBe(INSIDE_TEXT);
    expect(await read(path.join(root, "dir-in", "file.txt"))).toBe(INSIDE_TEXT);
  });

  it("refuses a ../ escape", async () => {
    const error = await rejectionOf(read("dir/../../outside/file.txt"));
    expect(error).toBeInstanceOf(PermanentToolError);
    expect((error as Error).message).toContain('refused path "dir/../../outside/file.txt"');
  });

  it("refuses a FIFO without waiting for a writer", async () => {
    const fifo = path.join(root, "pipe");
    const made = spawnSync("mkfifo", [fifo]);
    expect(made.status).toBe(0);
    const error = await rejectionOf(read("pipe"));
    expect(error).toBeInstanceOf(PermanentToolError);
    expect((error as Error).message).toBe('"pipe" is not a regular file.');
  });

  it("refuses a device, inside a root or behind a symlink out of one", async () => {
    const deviceError = await rejectionOf(read("/dev/zero", ["/dev"]));
    expect(deviceError).toBeInstanceOf(PermanentToolError);
    expect((deviceError as Error).message).toBe('"/dev/zero" is not a regular file.');

    await symlink("/dev/zero", path.join(root, "zero"));
    const linkError = await rejectionOf(read("zero"));
    expect(linkError).toBeInstanceOf(PermanentToolError);
    expect((linkError as Error).message).toContain('refused path "zero"');
  });

  describe("identity check used where /proc/self/fd is unavailable", () => {
    it("accepts a descriptor that is the file at its inside path", async () => {
      const confinement = await resolveConfinement(makeContext([root]), "read_file");
      const opened = path.join(root, "dir", "file.txt");
      const handle = await open(opened);
      try {
        await expect(
          confineDescriptorByIdentity(handle.fd, opened, "dir/file.txt", confinement),
        ).resolves.toBe(opened);
      } finally {
        await handle.close();
      }
    });

    it("refuses a descriptor whose file is not the one at the inside path", async () => {
      const confinement = await resolveConfinement(makeContext([root]), "read_file");
      const handle = await open(path.join(outside, "file.txt"));
      try {
        const error = await rejectionOf(
          confineDescriptorByIdentity(
            handle.fd,
            path.join(root, "dir", "file.txt"),
            "dir/file.txt",
            confinement,
          ),
        );
        expect(error).toBeInstanceOf(PermanentToolError);
        expect((error as Error).message).toContain('refused path "dir/file.txt"');
      } finally {
        await handle.close();
      }
    });

    it("refuses when the path now leads outside or nowhere", async () => {
      const confinement = await resolveConfinement(makeContext([root]), "read_file");
      const handle = await open(path.join(root, "dir", "file.txt"));
      try {
        await rm(path.join(root, "dir"), { recursive: true });
        const missing = await rejectionOf(
          confineDescriptorByIdentity(
            handle.fd,
            path.join(root, "dir", "file.txt"),
            "dir/file.txt",
            confinement,
          ),
        );
        expect(missing).toBeInstanceOf(PermanentToolError);
        await symlink(outside, path.join(root, "dir"));
        const escaped = await rejectionOf(
          confineDescriptorByIdentity(
            handle.fd,
            path.join(root, "dir", "file.txt"),
            "dir/file.txt",
            confinement,
          ),
        );
        expect(escaped).toBeInstanceOf(PermanentToolError);
        expect((escaped as Error).message).toContain('refused path "dir/file.txt"');
      } finally {
        await handle.close();
      }
    });
  });
});
