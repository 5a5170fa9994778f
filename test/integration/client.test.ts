/**
 * The typed client (`reins/client`, src/client) against the real server on a real socket: a turn
 * iterated to its terminal event; a connection cut mid-turn (through a loopback TCP proxy whose sockets
 * the test destroys) resumed with Last-Event-ID with no event lost or repeated; abort; cancel a tool;
 * approve a waiting call of an agent configured through AGENTS_FILE; sessions CRUD with paging;
 * refusals as `ReinsApiError` with the server's code; AbortSignal on a stream and on a request; and,
 * when `npm run build` has run, the built `dist/client` with its declarations.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReinsApiError, ReinsClient, type TurnEvent } from "../../src/client/index.js";
import { PROJECT_ROOT, startServer, type ServerHandle } from "../helpers/server.js";

const ALICE = "alice-token-0001";
const BOB = "bob-token-000002";
const STREAM_TIMEOUT_MS = 30_000;
/** Longer than the progress interval: the turn emits events while the client is away. */
const RECONNECT_DELAY_MS = 300;

/** A loopback TCP proxy to the server whose open connections the test can cut at once. */
class CuttableProxy {
  connections = 0;
  private readonly sockets = new Set<Socket>();
  private constructor(private readonly server: Server) {}

  static async start(targetPort: number): Promise<CuttableProxy> {
    const server = createServer();
    const proxy = new CuttableProxy(server);
    server.on("connection", (client) => {
      proxy.connections += 1;
      const upstream = connect(targetPort, "127.0.0.1");
      for (const socket of [client, upstream]) {
        proxy.sockets.add(socket);
        socket.on("close", () => proxy.sockets.delete(socket));
        socket.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  get baseUrl(): string {
    const address = this.server.address();
    if (address === null || typeof address === "string") throw new Error("proxy not listening");
    return `http://127.0.0.1:${address.port}`;
  }

  /** Destroys every open connection, both ways: the client sees its stream break mid-body. */
  cut(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Pulls events until one matches; throws if the stream ends first. */
async function until(
  events: AsyncIterator<TurnEvent>,
  matches: (event: TurnEvent) => boolean,
): Promise<TurnEvent> {
  for (;;) {
    const next = await events.next();
    if (next.done) throw new Error("the stream ended before the expected event");
    if (matches(next.value)) return next.value;
  }
}

async function rest(events: AsyncIterator<TurnEvent>): Promise<TurnEvent[]> {
  const collected: TurnEvent[] = [];
  for (let next = await events.next(); !next.done; next = await events.next()) collected.push(next.value);
  return collected;
}

async function all(events: AsyncIterable<TurnEvent>): Promise<TurnEvent[]> {
  const collected: TurnEvent[] = [];
  for await (const event of events) collected.push(event);
  return collected;
}

/** A rejection of `promise` as a ReinsApiError (fails the test when it is anything else). */
async function apiErrorOf(promise: Promise<unknown>): Promise<ReinsApiError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ReinsApiError);
  return error as ReinsApiError;
}

const seqsOf = (events: TurnEvent[]) => events.map((event) => event.seq);
const oneToN = (count: number) => Array.from({ length: count }, (_, index) => index + 1);

/** `npm run build` (tsc over src/) takes well under a minute even on a busy machine. */
const BUILD_LIMIT_MS = 180_000;

describe("reins/client against the real server", () => {
  let server: ServerHandle;
  let directory: string;
  let alice: ReinsClient;
  let bob: ReinsClient;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), "reins-client-"));
    const agentsFile = join(directory, "agents.json");
    writeFileSync(
      agentsFile,
      JSON.stringify({
        agents: {
          worker: { provider: "scripted", tools: ["*"] },
          careful: { provider: "scripted", tools: ["*"], approval: { echo: "always", "*": "never" } },
        },
        defaultAgent: "worker",
      }),
    );
    server = await startServer({
      env: {
        AGENTS_FILE: agentsFile,
        AUTH_TOKENS: `alice:${ALICE},bob:${BOB}`,
        // a dropped stream leaves the turn running long enough to be resumed
        DISCONNECT_GRACE_MS: "30000",
        // a sleeping tool reports progress every 100 ms: events keep coming while the client is cut off
        PROGRESS_AFTER_MS: "100",
        PROGRESS_INTERVAL_MS: "100",
      },
    });
    alice = new ReinsClient({ baseUrl: server.baseUrl, token: ALICE });
    bob = new ReinsClient({ baseUrl: server.baseUrl, token: BOB });
  }, 60_000);
  afterAll(async () => {
    await server?.stop("SIGKILL");
    server?.cleanup();
    rmSync(directory, { recursive: true, force: true });
  });

