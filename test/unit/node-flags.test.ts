/**
 * Every way this repository starts the server passes the same Node flags (docs/deployment.md#node-flags):
 * `npm start`, the Docker image, and the servers the tests and `npm run bench` start — so what the
 * bench measures is what a deployment runs. And the flags do what they are there for, on this Node:
 * the young generation grows to the size they set, which is never less than V8's default.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PROJECT_ROOT, SERVER_NODE_FLAGS } from "../helpers/server.js";

/** The `CMD` the image runs (the last one in the Dockerfile), as its JSON array. */
function dockerCommand(): string[] {
  const dockerfile = readFileSync(join(PROJECT_ROOT, "Dockerfile"), "utf8");
  const commands = dockerfile.split("\n").filter((line) => line.startsWith("CMD "));
  return JSON.parse(commands.at(-1)!.slice("CMD ".length)) as string[];
}

/**
 * The largest size new space reaches in a child `node` with `flags` while it allocates objects that
 * live for a while (as a burst's results and events do until they are committed and sent), in MiB.
 */
function newSpaceMiB(flags: readonly string[]): number {
  const script = `
    const v8 = require("node:v8");
    let largest = 0;
    let live = [];
    for (let i = 0; i < 6e6; i++) {
      live.push({ i, text: "result " + i });
      if (live.length === 200000) {
        live = [];
        const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
        largest = Math.max(largest, space.space_size);
      }
    }
    console.log(largest / 2 ** 20);
  `;
  // only PATH from this environment: a NODE_OPTIONS of the caller's would size the heap too
  const child = spawnSync(process.execPath, [...flags, "-e", script], {
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "" },
  });
  expect(child.status, child.stderr).toBe(0);
  return Number(child.stdout.trim());
}

describe("Node flags of the server", () => {
  it("npm start passes them", () => {
    const manifest = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(manifest.scripts.start).toBe(`tsx ${SERVER_NODE_FLAGS.join(" ")} src/main.ts`);
  });

  it("the Docker image passes them", () => {
    expect(dockerCommand()).toEqual(["node", ...SERVER_NODE_FLAGS, "dist/main.js"]);
  });

  it("let the young generation grow to the size they set, never below V8's default", () => {
    const semiSpaceFlag = SERVER_NODE_FLAGS.find((flag) => flag.startsWith("--max-semi-space-size="));
    const semiSpaceMiB = Number(semiSpaceFlag?.slice("--max-semi-space-size=".length));
    const withDefaults = newSpaceMiB([]);
    const withFlags = newSpaceMiB(SERVER_NODE_FLAGS);
    // new space is both semi-spaces; V8's default is 16 MiB each on 64-bit Node 20 and 22 with more
    // than 2 GiB of memory (less with less), 64 MiB on Node 24
    expect(withFlags, `new space ${withFlags} MiB with the flags`).toBe(2 * semiSpaceMiB);
    expect(
      withFlags,
      `new space ${withFlags} MiB with the flags, ${withDefaults} without`,
    ).toBeGreaterThanOrEqual(withDefaults);
  });
});
