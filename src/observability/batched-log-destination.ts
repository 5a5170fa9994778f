/**
 * The server's log destination: pino's JSON lines, gathered so that many leave in one asynchronous
 * write. A line below `warn` waits at most `LOG_FLUSH_DELAY_MS` (or until `LOG_BATCH_BYTES` wait); a
 * warning or worse is written at once, with every line before it, in order (a fatal one synchronously,
 * by the `flushSync` pino calls after it). What still waits when the process exits is written
 * synchronously, so a clean exit, `process.exit` and an uncaught exception lose nothing; a kill -9
 * loses at most the last `LOG_FLUSH_DELAY_MS` of lines below `warn`.
 *
 * Why: written one by one (sonic-boom's asynchronous mode), each line costs the event loop a write
 * handed to the thread pool and its completion — two per turn ("turn started", "turn completed").
 */
import pino from "pino";

/** Longest a line below `warn` waits before it is written. */
export const LOG_FLUSH_DELAY_MS = 50;
/** Bytes of waiting lines that are written at once, without waiting for the delay. */
export const LOG_BATCH_BYTES = 16_384;
/** Lines at this pino level or above are written at once. */
const IMMEDIATE_LEVEL = pino.levels.values.warn ?? 40;
/** pino calls `flushSync` right after a line at this level: it is written synchronously then. */
const FATAL_LEVEL = pino.levels.values.fatal ?? 60;

/** Where the batches go. */
export type LogOutput = {
  /** Writes asynchronously; writes leave in the order they were asked for. */
  write(text: string): void;
  /** Writes what `write` still holds, then `text`, before returning (the process is exiting). */
  writeSync(text: string): void;
};

/** Stdout through pino's writer (sonic-boom): asynchronous, or synchronous at exit. */
export function stdoutLogOutput(): LogOutput {
  const output = pino.destination({ sync: false });
  return {
    write: (text) => void output.write(text),
    writeSync: (text) => {
      output.flushSync();
      // a writer of its own: the asynchronous one would start an asynchronous write that exit never sees
      if (text !== "") pino.destination({ dest: 1, sync: true }).write(text);
    },
  };
}

export type BatchedLogDestinationOptions = {
  /** Defaults to `stdoutLogOutput()`. */
  output?: LogOutput;
  flushDelayMs?: number;
  batchBytes?: number;
};

export class BatchedLogDestination implements pino.DestinationStream {
  /** Asks pino to set `lastLevel` (and the rest) before each `write`. */
  readonly [pino.symbols.needsMetadataGsym] = true;
  lastLevel = 0;
  lastTime = "";
  lastMsg = "";
  lastObj: object = {};
  lastLogger: pino.Logger | undefined;

  private readonly output: LogOutput;
  private readonly flushDelayMs: number;
  private readonly batchBytes: number;
  private waiting: string[] = [];
  /** UTF-16 code units waiting: close enough to bytes for a batch size. */
  private waitingLength = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly onExit = () => this.flushSync();

  constructor(options: BatchedLogDestinationOptions = {}) {
    this.output = options.output ?? stdoutLogOutput();
    this.flushDelayMs = options.flushDelayMs ?? LOG_FLUSH_DELAY_MS;
    this.batchBytes = options.batchBytes ?? LOG_BATCH_BYTES;
    process.on("exit", this.onExit);
  }

  write(line: string): void {
    this.waiting.push(line);
    this.waitingLength += line.length;
    if (this.lastLevel >= FATAL_LEVEL) return;
    if (this.lastLevel >= IMMEDIATE_LEVEL || this.waitingLength >= this.batchBytes) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.flushDelayMs).unref();
  }

  /** Writes every waiting line now, asynchronously (pino's `logger.flush()` calls this). */
  flush(callback?: () => void): void {
    const batch = this.take();
    if (batch !== "") this.output.write(batch);
    callback?.();
  }

  /** Writes every waiting line before returning (pino calls this after a `fatal` line; so does exit). */
  flushSync(): void {
    this.output.writeSync(this.take());
  }

  /** The waiting lines as one text (empty when none wait); nothing waits afterwards. */
  private take(): string {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.waiting.join("");
    this.waiting = [];
    this.waitingLength = 0;
    return batch;
  }

  /** Writes what waits and stops listening for the process's exit. */
  close(): void {
    this.flushSync();
    process.off("exit", this.onExit);
  }
}