  it("starts a turn and yields its events, in order, up to the terminal one", async () => {
    const events = await all(alice.startTurn({ message: '/tool echo {"text":"ping"}\n/then\nGot it.' }));
    expect(events[0]).toMatchObject({ type: "turn_start", agentId: "worker" });
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
    expect(seqsOf(events)).toEqual(oneToN(events.length));
    expect(events.find((event) => event.type === "tool_result")).toMatchObject({ result: "ping" });
    // following the ended turn from the start replays exactly the same events
    expect(await all(alice.followTurn(events[0]!.turnId))).toEqual(events);
    // from the last one: the server answers 204 and the iteration simply ends
    expect(await all(alice.followTurn(events[0]!.turnId, { lastEventId: events.length }))).toEqual([]);
  });

  it(
    "resumes a connection cut mid-turn with Last-Event-ID: no event lost, none repeated",
    async () => {
      const proxy = await CuttableProxy.start(server.port);
      try {
        const client = new ReinsClient({
          baseUrl: proxy.baseUrl,
          token: ALICE,
          reconnectDelayMs: RECONNECT_DELAY_MS,
        });
        const events: TurnEvent[] = [];
        let cutAfterSeq = 0;
        for await (const event of client.startTurn({
          message: '/tool sleep {"ms":1500,"heartbeatMs":100}\n/then\nslept well',
        })) {
          events.push(event);
          if (cutAfterSeq === 0 && event.type === "tool_progress") {
            cutAfterSeq = event.seq;
            proxy.cut();
          }
        }
        expect(cutAfterSeq).toBeGreaterThan(0);
        // the client opened a second connection after the cut
        expect(proxy.connections).toBeGreaterThanOrEqual(2);
        // the sleep kept reporting progress: most of the turn came after the cut
        expect(events.filter((event) => event.seq > cutAfterSeq).length).toBeGreaterThanOrEqual(3);
        expect(seqsOf(events)).toEqual(oneToN(events.length));
        expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
        // exactly what the server logged for the turn
        expect(events).toEqual(await all(alice.followTurn(events[0]!.turnId)));
      } finally {
        await proxy.close();
      }
    },
    STREAM_TIMEOUT_MS,
  );

  it("aborts a running turn: the stream ends with turn_abort (reason user)", async () => {
    const stream = alice.startTurn({ message: "/tool hang {}" });
    const started = await until(stream, (event) => event.type === "tool_start");
    expect(await alice.abortTurn(started.turnId)).toEqual({ ok: true, turnId: started.turnId });
    const remaining = await rest(stream);
    expect(remaining.at(-1)).toMatchObject({ type: "turn_abort", reason: "user" });
    const error = await apiErrorOf(alice.abortTurn(started.turnId));
    expect(error).toMatchObject({ status: 404, code: "turn_not_found" });
  });

  it("cancels one tool call and the turn goes on to complete", async () => {
    const stream = alice.startTurn({ message: "/tool hang {}\n/then\nafter the cancel" });
    const started = await until(stream, (event) => event.type === "tool_start");
    if (started.type !== "tool_start") throw new Error("not a tool_start");
    expect(await alice.cancelTool(started.turnId, started.toolId)).toEqual({
      ok: true,
      turnId: started.turnId,
      toolId: started.toolId,
    });
    const remaining = await rest(stream);
    expect(remaining.find((event) => event.type === "tool_result")).toMatchObject({
      toolId: started.toolId,
      status: "cancelled",
    });
    expect(remaining.at(-1)).toMatchObject({ type: "turn_complete" });
  });

  it("approves a call waiting for approval, which then runs", async () => {
    const stream = alice.startTurn({ message: '/tool echo {"text":"hello"}', agentId: "careful" });
    const request = await until(stream, (event) => event.type === "tool_approval_request");
    if (request.type !== "tool_approval_request") throw new Error("not an approval request");
    const active = await alice.activeTurns();
    const listed = active.turns.find((turn) => turn.turnId === request.turnId);
    expect(listed?.pendingApprovals.map((pending) => pending.toolId)).toEqual([request.toolId]);
    // another principal sees nothing of it
    const refused = await apiErrorOf(
      bob.decideApproval(request.turnId, request.toolId, { decision: "approve" }),
    );
    expect(refused).toMatchObject({ status: 404, code: "turn_not_found" });

    expect(await alice.decideApproval(request.turnId, request.toolId, { decision: "approve" })).toEqual({
      ok: true,
      turnId: request.turnId,
      toolId: request.toolId,
      decision: "approve",
    });
    const remaining = await rest(stream);
    expect(remaining.find((event) => event.type === "tool_approval")).toMatchObject({ decision: "approve" });
    expect(remaining.find((event) => event.type === "tool_result")).toMatchObject({
      status: "complete",
      result: "hello",
    });
    const again = await apiErrorOf(
      alice.decideApproval(request.turnId, request.toolId, { decision: "approve" }),
    );
    expect(again).toMatchObject({ status: 409, code: "not_waiting" });
  });

