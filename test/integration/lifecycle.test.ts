/**
 * Process-level behaviour over the real server: idle timeouts, client disconnects, crash recovery
 * after `kill -9`, and SIGTERM shutdown. Each case starts its own server with the settings it needs.
 */
import BetterSqlite3 from "better-sqlite3";
import { existsSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { HistoryBlock } from "../../src/history/model.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { liveDescendants, liveMembersOfGroup } from "../helpers/processes.js";
import { runServerToExit, startServer, type ServerHandle } from "../helpers/server.js";
import { eventually } from "../helpers/eventually.js";
import { SseStream, sessionIdOf, turnIdOf } from "../helpers/sse.js";
import { storedBlocks } from "../support/history-store.js";

type History = {
  blocks: HistoryBlock[];
  turns: { id: string; status: string; abortReason: string | null }[];
};

const servers: ServerHandle[] = [];
async function server(env: Record<string, string> = {}, dataDir?: string): Promise<ServerHandle> {
  const handle = await startServer({ env, dataDir });
  servers.push(handle);
  return handle;
}

afterEach(async () => {
  for (const handle of servers.splice(0)) {
    await handle.stop("SIGKILL");
    handle.cleanup();
  }
});

async function history(handle: ServerHandle, sessionId: string): Promise<History> {
  return (await (await fetch(`${handle.baseUrl}/api/sessions/${sessionId}/history`)).json()) as History;
}

async function activeTurnIds(handle: ServerHandle): Promise<string[]> {
  const body = (await (await fetch(`${handle.baseUrl}/api/turns/active`)).json()) as {
    turns: { turnId: string }[];
  };
  return body.turns.map((turn) => turn.turnId);
}

describe("idle timeout", () => {
  it("stops a tool with no heartbeat, while a heartbeating one runs to completion", async () => {
    // a heartbeat every 100 ms against a 1 s idle limit: a busy machine's stalls stay far inside it
    const handle = await server({ TOOL_IDLE_TIMEOUT_MS: "1000" });
    const stream = await SseStream.start(handle.baseUrl, {
      message: '/tool hang {}\n/tool sleep {"ms":2000,"heartbeatMs":100}',
    });
    const events = await stream.untilEnd();
    expect(events.find((event) => event.type === "tool_timeout")).toMatchObject({
      toolName: "hang",
      kind: "idle",
      timeoutMs: 1000,
    });
    const results = events.filter((event) => event.type === "tool_result");
    expect(results.find((event) => event.toolName === "hang")).toMatchObject({ status: "timeout" });
    expect(results.find((event) => event.toolName === "hang")?.result).toContain(
      "No progress for 1s (idle timeout)",
    );
    expect(results.find((event) => event.toolName === "sleep")).toMatchObject({ status: "complete" });
    expect(events.at(-1)?.type).toBe("turn_complete");
  });
});

describe("keep-alive", () => {
  it("sends ping events without an id while a tool runs silently", async () => {
    const handle = await server({ PING_INTERVAL_MS: "150" });
    // 3 s of silence: pings still fall between tool_start and tool_result when tool_start is sent late
    const stream = await SseStream.start(handle.baseUrl, { message: '/tool sleep {"ms":3000}' });
    await stream.untilEnd();
    const pings = stream.messages.filter((message) => message.event === "ping");
    expect(pings.length).toBeGreaterThanOrEqual(2);
    for (const ping of pings) {
      expect(ping.id).toBeUndefined();
      expect(Object.keys(JSON.parse(ping.data) as object)).toEqual(["at"]);
    }
    const kinds = stream.messages.map((message) => message.event);
    const silent = kinds.slice(kinds.indexOf("tool_start") + 1, kinds.indexOf("tool_result"));
    expect(silent.filter((kind) => kind === "ping").length).toBeGreaterThanOrEqual(2);
    expect(stream.raw.join("")).toMatch(/\n\nevent: ping\ndata: \{"at":\d+\}\n\n/);
  });
});

describe("client disconnect", () => {
  it("aborts the turn when the client goes away (ON_DISCONNECT=abort, no grace)", async () => {
    const handle = await server();
    const stream = await SseStream.start(handle.baseUrl, { message: "/tool hang {}" });
    await stream.next((event) => event.type === "tool_start");
    const turnId = turnIdOf(stream);
    await stream.cancel();

    await eventually(async () => expect(await activeTurnIds(handle)).not.toContain(turnId));
    const replay = await SseStream.open(`${handle.baseUrl}/api/turns/${turnId}/events`);
    const events = await replay.untilEnd();
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "disconnect" });
    const { blocks } = await history(handle, sessionIdOf(stream));
    expect(blocks.at(-1)).toMatchObject({
      kind: "tool_response",
      result: "[CANCELLED] Turn aborted: the client disconnected.",
    });
  });

  it("keeps the turn when a client reattaches within the grace period", async () => {
    // the turn outlives the grace period, so only the reattachment can keep it alive
    const handle = await server({ DISCONNECT_GRACE_MS: "2000" });
    const stream = await SseStream.start(handle.baseUrl, {
      message: '/tool sleep {"ms":4000}\n/then\nstill here',
    });
    await stream.next((event) => event.type === "tool_start");
    const turnId = turnIdOf(stream);
    const lastSeq = stream.events.at(-1)?.seq ?? 0;
    await stream.cancel();

    const reattached = await SseStream.open(`${handle.baseUrl}/api/turns/${turnId}/events`, {
      headers: { "Last-Event-ID": String(lastSeq) },
    });
    const events = await reattached.untilEnd();
    expect(events[0]?.seq).toBe(lastSeq + 1);
    expect(events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "end_turn" });
  });

  it("aborts after the grace period when nobody reattaches", async () => {
    // long enough for the next request to find the turn still running on a busy machine
    const handle = await server({ DISCONNECT_GRACE_MS: "3000" });
    const stream = await SseStream.start(handle.baseUrl, { message: "/tool hang {}" });
    await stream.next((event) => event.type === "tool_start");
    const turnId = turnIdOf(stream);
    await stream.cancel();
    expect(await activeTurnIds(handle)).toContain(turnId);
    await eventually(async () => expect(await activeTurnIds(handle)).not.toContain(turnId));
    const events = await (await SseStream.open(`${handle.baseUrl}/api/turns/${turnId}/events`)).untilEnd();
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "disconnect" });
  });

  it("lets the turn run on with ON_DISCONNECT=continue", async () => {
    const handle = await server({ ON_DISCONNECT: "continue" });
    const stream = await SseStream.start(handle.baseUrl, { message: '/tool sleep {"ms":400}\n/then\ndone' });
    await stream.next((event) => event.type === "tool_start");
    const turnId = turnIdOf(stream);
    await stream.cancel();
    const events = await (await SseStream.open(`${handle.baseUrl}/api/turns/${turnId}/events`)).untilEnd();
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
    expect(events.filter((event) => event.type === "tool_result")).toHaveLength(1);
  });
});

