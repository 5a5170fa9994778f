import { spawnSync } from "node:child_process";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  BatchedLogDestination,
  LOG_BATCH_BYTES,
  LOG_FLUSH_DELAY_MS,
} from "../../src/observability/batched-log-destination.js";
import { PROJECT_ROOT, startServer } from "../helpers/server.js";

/** An output that records each write: asynchronous ones and synchronous ones apart. */
function recordingOutput() {
  const writes: string[] = [];
  const syncWrites: string[] = [];
  return {
    writes,
    syncWrites,
    output: {
      write: (text: string) => void writes.push(text),
      writeSync: (text: string) => {
        if (text !== "") syncWrites.push(text);
      },
    },
  };
}

const messages = (text: string) =>
  text
    .trim()
    .split("\n")
    .map((line) => (JSON.parse(line) as { msg: string }).msg);

describe("BatchedLogDestination", () => {
  let destination: BatchedLogDestination;
  let recorded: ReturnType<typeof recordingOutput>;
  let logger: pino.Logger;

  beforeEach(() => {
    vi.useFakeTimers();
    recorded = recordingOutput();
    destination = new BatchedLogDestination({ output: recorded.output });
    logger = pino({ level: "info" }, destination);
  });
  afterEach(() => {
    destination.close();
    vi.useRealTimers();
  });

  it("writes the lines below warn of the next LOG_FLUSH_DELAY_MS together, once it has passed", async () => {
    logger.info("turn started");
    await vi.advanceTimersByTimeAsync(LOG_FLUSH_DELAY_MS - 1);
    logger.info("turn completed");
    expect(recorded.writes).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(recorded.writes).toHaveLength(1);
    expect(messages(recorded.writes[0] ?? "")).toEqual(["turn started", "turn completed"]);
    // nothing waits: no further write, and the next line waits its own delay
    await vi.advanceTimersByTimeAsync(LOG_FLUSH_DELAY_MS * 3);
    expect(recorded.writes).toHaveLength(1);
  });

  it.each(["warn", "error", "fatal"] as const)(
    "writes a %s line at once, after the lines before it",
    (level) => {
      logger.info("before");
      logger[level]("now");
      expect(recorded.writes.length + recorded.syncWrites.length).toBe(1);
      expect(messages([...recorded.writes, ...recorded.syncWrites].join(""))).toEqual(["before", "now"]);
    },
  );

  it("writes a fatal line synchronously (pino flushes after it; the process may be about to die)", () => {
    logger.fatal("dying");
    expect(recorded.syncWrites).toHaveLength(1);
    expect(recorded.writes).toEqual([]);
  });

  it("writes at once when LOG_BATCH_BYTES wait, without waiting for the delay", () => {
    const text = "x".repeat(1_000);
    const linesBelowBatch = Math.floor(LOG_BATCH_BYTES / (text.length + 100)) - 1;
    for (let index = 0; index < linesBelowBatch; index++) logger.info(text);
    expect(recorded.writes).toEqual([]);
    for (let index = 0; recorded.writes.length === 0 && index < 100; index++) logger.info(text);
    expect(recorded.writes).toHaveLength(1);
    expect(recorded.writes[0]?.length).toBeGreaterThanOrEqual(LOG_BATCH_BYTES);
  });

  it("hands what waits to the output on logger.flush(), synchronously on flushSync", () => {
    logger.info("one");
    logger.flush();
    expect(recorded.writes).toHaveLength(1);
    logger.info("two");
    destination.flushSync();
    expect(messages(recorded.syncWrites.join(""))).toEqual(["two"]);
  });
});

describe("BatchedLogDestination on stdout, at exit", () => {
  // A real process: what waits must reach stdout however the process ends, except a kill.
  const script = (ending: string) => `
    import pino from "pino";
    import { BatchedLogDestination } from "./src/observability/batched-log-destination.ts";
    const logger = pino({ level: "info" }, new BatchedLogDestination());
    for (let index = 0; index < 3; index++) logger.info("line " + index);
    ${ending}
  `;
  it.each([
    ["process.exit", "process.exit(0);"],
    ["an uncaught exception", 'throw new Error("boom");'],
    ["the end of the program", ""],
  ])("writes every waiting line when the process ends with %s", (_name, ending) => {
    const result = spawnSync(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", script(ending)],
      {
        cwd: PROJECT_ROOT,
        encoding: "utf8",
      },
    );
    expect(messages(result.stdout)).toEqual(["line 0", "line 1", "line 2"]);
  });
});

describe("the server's log", () => {
  it("holds every line up to the last one when the server stops on SIGTERM", async () => {
    const server = await startServer();
    try {
      expect(await server.stop("SIGTERM")).toBe(0);
      const messagesLogged = server
        .logs()
        .filter((line) => line.startsWith("{"))
        .map((line) => (JSON.parse(line) as { msg: string }).msg)
        // said at start-up only where the test runner left descriptors open to the server
        .filter((message) => !message.startsWith("closed descriptors inherited without close-on-exec"));
      expect(messagesLogged).toEqual(["listening", "shutting down", "stopped"]);
    } finally {
      server.cleanup();
    }
  }, 30_000);
});
