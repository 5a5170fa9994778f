/**
 * Starts the real server as a child process (`node --import tsx src/main.ts`, or the build's
 * `node dist/main.js` as the Docker image runs it), with the Node flags `npm start` and the image
 * pass, on a free port with a fresh data directory, and waits for its "listening" log line. Tests
 * talk to it over a real socket.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const PROJECT_ROOT = resolve(import.meta.dirname, "../..");

/**
 * The Node flags the server runs with (docs/deployment.md#node-flags): `npm start` (package.json) and
 * the Docker image's CMD pass these, and test/unit/node-flags.test.ts fails when either differs.
 */
export const SERVER_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=64"];

export type ServerHandle = {
  baseUrl: string;
  port: number;
  dataDir: string;
  child: ChildProcess;
  logs: () => string[];
  /** Sends a signal and resolves with the exit code (or signal name). */
  stop(signal?: NodeJS.Signals): Promise<number | string | null>;
  /** Deletes the data directory (after stop). */
  cleanup(): void;
};

export type StartOptions = {
  env?: Record<string, string>;
  dataDir?: string;
  timeoutMs?: number;
  /** Run the build (`dist/main.js`, made by `npm run build`) instead of the sources through tsx. */
  built?: boolean;
  /**
   * The server's descriptors from 3 on: a number passes on that descriptor of this process, without
   * close-on-exec (as a wrapper or process manager may leave one open); "ignore" leaves a number out.
   */
  extraStdio?: readonly (number | "ignore")[];
};

export async function startServer(options: StartOptions = {}): Promise<ServerHandle> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "reins-test-"));
  const entry = options.built ? ["dist/main.js"] : ["--import", "tsx", "src/main.ts"];
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, ...entry], {
    cwd: PROJECT_ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      PORT: "0",
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      LOG_LEVEL: "info",
      CONFIG_FILE: join(PROJECT_ROOT, "config/default.json"),
      ...options.env,
    },
    stdio: ["ignore", "pipe", "pipe", ...(options.extraStdio ?? [])],
  });
  const lines: string[] = [];
  const exitPromise = new Promise<number | string | null>((resolveExit) => {
    child.on("exit", (code, signal) => resolveExit(code ?? signal));
  });

  const port = await new Promise<number>((resolvePort, reject) => {
    const timer = setTimeout(() => {
      // a server that never said it listens must not go on running (and loading the machine) unowned
      child.kill("SIGKILL");
      if (options.dataDir === undefined) {
        void exitPromise.then(() => rmSync(dataDir, { recursive: true, force: true })).catch(() => {});
      }
      reject(new Error(`server did not start:\n${lines.join("\n")}`));
    }, options.timeoutMs ?? 20_000);
    let buffer = "";
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString();
      let newline: number;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        lines.push(line);
        try {
          const record = JSON.parse(line) as { msg?: string; port?: number };
          if (record.msg === "listening" && record.port) {
            clearTimeout(timer);
            resolvePort(record.port);
          }
        } catch {
          // not a log line
        }
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (chunk: Buffer) => lines.push(chunk.toString()));
    void exitPromise.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${lines.join("\n")}`));
    });
  });

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    dataDir,
    child,
    logs: () => lines,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exitPromise;
    },
    cleanup() {
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs the server expecting it to refuse to start; resolves with its exit code and what it printed.
 * A server that starts anyway is killed after `timeoutMs` (code null), so a failing test leaks nothing.
 */
export async function runServerToExit(
  env: Record<string, string>,
  timeoutMs = 15_000,
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, "--import", "tsx", "src/main.ts"], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? "", PORT: "0", HOST: "127.0.0.1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const killer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const code = await new Promise<number | null>((resolve) =>
    child.on("exit", (exitCode) => resolve(exitCode)),
  );
  clearTimeout(killer);
  return { code, stderr };
}