describe("crash and shutdown", () => {
  it("recovers after kill -9 mid-turn: valid history, no active turn, [INTERRUPTED] results", async () => {
    const first = await server();
    const stream = await SseStream.start(first.baseUrl, {
      message: '/tool echo {"text":"kept"}\n/tool hang {}\n/tool sleep {"ms":60000}',
    });
    await stream.next((event) => event.type === "tool_result");
    const turnId = turnIdOf(stream);
    const sessionId = sessionIdOf(stream);
    expect(await first.stop("SIGKILL")).toBe("SIGKILL");

    const second = await server({}, first.dataDir);
    expect(await activeTurnIds(second)).toEqual([]);
    const { blocks, turns } = await history(second, sessionId);
    expect(turns).toEqual([
      expect.objectContaining({ id: turnId, status: "interrupted", abortReason: "interrupted" }),
    ]);
    const responses = blocks.filter((block) => block.kind === "tool_response");
    expect(responses.map((block) => (block.kind === "tool_response" ? block.status : ""))).toEqual([
      "complete",
      "interrupted",
      "interrupted",
    ]);
    expect(responses[1]).toMatchObject({ result: expect.stringMatching(/^\[INTERRUPTED\] Tool "hang"/) });
    const calls = blocks.filter((block) => block.kind === "tool_call");
    expect(responses.map((block) => block.callId)).toEqual(calls.map((block) => block.callId));

    const events = await (await SseStream.open(`${second.baseUrl}/api/turns/${turnId}/events`)).untilEnd();
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "interrupted" });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));

    // the session goes on
    const next = await SseStream.start(second.baseUrl, { message: "hello again", sessionId });
    expect((await next.untilEnd()).at(-1)?.type).toBe("turn_complete");
  });

  it("delivers every final event of a wide batch to the client before the process exits", async () => {
    const handle = await server({ MAX_PARALLEL_TOOLS: "32" });
    // distinct inputs: twenty identical calls would (rightly) trip the loop detector
    const message = Array.from({ length: 20 }, (_, index) => `/tool sleep {"ms":${600_000 + index}}`).join(
      "\n",
    );
    const stream = await SseStream.start(handle.baseUrl, { message });
    await stream.next(() => stream.events.filter((event) => event.type === "tool_start").length === 20);
    const exitCode = handle.stop("SIGTERM");
    const events = await stream.untilEnd();
    expect(events.filter((event) => event.type === "tool_result")).toHaveLength(20);
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "shutdown" });
    expect(await exitCode).toBe(0);
    expect(handle.logs().join("\n")).not.toContain("MaxListenersExceededWarning");
  });

  it("ends active turns with reason shutdown on SIGTERM, closes the database and exits 0", async () => {
    const handle = await server();
    const stream = await SseStream.start(handle.baseUrl, {
      message: '/tool hang {}\n/tool echo {"text":"x"}',
    });
    await stream.next((event) => event.type === "tool_result");
    const sessionId = sessionIdOf(stream);
    const exitCode = handle.stop("SIGTERM");
    const events = await stream.untilEnd();
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "shutdown" });
    expect(await exitCode).toBe(0);

    // the database was closed cleanly: the WAL was checkpointed and removed, history valid when opened directly
    expect(existsSync(join(handle.dataDir, "reins.db-wal"))).toBe(false);
    const db = new BetterSqlite3(join(handle.dataDir, "reins.db"), { readonly: true });
    try {
      const turn = db.prepare("SELECT status, abort_reason FROM turns").get() as {
        status: string;
        abort_reason: string;
      };
      expect(turn).toEqual({ status: "aborted", abort_reason: "shutdown" });
      const statuses = storedBlocks(db, sessionId).flatMap((block) =>
        block.kind === "tool_response" ? [block.status] : [],
      );
      expect(statuses).toEqual(["cancelled", "complete"]);
    } finally {
      db.close();
    }
  });

  it("refuses a turn whose request arrives once shutdown has begun (503), and starts nothing", async () => {
    const handle = await server();
    // a turn that is running when SIGTERM comes, so shutdown has one to abort
    const running = await SseStream.start(handle.baseUrl, { message: "/tool hang {}" });
    await running.next((event) => event.type === "tool_start");
    // a request already on its way: its headers arrive before SIGTERM, its body after shutdown began
    const body = JSON.stringify({ message: '/tool sleep {"ms":60000}' });
    const socket = net.connect(handle.port, "127.0.0.1");
    await new Promise((resolve) => socket.once("connect", resolve));
    let answer = "";
    socket.on("data", (chunk: Buffer) => (answer += chunk.toString("utf8")));
    const socketClosed = new Promise((resolve) => socket.once("close", resolve));
    socket.write(
      "POST /api/sessions/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
    );
    const exitCode = handle.stop("SIGTERM");
    await eventually(() => expect(handle.logs().join("\n")).toContain('"msg":"shutting down"'), 10_000);
    socket.write(body);
    await socketClosed;

    expect(answer).toMatch(/^HTTP\/1\.1 503 /);
    expect(answer).toMatch(/\r\nretry-after: 5\r\n/i);
    expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toMatchObject({ code: "shutting_down" });
    expect((await running.untilEnd()).at(-1)).toMatchObject({ type: "turn_abort", reason: "shutdown" });
    expect(await exitCode).toBe(0);
    // the refused request left no turn behind: only the aborted one is stored
    const db = new BetterSqlite3(join(handle.dataDir, "reins.db"), { readonly: true });
    try {
      expect(db.prepare("SELECT status, abort_reason FROM turns").all()).toEqual([
        { status: "aborted", abort_reason: "shutdown" },
      ]);
    } finally {
      db.close();
    }
  });
});

