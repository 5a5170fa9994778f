/**
 * The container's health check (src/healthcheck.ts, the image's HEALTHCHECK): it follows HOST and PORT
 * and asks readiness, so it passes against a ready server wherever it listens and fails otherwise.
 */
import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { readinessUrl } from "../../src/healthcheck.js";
import { PROJECT_ROOT, startServer, type ServerHandle } from "../helpers/server.js";

let server: ServerHandle | undefined;
afterEach(async () => {
  await server?.stop();
  server?.cleanup();
  server = undefined;
});

/** Runs the health check as the image does, with only these variables; returns its exit code. */
function runHealthCheck(environment: Record<string, string>): number | null {
  const result = spawnSync(process.execPath, ["--import", "tsx", "src/healthcheck.ts"], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? "", ...environment },
    timeout: 20_000,
  });
  return result.status;
}

describe("container health check", () => {
  it.each([
    [{}, "http://127.0.0.1:8787/readyz"],
    [{ HOST: "0.0.0.0", PORT: "9000" }, "http://127.0.0.1:9000/readyz"],
    [{ HOST: "::" }, "http://[::1]:8787/readyz"],
    [{ HOST: "::1", PORT: "81" }, "http://[::1]:81/readyz"],
    [{ HOST: "10.0.0.5", PORT: "8080" }, "http://10.0.0.5:8080/readyz"],
  ])("asks readiness where HOST and PORT say (%o)", (environment, url) => {
    expect(readinessUrl(environment)).toBe(url);
  });

  it("passes against a ready server on its HOST and PORT, and fails where nothing answers", async () => {
    server = await startServer({ env: { HOST: "127.0.0.1" } });
    expect(runHealthCheck({ HOST: "127.0.0.1", PORT: String(server.port) })).toBe(0);
    await server.stop();
    expect(runHealthCheck({ HOST: "127.0.0.1", PORT: String(server.port) })).toBe(1);
  }, 60_000);
});
