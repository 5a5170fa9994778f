/**
 * The crash record of process groups (src/tools/system/process-record.ts), with real processes. The
 * start after a crash kills a recorded group that is provably the one recorded — its leader alive with
 * the recorded start time, or, the leader gone, a member already running when the record was last
 * written — and nothing else: a group whose processes all started after that write holds an id that was
 * free again (the state a reused pid leaves, made here by writing the record by hand, as forcing the
 * kernel to reuse a pid takes root). While it lists groups the record is written again every
 * REFRESH_MS, and stops being written once it lists none. A record that cannot be written or removed
 * fails nothing.
 */
import { spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ProcessGroups } from "../../src/tools/system/process-groups.js";
import { ProcessRecord, REFRESH_MS } from "../../src/tools/system/process-record.js";
import { eventually } from "../helpers/eventually.js";

const FILE = "groups.json";
let dataDir: string;
const started: number[] = [];

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), "reins-process-record-"));
});
afterEach(() => {
  vi.useRealTimers();
  for (const groupId of started.splice(0)) {
    try {
      process.kill(-groupId, "SIGKILL");
    } catch {
      // gone
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
});

/** Start time (clock ticks since boot) and group of a live process; undefined once it is gone. */
function statOf(pid: number): { startTime: number; groupId: number; state: string } | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return { state: fields[0]!, groupId: Number(fields[2]), startTime: Number(fields[19]) };
  } catch {
    return undefined;
  }
}

const alive = (pid: number) => {
  const stat = statOf(pid);
  return stat !== undefined && stat.state !== "Z";
};

/**
 * A group whose leader exits at once and leaves one member running: the leader's pid (the group's id),
 * its start time, and the member's pid.
 */
async function leaderlessGroup(): Promise<{ groupId: number; leaderStart: number; member: number }> {
  const leader = spawn("/bin/sh", ["-c", "sleep 300 & echo $!; sleep 0.3"], {
    detached: true,
    stdio: ["ignore", "pipe", "ignore"],
  });
  const groupId = leader.pid!;
  started.push(groupId);
  const leaderStart = statOf(groupId)!.startTime;
  const member = Number(
    (await new Promise<Buffer>((resolve) => leader.stdout!.once("data", resolve))).toString(),
  );
  await new Promise((resolve) => leader.once("exit", resolve));
  await eventually(() => expect(alive(groupId)).toBe(false));
  expect(statOf(member)?.groupId).toBe(groupId);
  return { groupId, leaderStart, member };
}

function writeRecord(groups: { groupId: number; startTime: number }[], writtenAt: number | undefined) {
  const bootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  writeFileSync(
    join(dataDir, FILE),
    JSON.stringify({ bootId, writtenAt, groups: groups.map((group) => ({ ...group, server: "exec" })) }),
  );
}

describe("the start after a crash", () => {
  it("kills a recorded group whose leader still runs with the recorded start time", () => {
    const child = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
    started.push(child.pid!);
    const record = new ProcessRecord(dataDir, FILE);
    record.add(child.pid!, "exec");
    // the crashed process wrote it; a new one reads it
    expect(new ProcessRecord(dataDir, FILE).killLeftovers().map((group) => group.groupId)).toEqual([
      child.pid,
    ]);
    record.clear();
    return eventually(() => expect(alive(child.pid!)).toBe(false));
  });

  it("kills a leaderless group with a member that was running when the record was last written", async () => {
    const { groupId, leaderStart, member } = await leaderlessGroup();
    writeRecord([{ groupId, startTime: leaderStart }], statOf(member)!.startTime + 1);
    expect(new ProcessRecord(dataDir, FILE).killLeftovers()).toHaveLength(1);
    await eventually(() => expect(alive(member)).toBe(false));
  });

  it("spares a leaderless group whose processes all started after the record was last written (its id was reused)", async () => {
    const { groupId, member } = await leaderlessGroup();
    const memberStart = statOf(member)!.startTime;
    // as if the recorded group had died whole and an unrelated process had taken its id since
    writeRecord([{ groupId, startTime: memberStart - 10 }], memberStart - 1);
    expect(new ProcessRecord(dataDir, FILE).killLeftovers()).toEqual([]);
    // and a record from before `writtenAt` was kept proves no leaderless group at all
    writeRecord([{ groupId, startTime: memberStart - 10 }], undefined);
    expect(new ProcessRecord(dataDir, FILE).killLeftovers()).toEqual([]);
    expect(alive(member)).toBe(true);
  });
});

describe("a record that cannot be written or removed", () => {
  it("fails nothing that starts or stops a group, and leaves no temporary file", async () => {
    mkdirSync(join(dataDir, FILE));
    writeFileSync(join(dataDir, FILE, "inside"), "a directory where the record goes");
    const groups = new ProcessGroups(new ProcessRecord(dataDir, FILE));
    expect(groups.killLeftovers()).toEqual([]);
    const child = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
    started.push(child.pid!);
    groups.add(child.pid!);
    groups.delete(child.pid!);
    groups.add(child.pid!);
    expect(groups.killAll()).toBe(1);
    await eventually(() => expect(alive(child.pid!)).toBe(false));
    groups.delete(child.pid!);
    expect(await groups.drain(0)).toBe(true);
    expect(readdirSync(dataDir)).toEqual([FILE]);
  });
});

describe("while groups are recorded", () => {
  it("the record is written again every REFRESH_MS, and no more once it lists none", () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const child = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
    started.push(child.pid!);
    const path = join(dataDir, FILE);
    const record = new ProcessRecord(dataDir, FILE);
    record.add(child.pid!, "exec");
    rmSync(path);
    vi.advanceTimersByTime(REFRESH_MS - 1);
    expect(existsSync(path)).toBe(false);
    vi.advanceTimersByTime(1);
    expect(JSON.parse(readFileSync(path, "utf8"))).toMatchObject({
      groups: [{ groupId: child.pid, server: "exec" }],
      writtenAt: expect.any(Number),
    });
    record.remove(child.pid!);
    expect(existsSync(path)).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
