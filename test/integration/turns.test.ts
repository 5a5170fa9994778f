/**
 * Turns over the real server: a real process on a real port, a real SQLite file, a real SSE parser.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import type { HistoryBlock } from "../../src/history/model.js";
import { eventually } from "../helpers/eventually.js";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, sessionIdOf, turnIdOf } from "../helpers/sse.js";

type History = {
  blocks: HistoryBlock[];
  turns: { id: string; status: string; abortReason: string | null }[];
};

describe("turns over HTTP", () => {
  let server: ServerHandle;

  beforeAll(async () => {
    server = await startServer({ env: { PROGRESS_AFTER_MS: "200", PROGRESS_INTERVAL_MS: "200" } });
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
  });

  const history = async (sessionId: string): Promise<History> =>
    (await (await fetch(`${server.baseUrl}/api/sessions/${sessionId}/history`)).json()) as History;

  const ofType = <T extends TurnEvent["type"]>(events: TurnEvent[], type: T) =>
    events.filter((event): event is Extract<TurnEvent, { type: T }> => event.type === type);

  it("streams a plain turn: start, the answer word by word, complete", async () => {
    const stream = await SseStream.start(server.baseUrl, { message: "hello world" });
    expect(stream.response.headers.get("content-type")).toBe("text/event-stream");
    expect(stream.response.headers.get("x-accel-buffering")).toBe("no");
    expect(stream.response.headers.get("x-frame-options")).toBe("DENY");
    expect(stream.response.headers.get("content-security-policy")).toBe("frame-ancestors 'none'");
    const events = await stream.untilEnd();

    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    const text = ofType(events, "text_delta")
      .map((event) => event.text)
      .join("");
    expect(text).toBe("You said: hello world");
    expect(events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "end_turn", toolCallCount: 0 });
    const { blocks } = await history(sessionIdOf(stream));
    expect(blocks.map((block) => [block.role, block.kind])).toEqual([
      ["user", "text"],
      ["assistant", "text"],
    ]);
  });

  it("runs a tool turn and continues the same session in a second turn", async () => {
    const first = await SseStream.start(server.baseUrl, {
      message: '/tool echo {"text":"ping"}\n/then\nGot it.',
    });
    const events = await first.untilEnd();
    expect(first.types()).toEqual([
      "turn_start",
      "tool_start",
      "tool_result",
      // the answer's words, coalesced into one event (DELTA_COALESCE_MS / _CHARS)
      "text_delta",
      "turn_complete",
    ]);
    expect(ofType(events, "tool_result")[0]).toMatchObject({
      toolName: "echo",
      result: "ping",
      isError: false,
      attempts: 1,
    });
    expect(ofType(events, "tool_start")[0]).toMatchObject({ timeoutMs: 120_000, idleTimeoutMs: 0 });

    const sessionId = sessionIdOf(first);
    const second = await SseStream.start(server.baseUrl, { message: "again", sessionId });
    await second.untilEnd();
    expect(sessionIdOf(second)).toBe(sessionId);
    const { blocks, turns } = await history(sessionId);
    expect(turns.map((turn) => turn.status)).toEqual(["completed", "completed"]);
    expect(blocks.filter((block) => block.kind === "tool_response")).toHaveLength(1);
  });

  it("times out a hanging tool and the turn still completes with the model's answer", async () => {
    const stream = await SseStream.start(server.baseUrl, {
      message: '/tool hang {"_meta":{"timeout":300}}\n/tool echo {"text":"fine"}',
    });
    const events = await stream.untilEnd();
    // tool_start shows the input the tool runs with: `_meta` is reins', not the tool's
    expect(
      ofType(events, "tool_start").map(({ toolName, input, timeoutMs }) => ({ toolName, input, timeoutMs })),
    ).toEqual([
      { toolName: "hang", input: {}, timeoutMs: 300 },
      { toolName: "echo", input: { text: "fine" }, timeoutMs: 120_000 },
    ]);
    const timeout = ofType(events, "tool_timeout")[0];
    expect(timeout).toMatchObject({ toolName: "hang", kind: "total", timeoutMs: 300 });
    const results = ofType(events, "tool_result");
    const hang = results.find((result) => result.toolName === "hang");
    expect(hang?.status).toBe("timeout");
    expect(hang?.result).toMatch(/^\[TIMEOUT\] Tool "hang" exceeded wall-clock limit of 0\.3s/);
    expect(results.find((result) => result.toolName === "echo")?.result).toBe("fine");
    expect(events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "end_turn", toolCallCount: 2 });
    const answer = ofType(events, "text_delta")
      .map((event) => event.text)
      .join("");
    expect(answer).toContain('hang: [TIMEOUT] Tool "hang"');
    expect(answer).toContain("echo: fine");
  });

  it("sends tool_progress with growing elapsedMs and the last heartbeat message", async () => {
    const stream = await SseStream.start(server.baseUrl, {
      // 2 s for progress every 200 ms: two of them come even when a busy machine stalls the first
      message: '/tool sleep {"ms":2000,"heartbeatMs":100}',
    });
    const events = await stream.untilEnd();
    const progress = ofType(events, "tool_progress");
    expect(progress.length).toBeGreaterThanOrEqual(2);
    for (const [index, event] of progress.entries()) {
      expect(event.status).toBe("running");
      expect(event.toolName).toBe("sleep");
      if (index > 0) expect(event.elapsedMs).toBeGreaterThan(progress[index - 1]!.elapsedMs);
    }
    expect(progress[0]!.elapsedMs).toBeGreaterThanOrEqual(200);
    expect(progress.at(-1)?.message).toMatch(/^slept \d+ms of 2000ms$/);
    const resultIndex = events.findIndex((event) => event.type === "tool_result");
    expect(events.findIndex((event) => event.type === "tool_progress")).toBeLessThan(resultIndex);
  });

  it("aborts during a three-call batch: one result per call, real ones kept, in call order", async () => {
    const stream = await SseStream.start(server.baseUrl, {
      message: '/tool echo {"text":"first"}\n/tool sleep {"ms":30000}\n/tool hang {}',
    });
    await stream.next((event) => event.type === "tool_result" && event.toolName === "echo");
    const turnId = turnIdOf(stream);

    const active = (await (await fetch(`${server.baseUrl}/api/turns/active`)).json()) as {
      turns: { turnId: string; runningTools: { toolName: string }[]; toolCallCount: number }[];
    };
    const listed = active.turns.find((turn) => turn.turnId === turnId);
    expect(listed?.runningTools.map((tool) => tool.toolName).sort()).toEqual(["hang", "sleep"]);
    expect(listed?.toolCallCount).toBe(3);

    const abort = await fetch(`${server.baseUrl}/api/turns/${turnId}/abort`, { method: "POST" });
    expect(abort.status).toBe(200);
    expect(await abort.json()).toEqual({ ok: true, turnId });
    const events = await stream.untilEnd();
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "user" });
    expect(
      events.filter((event) => event.type === "turn_abort" || event.type === "turn_complete"),
    ).toHaveLength(1);

    const { blocks, turns } = await history(sessionIdOf(stream));
    const calls = blocks.filter((block) => block.kind === "tool_call");
    const responses = blocks.filter((block) => block.kind === "tool_response");
    expect(responses.map((block) => block.callId)).toEqual(calls.map((block) => block.callId));
    expect(
      responses.map((block) => (block.kind === "tool_response" ? [block.status, block.result] : [])),
    ).toEqual([
      ["complete", "first"],
      ["cancelled", "[CANCELLED] Turn aborted by user."],
      ["cancelled", "[CANCELLED] Turn aborted by user."],
    ]);
    expect(turns.at(-1)).toMatchObject({ status: "aborted", abortReason: "user" });

    const again = await fetch(`${server.baseUrl}/api/turns/${turnId}/abort`, { method: "POST" });
    expect(again.status).toBe(404);
    const after = (await (await fetch(`${server.baseUrl}/api/turns/active`)).json()) as {
      turns: { turnId: string }[];
    };
    expect(after.turns.map((turn) => turn.turnId)).not.toContain(turnId);
  });

  it("answers 404 with the contract's message for an unknown turn", async () => {
    const response = await fetch(`${server.baseUrl}/api/turns/turn_doesnotexist/abort`, { method: "POST" });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: "Turn not found or already completed" });
  });

  it("replays exactly the events after Last-Event-ID, then follows the live turn", async () => {
    const stream = await SseStream.start(server.baseUrl, {
      message: '/tool echo {"text":"a"}\n/tool sleep {"ms":600}\n/then\nfinished now',
    });
    await stream.next((event) => event.type === "tool_result");
    const turnId = turnIdOf(stream);
    const follower = await SseStream.open(`${server.baseUrl}/api/turns/${turnId}/events`, {
      headers: { "Last-Event-ID": "2" },
    });
    const original = await stream.untilEnd();
    const followed = await follower.untilEnd();
    expect(followed.map((event) => event.seq)).toEqual(
      original.filter((event) => event.seq > 2).map((event) => event.seq),
    );
    expect(followed).toEqual(original.slice(2));

    const replay = await SseStream.open(`${server.baseUrl}/api/turns/${turnId}/events?lastEventId=4`);
    expect(await replay.untilEnd()).toEqual(original.slice(4));
    const sseIds = replay.messages.map((message) => message.id);
    expect(sseIds).toEqual(original.slice(4).map((event) => String(event.seq)));
  });

  it("sends a live turn's events only past a Last-Event-ID beyond them, and closes at its end", async () => {
    const stream = await SseStream.start(server.baseUrl, {
      message: '/tool sleep {"ms":400}\n/then\nfinished now',
    });
    await stream.next((event) => event.type === "tool_start");
    const turnId = turnIdOf(stream);
    // a stale or made-up id: the client says it has events the turn has not even written yet
    const ahead = await SseStream.open(`${server.baseUrl}/api/turns/${turnId}/events`, {
      headers: { "Last-Event-ID": "1000" },
    });
    const original = await stream.untilEnd();
    expect(original.at(-1)?.seq).toBeLessThan(1000);
    expect(await ahead.untilEnd()).toEqual([]);
  });

  it("answers HEAD of a running turn's stream with its headers, holding no follower", async () => {
    const stream = await SseStream.start(server.baseUrl, { message: "/tool hang {}" });
    await stream.next((event) => event.type === "tool_start");
    const turnId = turnIdOf(stream);
    const eventsUrl = `${server.baseUrl}/api/turns/${turnId}/events`;
    const chatUrl = `${server.baseUrl}/api/chat/${sessionIdOf(stream)}/stream`;
    for (const [url, contentType] of [
      [eventsUrl, "text/event-stream"],
      [chatUrl, "text/event-stream"],
    ] as const) {
      const head = await fetch(url, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(head.headers.get("content-type")).toContain(contentType);
    }
    // the one real client leaves: with ON_DISCONNECT=abort the turn ends, no HEAD keeping it alive
    await stream.cancel();
    await eventually(async () => {
      const { turns } = (await (await fetch(`${server.baseUrl}/api/turns/active`)).json()) as {
        turns: { turnId: string }[];
      };
      expect(turns.map((turn) => turn.turnId)).not.toContain(turnId);
    });
    const replay = await SseStream.open(`${eventsUrl}?lastEventId=2`);
    expect((await replay.untilEnd()).at(-1)).toMatchObject({ type: "turn_abort", reason: "disconnect" });
  });

  it("refuses a second turn on a session that has one running", async () => {
    const stream = await SseStream.start(server.baseUrl, { message: "/tool hang {}" });
    await stream.next((event) => event.type === "tool_start");
    const response = await fetch(`${server.baseUrl}/api/sessions/stream`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "hi", sessionId: sessionIdOf(stream) }),
    });
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ code: "session_busy" });
    await fetch(`${server.baseUrl}/api/turns/${turnIdOf(stream)}/abort`, { method: "POST" });
    await stream.untilEnd();
  });
});
