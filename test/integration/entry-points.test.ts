/**
 * The package's entry points load on their own, in a fresh process, as a program importing reins
 * would load them (module evaluation order differs from the test runner's, which once hid a schema
 * built before zod was extended for OpenAPI).
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../helpers/server.js";

describe("entry points", () => {
  it.each(["./src/index.ts", "./src/client/index.ts"])("%s loads in a fresh process", (entry) => {
    const result = spawnSync(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", `await import(${JSON.stringify(entry)});`],
      { cwd: PROJECT_ROOT, encoding: "utf8", timeout: 30_000 },
    );
    expect(result.stderr).not.toMatch(/Error/);
    expect(result.status).toBe(0);
  });
});