  it("creates, reads, pages, renames and deletes sessions", async () => {
    const created = await alice.createSession({ title: "first", agentId: "careful" });
    expect(created).toMatchObject({ title: "first", agentId: "careful" });
    expect(await alice.getSession(created.sessionId)).toMatchObject({
      sessionId: created.sessionId,
      title: "first",
      turnCount: 0,
      running: false,
    });
    const renamed = await alice.renameSession(created.sessionId, "renamed");
    expect(renamed.title).toBe("renamed");

    const others = [await bob.createSession(), await bob.createSession(), await bob.createSession()];
    const page = await bob.listSessions({ limit: 2 });
    expect(page.sessions).toHaveLength(2);
    expect(page.nextCursor).not.toBeNull();
    const everyOne: string[] = [];
    for await (const session of bob.allSessions({ limit: 1 })) everyOne.push(session.sessionId);
    expect(everyOne.sort()).toEqual(others.map((session) => session.sessionId).sort());
    // Bob's sessions are not Alice's
    expect((await apiErrorOf(alice.getSession(others[0]!.sessionId))).code).toBe("session_not_found");

    const events = await all(alice.startTurn({ message: "hello there", sessionId: created.sessionId }));
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
    const history = await alice.getHistory(created.sessionId);
    expect(history.turns.map((turn) => turn.status)).toEqual(["completed"]);
    expect(history.blocks[0]).toMatchObject({ kind: "text", role: "user", text: "hello there" });

    expect(await alice.deleteSession(created.sessionId)).toEqual({ ok: true, sessionId: created.sessionId });
    const gone = await apiErrorOf(alice.getSession(created.sessionId));
    expect(gone).toMatchObject({ status: 404, code: "session_not_found" });
    expect(gone.message).toContain(created.sessionId);
  });

  it("lists the configured agents", async () => {
    const agents = await alice.listAgents();
    expect(agents.map((agent) => agent.id).sort()).toEqual(["careful", "worker"]);
    expect(agents.find((agent) => agent.id === "careful")?.approval).toMatchObject({ echo: "always" });
  });

  it("turns every refusal into a ReinsApiError with the server's status, code and message", async () => {
    const unknownAgent = await apiErrorOf(all(alice.startTurn({ message: "hi", agentId: "nobody" })));
    expect(unknownAgent).toMatchObject({ status: 400, code: "agent_not_found" });
    expect(unknownAgent.message).toContain("nobody");

    const anonymous = new ReinsClient({ baseUrl: server.baseUrl });
    expect(await apiErrorOf(anonymous.listSessions())).toMatchObject({ status: 401, code: "unauthorized" });

    const invalid = await apiErrorOf(alice.listSessions({ limit: 1000 }));
    expect(invalid).toMatchObject({ status: 400, code: "invalid_request" });
    expect(invalid.message).toContain("limit");

    const stream = alice.startTurn({ message: "/tool hang {}" });
    const started = await until(stream, (event) => event.type === "turn_start");
    if (started.type !== "turn_start") throw new Error("not a turn_start");
    const busy = await apiErrorOf(alice.deleteSession(started.sessionId));
    expect(busy).toMatchObject({ status: 409, code: "session_busy" });
    await alice.abortTurn(started.turnId);
    expect((await rest(stream)).at(-1)).toMatchObject({ type: "turn_abort" });
  });

  it("stops a stream and a request when their signal aborts", async () => {
    const controller = new AbortController();
    const stream = alice.startTurn({ message: "/tool hang {}" }, { signal: controller.signal });
    const started = await until(stream, (event) => event.type === "tool_start");
    const reason = new Error("the caller stopped listening");
    controller.abort(reason);
    await expect(stream.next()).rejects.toBe(reason);
    await alice.abortTurn(started.turnId).catch(() => undefined);

    const already = AbortSignal.abort(new Error("never sent"));
    await expect(alice.listSessions({ signal: already })).rejects.toThrow("never sent");
    await expect(all(alice.followTurn(started.turnId, { signal: already }))).rejects.toThrow("never sent");
  });

  const BUILT_CLIENT = join(PROJECT_ROOT, "dist/client/index.js");
  it("ships the built client with its type declarations", { timeout: BUILD_LIMIT_MS }, async () => {
    // `npm test` on a fresh clone has no dist/ yet (`.ci/run` builds before testing): build it as the package would
    if (!existsSync(BUILT_CLIENT)) {
      execFileSync("npm", ["run", "build"], { cwd: PROJECT_ROOT, stdio: "ignore", timeout: BUILD_LIMIT_MS });
    }
    expect(existsSync(join(PROJECT_ROOT, "dist/client/index.d.ts"))).toBe(true);
    const built = (await import(pathToFileURL(BUILT_CLIENT).href)) as { ReinsClient: typeof ReinsClient };
    const client = new built.ReinsClient({ baseUrl: server.baseUrl, token: ALICE });
    const events = await all(client.startTurn({ message: "built" }));
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
  });
});
