/**
 * The container's health check (Dockerfile HEALTHCHECK): asks `/readyz` — the server is up and its
 * database answers — on the address the server listens on, from `HOST` and `PORT` as the server
 * reads them. A wildcard host (`0.0.0.0`, `::`) is asked on loopback. Exits 0 when ready, 1 otherwise.
 */
import { pathToFileURL } from "node:url";

const DEFAULT_PORT = 8787;
const CHECK_TIMEOUT_MS = 2_500;

/** The URL of `/readyz` for a server configured with this environment. */
export function readinessUrl(environment: NodeJS.ProcessEnv): string {
  const port = environment.PORT?.trim() || String(DEFAULT_PORT);
  const configured = environment.HOST?.trim() || "127.0.0.1";
  const host =
    configured === "0.0.0.0"
      ? "127.0.0.1"
      : configured === "::" || configured === "[::]"
        ? "::1"
        : configured;
  const bracketed = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return `http://${bracketed}:${port}/readyz`;
}

/** Whether the server answers `/readyz` with 2xx within the time limit. */
export async function isReady(environment: NodeJS.ProcessEnv): Promise<boolean> {
  try {
    const response = await fetch(readinessUrl(environment), {
      signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
    });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = (await isReady(process.env)) ? 0 : 1;
}
