/**
 * Session titles and turn models are plain SQLite TEXT columns, which hold UTF-8: a string with a lone UTF-16
 * surrogate (valid in a JSON string, `"\ud800"`) has no UTF-8 form, so it was stored as bytes no decoder reads
 * back (EDA080) and every later read said `\ufffd\ufffd\ufffd`. On the real server over a real socket: an
 * explicit title or a model with one is a 400 naming the field; an automatic title (a session's first
 * message, from /api/sessions/stream or /api/chat) has each lone surrogate replaced by U+FFFD, so the title
 * every route gives is the same; astral characters (surrogate pairs) round-trip unchanged.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, sessionIdOf } from "../helpers/sse.js";

type SessionJson = { sessionId: string; title: string | null };
type ErrorJson = { error: string; code: string; issues?: { path: string; message: string }[] };

/** Lone surrogates, each as JSON.stringify escapes it: a high one, a low one, a high one last. */
const LONE_SURROGATES = ["t\ud800", "\udc00 at the start", "ends high \udbff", "a\udc00\ud800b"];

describe("session titles and lone UTF-16 surrogates", () => {
  let server: ServerHandle;

  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
  });

  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${server.baseUrl}/api${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    });
  const create = async (body: unknown = {}) => {
    const response = await call("POST", "/sessions", body);
    expect(response.status).toBe(201);
    return (await response.json()) as SessionJson;
  };
  /** The session as GET /api/sessions/:id and as the list give it: they must agree. */
  const readBack = async (sessionId: string) => {
    const got = (await (await call("GET", `/sessions/${sessionId}`)).json()) as SessionJson;
    const page = (await (await call("GET", "/sessions?limit=100")).json()) as { sessions: SessionJson[] };
    const listed = page.sessions.find((session) => session.sessionId === sessionId);
    expect(listed?.title).toBe(got.title);
    return got;
  };
  /** Runs one turn to its end; returns the session it ran in. */
  const runTurn = async (body: Record<string, unknown>) => {
    const stream = await SseStream.open(`${server.baseUrl}/api/sessions/stream`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    await stream.untilEnd();
    return sessionIdOf(stream);
  };
  const expectRefused = async (response: Response, path: string) => {
    expect(response.status).toBe(400);
    const body = (await response.json()) as ErrorJson;
    expect(body.code).toBe("invalid_request");
    expect(body.error).toContain(path);
    expect(body.error).toContain("well-formed Unicode");
    expect(body.issues?.map((issue) => issue.path)).toEqual([path]);
  };

  it.each(LONE_SURROGATES)("refuses to create a session titled %j, naming body.title", async (title) => {
    await expectRefused(await call("POST", "/sessions", { title }), "body.title");
  });

  it.each(LONE_SURROGATES)("refuses to rename a session to %j and keeps its title", async (title) => {
    const { sessionId } = await create({ title: "Before" });
    await expectRefused(await call("PATCH", `/sessions/${sessionId}`, { title }), "body.title");
    expect((await readBack(sessionId)).title).toBe("Before");
  });

  it("refuses a turn whose model has a lone surrogate, naming body.model, on both turn routes", async () => {
    await expectRefused(
      await call("POST", "/sessions/stream", { message: "hi", model: "m\ud800" }),
      "body.model",
    );
    const chat = await call("POST", "/chat", {
      id: "chat_bad_model",
      messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }],
      trigger: "submit-message",
      model: "m\udc00",
    });
    await expectRefused(chat, "body.model");
  });

  it("titles a session from a first message with lone surrogates as every later read does: U+FFFD each", async () => {
    const sessionId = await runTurn({ message: "Plan \ud800 the \udc00 launch" });
    const session = await readBack(sessionId);
    expect(session.title).toBe("Plan \ufffd the \ufffd launch");
    // the message itself is kept as sent (history blocks are JSON, which escapes it)
    const history = (await (await call("GET", `/sessions/${sessionId}/history`)).json()) as {
      blocks: { kind: string; role: string; text?: string }[];
    };
    expect(history.blocks.find((block) => block.role === "user")?.text).toBe("Plan \ud800 the \udc00 launch");

    // a session created untitled takes the same title from its first turn
    const untitled = await create();
    await runTurn({ sessionId: untitled.sessionId, message: "x\udbff" });
    expect((await readBack(untitled.sessionId)).title).toBe("x\ufffd");
  });

  it("titles a chat from a first message with a lone surrogate as every later read does", async () => {
    const response = await call("POST", "/chat", {
      id: "chat_lone_surrogate",
      messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "chat \ud83d here" }] }],
      trigger: "submit-message",
    });
    expect(response.status).toBe(200);
    await response.text();
    expect((await readBack("chat_lone_surrogate")).title).toBe("chat \ufffd here");
  });

  it("keeps astral characters (surrogate pairs) in titles and models unchanged", async () => {
    const title = "Launch 🚀 𝄞 notes";
    const created = await create({ title });
    expect(created.title).toBe(title);
    expect((await readBack(created.sessionId)).title).toBe(title);

    const renamed = await call("PATCH", `/sessions/${created.sessionId}`, { title: "Done ✅🎉" });
    expect(renamed.status).toBe(200);
    expect(((await renamed.json()) as SessionJson).title).toBe("Done ✅🎉");
    expect((await readBack(created.sessionId)).title).toBe("Done ✅🎉");

    // an automatic title is cut to 80 code points: an emoji at the cut stays whole
    const message = `${"a".repeat(79)}😀 and more`;
    const sessionId = await runTurn({ message, model: "scripted-🚀" });
    expect((await readBack(sessionId)).title).toBe(`${"a".repeat(79)}😀`);
    const history = (await (await call("GET", `/sessions/${sessionId}/history`)).json()) as {
      turns: { model: string }[];
    };
    expect(history.turns.map((turn) => turn.model)).toEqual(["scripted-🚀"]);
  });
});
