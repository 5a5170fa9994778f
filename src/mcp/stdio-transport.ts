/**
 * The stdio transport of an MCP server, in its own process group. The SDK's StdioClientTransport
 * spawns the server in reins' group and, on close, signals the server's pid alone: what an `npx` or
 * `uvx` wrapper started survives it. This one spawns the server detached (a new group led by it),
 * frames messages with the SDK's ReadBuffer/serializeMessage, and stops the whole group: SIGTERM,
 * then SIGKILL after a grace. It closes (and the client sees `onclose`) when the server exits.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { signalGroup, stopProcessGroup } from "../tools/system/process-groups.js";

/** How much of the server's stderr is kept to explain why it failed. */
const STDERR_TAIL_CHARS = 2_000;

export type StdioServerParameters = {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
};

export type GroupLifecycle = {
  /** The group (led by `pid`) was started. */
  onStarted(pid: number): void;
  /** Nothing of the group runs any more (or SIGKILL was sent after the grace). */
  onStopped(pid: number): void;
};

export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child: ChildProcessWithoutNullStreams | undefined;
  private readonly buffer = new ReadBuffer();
  private stderrTail = "";
  private stopping: Promise<void> | undefined;
  /** Set once the group is confirmed gone (its pid may then be reused by an unrelated group). */
  private groupGone = false;
  private closed = false;
  /** Why the process could not be started (ENOENT, EACCES, …), if it could not. */
  startError: string | undefined;
  /** Why reins closed the connection itself while the server ran, if it did. */
  closeReason: string | undefined;

  constructor(
    private readonly parameters: StdioServerParameters,
    private readonly lifecycle: GroupLifecycle,
    private readonly killGraceMs: number,
  ) {}

  /** The last lines the server wrote to stderr (why it failed, usually). */
  get stderr(): string {
    return this.stderrTail.trim();
  }

  start(): Promise<void> {
    if (this.child) throw new Error("GroupStdioTransport already started");
    return new Promise((resolve, reject) => {
      const child = spawn(this.parameters.command, this.parameters.args, {
        cwd: this.parameters.cwd,
        env: { ...getDefaultEnvironment(), ...this.parameters.env },
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
      });
      this.child = child;
      child.once("spawn", () => {
        if (child.pid !== undefined) this.lifecycle.onStarted(child.pid);
        resolve();
      });
      child.once("error", (error) => {
        this.startError = error.message;
        reject(error);
        this.onerror?.(error);
        this.finish();
      });
      child.once("exit", () => {
        // its running calls fail now; what the leader started may still run: stop the rest of its group
        this.finish();
        void this.stopGroup();
      });
      child.stdout.on("data", (chunk: Buffer) => this.receive(chunk));
      child.stderr.on("data", (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
      });
      // a server that exits while reins writes to it: the exit reports it, the EPIPE need not
      child.stdin.on("error", (error) => this.onerror?.(error));
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const child = this.child;
    if (!child || this.closed || child.stdin.destroyed) return Promise.reject(new Error("Not connected"));
    return new Promise((resolve) => {
      if (child.stdin.write(serializeMessage(message))) resolve();
      else child.stdin.once("drain", resolve);
    });
  }

  /** Stops the server's whole group (SIGTERM, SIGKILL after the grace); resolves when it is gone. */
  async close(): Promise<void> {
    this.child?.stdin.end();
    await this.stopGroup();
    this.finish();
  }

  /** SIGKILL to the group, synchronously (process exit); nothing once the group is known gone. */
  killNow(): void {
    const pid = this.child?.pid;
    if (pid !== undefined && !this.groupGone) signalGroup(pid, "SIGKILL");
  }

  private stopGroup(): Promise<void> {
    const pid = this.child?.pid;
    if (pid === undefined) return Promise.resolve();
    this.stopping ??= stopProcessGroup(pid, this.killGraceMs)
      .catch(() => undefined)
      .finally(() => {
        // its pid may be reused from now on: never signal that group again
        this.groupGone = true;
        this.lifecycle.onStopped(pid);
      });
    return this.stopping;
  }

  private receive(chunk: Buffer): void {
    try {
      this.buffer.append(chunk);
    } catch (error) {
      // the SDK's buffer holds at most 10 MiB of one message: a larger one cannot be read, nor skipped
      // (its end is not known), so the server is stopped, restarted like one that exited, and told why
      this.closeReason = `reins closed the connection: one message from the server was too large (${(error as Error).message})`;
      this.onerror?.(error as Error);
      void this.close();
      return;
    }
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.buffer.readMessage();
      } catch (error) {
        this.onerror?.(error as Error);
        continue;
      }
      if (message === null) break;
      this.onmessage?.(message);
    }
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.buffer.clear();
    this.onclose?.();
  }
}