describe("process ownership", () => {
  it("kills an exec process group that ignores SIGTERM before the server exits on SIGTERM", async () => {
    const root = mkdtempSync(join(tmpdir(), "reins-exec-root-"));
    try {
      const handle = await server({ SYSTEM_TOOLS: "exec", ALLOWED_ROOTS: root, EXEC_KILL_GRACE_MS: "300" });
      const stream = await SseStream.start(handle.baseUrl, {
        message: `/tool exec {"command":"trap '' TERM; sleep 47.123"}`,
      });
      await stream.next((event) => event.type === "tool_start");
      const group = await eventually(async () => {
        const shell = liveDescendants(handle.child.pid ?? -1).find((process) => process.command === "sh");
        if (!shell || !liveMembersOfGroup(shell.pgid).some((process) => process.command === "sleep")) {
          throw new Error("exec not running yet");
        }
        return shell.pgid;
      });
      expect(await handle.stop("SIGTERM")).toBe(0);
      expect(liveMembersOfGroup(group)).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("gives exec's process groups their whole kill grace at shutdown, however long, and still exits 0", async () => {
    const root = mkdtempSync(join(tmpdir(), "reins-exec-root-"));
    // longer than the 10 s the rest of a shutdown may take
    const graceMs = 10_500;
    try {
      const handle = await server({
        SYSTEM_TOOLS: "exec",
        ALLOWED_ROOTS: root,
        EXEC_KILL_GRACE_MS: String(graceMs),
      });
      const stream = await SseStream.start(handle.baseUrl, {
        message: `/tool exec {"command":"trap '' TERM; sleep 47.321"}`,
      });
      await stream.next((event) => event.type === "tool_start");
      // the shell ignores SIGTERM once it runs its sleep
      await eventually(async () => {
        const shell = liveDescendants(handle.child.pid ?? -1).find((process) => process.command === "sh");
        if (!shell || !liveMembersOfGroup(shell.pgid).some((process) => process.command === "sleep")) {
          throw new Error("exec not running yet");
        }
      });
      const stopping = Date.now();
      expect(await handle.stop("SIGTERM")).toBe(0);
      expect(Date.now() - stopping).toBeGreaterThanOrEqual(graceMs - 100);
      expect(handle.logs().join("\n")).not.toContain("shutdown deadline passed");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 30_000);

  it("refuses to start a second server on a DATA_DIR another one is using", async () => {
    const first = await server();
    const { code, stderr } = await runServerToExit({ DATA_DIR: first.dataDir });
    expect(code).toBe(1);
    expect(stderr).toContain("in use by another reins process");
    // the first server is untouched
    const stream = await SseStream.start(first.baseUrl, { message: "still here" });
    expect((await stream.untilEnd()).at(-1)?.type).toBe("turn_complete");
  });
});
