/**
 * Starts bench/hono-baseline.ts as a child process (`node --import tsx`: its own few lines make one
 * function per request, so tsx costs it next to nothing; Hono and the node server are their published
 * builds), with the Node flags the reins server runs with, on a free loopback port, waits for its
 * "listening" line, and hands it over as a BenchServer.
 */
import { spawn } from "node:child_process";
import type { TurnEvent } from "../src/events.js";
import { PROJECT_ROOT, SERVER_NODE_FLAGS } from "../test/helpers/server.js";
import { trackServer, type BenchServer } from "./lib.js";

const START_LIMIT_MS = 30_000;

/** A baseline server that streams `events` (one reins turn's) for every request. */
export async function startHonoBaseline(label: string, events: readonly TurnEvent[]): Promise<BenchServer> {
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, "--import", "tsx", "bench/hono-baseline.ts"], {
    cwd: PROJECT_ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      BENCH_BASELINE_EVENTS: JSON.stringify(events),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<number | string | null>((resolveExit) => {
    child.once("exit", (code, signal) => resolveExit(code ?? signal));
  });
  const output: string[] = [];
  const port = await new Promise<number>((resolvePort, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${label} did not start within ${START_LIMIT_MS} ms:\n${output.join("")}`));
    }, START_LIMIT_MS);
    let buffer = "";
    child.stdout.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const match = /"msg":"listening","port":(\d+)/.exec(buffer);
      if (!match) return;
      clearTimeout(timer);
      resolvePort(Number(match[1]));
    });
    child.stderr.on("data", (chunk: Buffer) => output.push(chunk.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited (${code}) before listening:\n${output.join("")}`));
    });
  });
  return trackServer(label, {
    baseUrl: `http://127.0.0.1:${port}`,
    pid: child.pid,
    stop: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    cleanup: () => {
      child.stdout.removeAllListeners("data");
      child.stderr.removeAllListeners("data");
    },
  });
}
