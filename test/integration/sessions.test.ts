/**
 * The sessions API (docs/semantics.md#sessions-and-usage) on the real server over a real socket, with two
 * principals: create, list (paging 45 sessions by 20, newest activity first, a new turn moving a session to
 * the front), get, rename, delete (409 while a turn runs, gone afterwards, its rows gone from the database
 * file), 404 for another principal on every route, 400 naming a bad limit, cursor or title, and history paged
 * by turn.
 */
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, turnIdOf } from "../helpers/sse.js";

const ALICE = "alice-token-0001";
const BOB = "bob-token-000002";

type SessionJson = {
  sessionId: string;
  agentId: string;
  title: string | null;
  createdAt: number;
  updatedAt: number;
  turnCount: number;
  running: boolean;
};

describe("the sessions API", () => {
  let server: ServerHandle;

  beforeAll(async () => {
    server = await startServer({ env: { AUTH_TOKENS: `alice:${ALICE},bob:${BOB}` } });
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
  });

  const call = (method: string, path: string, token = ALICE, body?: unknown) =>
    fetch(`${server.baseUrl}/api${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const create = async (body: unknown = {}, token = ALICE) => {
    const response = await call("POST", "/sessions", token, body);
    expect(response.status).toBe(201);
    return (await response.json()) as { sessionId: string; agentId: string; title: string | null };
  };
  /** Runs one turn in the session to its end. */
  const runTurn = async (sessionId: string, message: string, token = ALICE) => {
    const stream = await SseStream.open(`${server.baseUrl}/api/sessions/stream`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ sessionId, message }),
    });
    await stream.untilEnd();
    return turnIdOf(stream);
  };
  const list = async (query = "", token = ALICE) => {
    const response = await call("GET", `/sessions${query}`, token);
    expect(response.status).toBe(200);
    return (await response.json()) as { sessions: SessionJson[]; nextCursor: string | null };
  };

  it("creates, gets, renames; the first message titles an untitled session", async () => {
    const created = await create({ title: "Planning" });
    expect(created).toMatchObject({ agentId: "default", title: "Planning" });
    const untitled = await create();
    expect(untitled.title).toBeNull();
    const message = `Please summarise ${"the quarterly report ".repeat(6)}`;
    await runTurn(untitled.sessionId, message);

    const got = (await (await call("GET", `/sessions/${untitled.sessionId}`)).json()) as SessionJson;
    expect(got).toMatchObject({ title: message.slice(0, 80), turnCount: 1, running: false });

    const renamed = await call("PATCH", `/sessions/${created.sessionId}`, ALICE, { title: "Q3 plan" });
    expect(renamed.status).toBe(200);
    expect(await renamed.json()).toMatchObject({ sessionId: created.sessionId, title: "Q3 plan" });
    await runTurn(created.sessionId, "hello");
    const after = (await (await call("GET", `/sessions/${created.sessionId}`)).json()) as SessionJson;
    expect(after.title).toBe("Q3 plan");
  });

  it("takes any agent id as a label when no agents are configured, as a turn does", async () => {
    const created = await call("POST", "/sessions", ALICE, { agentId: "helper" });
    expect(created.status).toBe(201);
    const { sessionId, agentId } = (await created.json()) as SessionJson;
    expect(agentId).toBe("helper");
    // a turn runs in it (as the built-in agent, under that name); another label is another agent
    await runTurn(sessionId, "hello");
    const got = (await (await call("GET", `/sessions/${sessionId}`)).json()) as SessionJson;
    expect(got).toMatchObject({ agentId: "helper", turnCount: 1 });
    const other = await call("POST", "/sessions/stream", ALICE, {
      message: "hi",
      sessionId,
      agentId: "other",
    });
    expect(other.status).toBe(409);
    expect(await other.json()).toMatchObject({ code: "agent_mismatch" });
  });

  it("refuses bad input, naming the field", async () => {
    for (const [query, field] of [
      ["?limit=0", "limit"],
      ["?limit=101", "limit"],
      ["?limit=abc", "limit"],
      ["?cursor=not-a-cursor", "cursor"],
    ] as const) {
      const response = await call("GET", `/sessions${query}`);
      expect(response.status, query).toBe(400);
      expect(((await response.json()) as { error: string }).error, query).toContain(field);
    }
    const { sessionId } = await create();
    for (const title of ["", "x".repeat(201)]) {
      const response = await call("PATCH", `/sessions/${sessionId}`, ALICE, { title });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: string }).error).toContain("title");
    }
    const history = await call("GET", `/sessions/${sessionId}/history?limit=500`);
    expect(history.status).toBe(400);
    expect(((await history.json()) as { error: string }).error).toContain("limit");
  });

  it("pages 45 sessions by 20 (20, 20, 5), newest activity first, no duplicates; a new turn moves one to the front", async () => {
    // Bob's sessions are only these 45
    const ids: string[] = [];
    for (let index = 0; index < 45; index++) ids.push((await create({}, BOB)).sessionId);
    const pages: SessionJson[][] = [];
    let cursor: string | null = null;
    do {
      const page: { sessions: SessionJson[]; nextCursor: string | null } = await list(
        `?limit=20${cursor ? `&cursor=${cursor}` : ""}`,
        BOB,
      );
      pages.push(page.sessions);
      cursor = page.nextCursor;
    } while (cursor);
    expect(pages.map((page) => page.length)).toEqual([20, 20, 5]);
    const listed = pages.flat();
    expect(new Set(listed.map((session) => session.sessionId)).size).toBe(45);
    expect(new Set(listed.map((session) => session.sessionId))).toEqual(new Set(ids));
    for (let index = 1; index < listed.length; index++) {
      const [newer, older] = [listed[index - 1] as SessionJson, listed[index] as SessionJson];
      expect(newer.updatedAt).toBeGreaterThanOrEqual(older.updatedAt);
    }
    // Alice sees none of Bob's
    const alices = await list("?limit=100");
    expect(alices.sessions.some((session) => ids.includes(session.sessionId))).toBe(false);

    const oldest = listed.at(-1) as SessionJson;
    await runTurn(oldest.sessionId, "back to the front", BOB);
    const first = await list("?limit=1", BOB);
    expect(first.sessions[0]).toMatchObject({ sessionId: oldest.sessionId, turnCount: 1 });
  });

  it("answers 404 to another principal on every route, like an unknown session", async () => {
    const { sessionId } = await create({ title: "secret" });
    for (const [method, path, body] of [
      ["GET", `/sessions/${sessionId}`, undefined],
      ["PATCH", `/sessions/${sessionId}`, { title: "mine now" }],
      ["DELETE", `/sessions/${sessionId}`, undefined],
      ["GET", `/sessions/${sessionId}/history?limit=5`, undefined],
    ] as const) {
      const theirs = await call(method, path, BOB, body);
      expect(theirs.status, `${method} ${path}`).toBe(404);
      const unknown = await call(method, path.replace(sessionId, "ses_unknown"), ALICE, body);
      expect(unknown.status).toBe(404);
      expect(await theirs.json()).toMatchObject({ code: "session_not_found" });
    }
    expect(((await (await call("GET", `/sessions/${sessionId}`)).json()) as SessionJson).title).toBe(
      "secret",
    );
  });

  it("deletes: 409 while a turn runs, then 200, then 404; its events and trace leave the database", async () => {
    const { sessionId } = await create();
    const firstTurn = await runTurn(sessionId, '/tool echo {"text":"kept until deleted"}');
    const stream = await SseStream.open(`${server.baseUrl}/api/sessions/stream`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ALICE}` },
      body: JSON.stringify({ sessionId, message: '/tool sleep {"ms":60000}' }),
    });
    await stream.next((event) => event.type === "tool_start");
    const running = (await (await call("GET", `/sessions/${sessionId}`)).json()) as SessionJson;
    expect(running.running).toBe(true);
    const busy = await call("DELETE", `/sessions/${sessionId}`);
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ code: "session_busy" });

    const secondTurn = turnIdOf(stream);
    expect((await call("POST", `/turns/${secondTurn}/abort`)).status).toBe(200);
    await stream.untilEnd();
    const deleted = await call("DELETE", `/sessions/${sessionId}`);
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toEqual({ ok: true, sessionId });
    expect((await call("GET", `/sessions/${sessionId}`)).status).toBe(404);
    expect((await call("GET", `/sessions/${sessionId}/history`)).status).toBe(404);
    expect((await call("GET", `/turns/${firstTurn}/trace`)).status).toBe(404);
    expect((await call("DELETE", `/sessions/${sessionId}`)).status).toBe(404);

    // the server holds the database exclusively: read the file once it has stopped
    await server.stop();
    const db = new BetterSqlite3(join(server.dataDir, "reins.db"), { readonly: true });
    try {
      const count = (sql: string, ...params: string[]) =>
        (db.prepare(sql).get(...params) as { count: number }).count;
      const turnIds = [firstTurn, secondTurn];
      for (const turnId of turnIds) {
        expect(count("SELECT COUNT(*) AS count FROM turn_events WHERE turn_id = ?", turnId)).toBe(0);
        expect(count("SELECT COUNT(*) AS count FROM turn_trace WHERE turn_id = ?", turnId)).toBe(0);
        expect(count("SELECT COUNT(*) AS count FROM turns WHERE id = ?", turnId)).toBe(0);
      }
      expect(count("SELECT COUNT(*) AS count FROM history_blocks WHERE session_id = ?", sessionId)).toBe(0);
      expect(count("SELECT COUNT(*) AS count FROM sessions WHERE id = ?", sessionId)).toBe(0);
      expect(count("SELECT COUNT(*) AS count FROM sessions")).toBeGreaterThan(40);
    } finally {
      db.close();
    }
    server = await startServer({
      env: { AUTH_TOKENS: `alice:${ALICE},bob:${BOB}` },
      dataDir: server.dataDir,
    });
  });

  it("pages history by turn, newest first, each page oldest first", async () => {
    const { sessionId } = await create();
    const turnIds: string[] = [];
    for (let index = 1; index <= 5; index++) turnIds.push(await runTurn(sessionId, `message ${index}`));
    type HistoryJson = {
      turns: { id: string }[];
      blocks: { turnId: string; kind: string }[];
      nextBefore?: string | null;
    };
    const whole = (await (await call("GET", `/sessions/${sessionId}/history`)).json()) as HistoryJson;
    expect(whole.turns.map((turn) => turn.id)).toEqual(turnIds);
    expect(whole.nextBefore).toBeUndefined();

    const first = (await (await call("GET", `/sessions/${sessionId}/history?limit=2`)).json()) as HistoryJson;
    expect(first.turns.map((turn) => turn.id)).toEqual(turnIds.slice(3));
    expect(new Set(first.blocks.map((block) => block.turnId))).toEqual(new Set(turnIds.slice(3)));
    const second = (await (
      await call("GET", `/sessions/${sessionId}/history?limit=2&before=${first.nextBefore}`)
    ).json()) as HistoryJson;
    expect(second.turns.map((turn) => turn.id)).toEqual(turnIds.slice(1, 3));
    const third = (await (
      await call("GET", `/sessions/${sessionId}/history?limit=2&before=${second.nextBefore}`)
    ).json()) as HistoryJson;
    expect(third.turns.map((turn) => turn.id)).toEqual(turnIds.slice(0, 1));
    expect(third.nextBefore).toBeNull();
    const unknown = await call("GET", `/sessions/${sessionId}/history?before=turn_unknown`);
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: string }).error).toContain("before");
  });
});
