/**
 * The turn core's limits attacked for real (docs/semantics.md#isolation-and-limits), each through the real
 * server on a real socket with a real SSE parser and the real SQLite file: a 200 KB message of one-letter
 * words (delta coalescing), a turn writing more events than its cap, a tree of nested `delegate` calls (the
 * root's child-turn budget), tool input nested 5,000 levels deep, an abort while calls run (the closing
 * results' attempts and metrics), and the configurable loop detector and model retries.
 */
import BetterSqlite3 from "better-sqlite3";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import type { HistoryBlock, ToolResponseBlock } from "../../src/history/model.js";
import { FakeProvider } from "../support/fake-providers.js";
import { eventually } from "../helpers/eventually.js";
import { storedBlocks, storedEvents } from "../support/history-store.js";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, sessionIdOf, turnIdOf } from "../helpers/sse.js";

/** The longest message `POST /api/sessions/stream` accepts (characters). */
const MESSAGE_LIMIT_CHARS = 200_000;
/** The defaults of DELTA_COALESCE_MS and DELTA_COALESCE_CHARS. */
const COALESCE_WINDOW_MS = 30;
const COALESCE_MAX_CHARS = 2_048;

type History = {
  blocks: HistoryBlock[];
  turns: { id: string; status: string; abortReason: string | null }[];
};

const servers: ServerHandle[] = [];
const fakes: FakeProvider[] = [];

async function server(env: Record<string, string> = {}): Promise<ServerHandle> {
  const handle = await startServer({ env });
  servers.push(handle);
  return handle;
}

afterEach(async () => {
  for (const handle of servers.splice(0)) {
    await handle.stop("SIGKILL");
    handle.cleanup();
  }
  for (const fake of fakes.splice(0)) await fake.close();
});

const ofType = <T extends TurnEvent["type"]>(events: readonly TurnEvent[], type: T) =>
  events.filter((event): event is Extract<TurnEvent, { type: T }> => event.type === type);

async function history(handle: ServerHandle, sessionId: string): Promise<History> {
  return (await (await fetch(`${handle.baseUrl}/api/sessions/${sessionId}/history`)).json()) as History;
}

async function activeTurns(handle: ServerHandle): Promise<{ turnId: string; parentTurnId: string | null }[]> {
  const body = (await (await fetch(`${handle.baseUrl}/api/turns/active`)).json()) as {
    turns: { turnId: string; parentTurnId: string | null }[];
  };
  return body.turns;
}

/** The replay of a finished turn's event log. */
async function replay(handle: ServerHandle, turnId: string): Promise<TurnEvent[]> {
  return (await SseStream.open(`${handle.baseUrl}/api/turns/${turnId}/events`)).untilEnd();
}

/**
 * Stops the server (SIGTERM: it checkpoints and closes its database, which it holds exclusively while
 * it runs) and runs `read` on its SQLite file opened read-only.
 */
async function readDatabase<T>(handle: ServerHandle, read: (db: BetterSqlite3.Database) => T): Promise<T> {
  expect(await handle.stop("SIGTERM")).toBe(0);
  const db = new BetterSqlite3(join(handle.dataDir, "reins.db"), { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** Every call of the history with how many results it has. */
function resultsPerCall(blocks: readonly HistoryBlock[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const block of blocks) if (block.kind === "tool_call") counts.set(block.callId, 0);
  for (const block of blocks) {
    if (block.kind === "tool_response") counts.set(block.callId, (counts.get(block.callId) ?? 0) + 1);
  }
  return counts;
}

describe("a 200 KB message of one-letter words (delta coalescing)", () => {
  it("writes events and rows that grow with the answer's size, and the deltas add up to the whole answer", async () => {
    const handle = await server();
    const message = "a ".repeat(MESSAGE_LIMIT_CHARS / 2).trimEnd();
    const answer = `You said: ${message}`;
    const stream = await SseStream.start(handle.baseUrl, { message });
    const events = await stream.untilEnd(120_000);
    expect(events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "end_turn" });

    const deltas = ofType(events, "text_delta");
    expect(deltas.map((event) => event.text).join("")).toBe(answer);
    // One event per word was the attack (100,004 events for 100,002 words). Coalesced, a delta event is
    // sent when 2,048 characters have gathered (at most answer/2,048 of those), when a 30 ms window
    // ends (windows do not overlap: at most one per 30 ms of streaming, measured on the server's clock
    // and allowing for its millisecond rounding), or once at the end of the inference.
    const streamingMs = (deltas.at(-1)?.at ?? 0) - (deltas[0]?.at ?? 0);
    const bound =
      Math.floor(answer.length / COALESCE_MAX_CHARS) + Math.floor(streamingMs / (COALESCE_WINDOW_MS - 1)) + 2;
    expect(deltas.length).toBeLessThanOrEqual(bound);
    // "a " words: a send happens as soon as 2,048 characters have gathered
    expect(Math.max(...deltas.map((event) => event.text.length))).toBeLessThanOrEqual(COALESCE_MAX_CHARS + 1);

    const stored = (await history(handle, sessionIdOf(stream))).blocks.filter(
      (block) => block.kind === "text" && block.role === "assistant",
    );
    expect(stored.map((block) => (block.kind === "text" ? block.text : ""))).toEqual([answer]);

    const turnId = turnIdOf(stream);
    // the event log holds exactly the events sent
    const logged = await readDatabase(handle, (db) => storedEvents(db, turnId));
    expect(logged.map((event) => event.seq)).toEqual(events.map((event) => event.seq));
    expect(logged.length).toBeLessThanOrEqual(bound + 2);
  }, 180_000);
});

describe("the events cap (MAX_EVENTS_PER_TURN)", () => {
  it("ends a turn of many deltas with one turn_abort (limit) and lets it leave the active turns", async () => {
    const handle = await server({ MAX_EVENTS_PER_TURN: "100", DELTA_COALESCE_MS: "0" });
    const stream = await SseStream.start(handle.baseUrl, { message: "word ".repeat(500).trimEnd() });
    const events = await stream.untilEnd(60_000);
    const turnId = turnIdOf(stream);

    expect(events.filter((event) => event.type === "turn_abort" || event.type === "turn_complete")).toEqual([
      expect.objectContaining({ type: "turn_abort", reason: "limit" }),
    ]);
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "limit" });
    expect(events.length).toBeLessThanOrEqual(101);
    expect((await replay(handle, turnId)).map((event) => event.seq)).toEqual(
      events.map((event) => event.seq),
    );
    expect(await activeTurns(handle)).toEqual([]);
    const { turns } = await history(handle, sessionIdOf(stream));
    expect(turns).toEqual([expect.objectContaining({ id: turnId, status: "aborted", abortReason: "limit" })]);
  });

  it("ends a turn of many tool calls cleanly: every call has exactly one result, the replay ends with the abort", async () => {
    const handle = await server({ MAX_EVENTS_PER_TURN: "100" });
    // 1 + 2 × 80 events at least: the cap falls inside the batch, while a long sleep still runs
    const calls = Array.from({ length: 80 }, (_, index) => `/tool echo {"text":"call ${index}"}`);
    const stream = await SseStream.start(handle.baseUrl, {
      message: ['/tool sleep {"ms":20000}', ...calls, "/then", "never reached"].join("\n"),
    });
    const events = await stream.untilEnd(60_000);
    const turnId = turnIdOf(stream);

    const terminals = events.filter((event) => event.type === "turn_abort" || event.type === "turn_complete");
    expect(terminals).toEqual([expect.objectContaining({ type: "turn_abort", reason: "limit" })]);
    const logged = await replay(handle, turnId);
    expect(logged.at(-1)).toMatchObject({ type: "turn_abort", reason: "limit" });
    expect(logged.map((event) => event.seq)).toEqual(logged.map((_, index) => index + 1));
    await eventually(async () => expect(await activeTurns(handle)).toEqual([]));

    const { blocks } = await history(handle, sessionIdOf(stream));
    const counts = resultsPerCall(blocks);
    expect(counts.size).toBe(81);
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
    const sleep = blocks.find((block) => block.kind === "tool_response" && block.name === "sleep");
    expect(sleep).toMatchObject({ status: "cancelled" });
    const answers = blocks.filter((block) => block.kind === "text" && block.role === "assistant");
    expect(answers).toEqual([]);
    // every open call was closed, and every closing result was sent, after the cap
    const sentResults = new Set(ofType(logged, "tool_result").map((event) => event.toolId));
    const started = ofType(logged, "tool_start").map((event) => event.toolId);
    expect(started.every((toolId) => sentResults.has(toolId))).toBe(true);
  }, 90_000);

  it("sends the result of a call that ends just as the cap is reached, as history has it", async () => {
    const handle = await server({ MAX_EVENTS_PER_TURN: "100", MAX_STEPS: "60" });
    // one call a step: turn_start, then tool_start and tool_result per step — the 50th call's start is
    // event 100, the last under the cap, and its result the first event past it, before the abort runs
    const steps = Array.from({ length: 55 }, (_, index) => `/tool echo {"text":"step ${index}"}`);
    const stream = await SseStream.start(handle.baseUrl, {
      message: [...steps.flatMap((step) => [step, "/then"]), "never reached"].join("\n"),
    });
    const events = await stream.untilEnd(60_000);
    const turnId = turnIdOf(stream);
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "limit" });
    expect(ofType(events, "tool_start")).toHaveLength(50);

    const { blocks } = await history(handle, sessionIdOf(stream));
    const stored = blocks.filter(
      (block): block is Extract<HistoryBlock, ToolResponseBlock> => block.kind === "tool_response",
    );
    const sent = ofType(events, "tool_result");
    // the stream and the log say of every call what history says: the 50th call completed
    expect(sent.map((event) => [event.toolId, event.status])).toEqual(
      stored.map((block) => [block.callId, block.status]),
    );
    expect(sent.at(-1)).toMatchObject({ status: "complete" });
    expect((await replay(handle, turnId)).map((event) => event.seq)).toEqual(
      events.map((event) => event.seq),
    );
  }, 90_000);
});

/**
 * `fanOut` delegate calls per level, `levels` deep; each message is different (the loop detector must
 * not be what stops them), and a leaf sleeps a little so sibling child turns overlap.
 */
function delegateTree(fanOut: number, levels: number, path = "task"): string {
  if (levels === 0) return `${path}\n/tool sleep {"ms":200}`;
  const lines = Array.from({ length: fanOut }, (_, index) => {
    const child = delegateTree(fanOut, levels - 1, `${path}.${index}`);
    return `/tool delegate ${JSON.stringify({ agentId: "worker", message: child })}`;
  });
  return [path, ...lines].join("\n");
}

/** The most intervals open at one instant (an end at the same millisecond as a start comes first). */
function peakOverlap(intervals: readonly { startedAt: number; endedAt: number }[]): number {
  const moments = intervals.flatMap((interval) => [
    { at: interval.startedAt, change: 1 },
    { at: interval.endedAt, change: -1 },
  ]);
  moments.sort((left, right) => left.at - right.at || left.change - right.change);
  let open = 0;
  let peak = 0;
  for (const moment of moments) {
    open += moment.change;
    peak = Math.max(peak, open);
  }
  return peak;
}

type TurnRow = {
  id: string;
  parent_turn_id: string | null;
  started_at: number;
  ended_at: number;
  status: string;
};

/**
 * Sends a delegate tree through the server while polling /api/turns/active for the running child
 * turns; returns the root's events, the most children seen running at once, and the turns and tool
 * responses of every session from the database.
 */
async function runDelegateTree(fanOut: number, levels: number) {
  // a generous tool timeout only bounds how long a regression (calls waiting forever) takes to show
  const handle = await server({ TOOL_TIMEOUT_MS: "30000" });
  const message = delegateTree(fanOut, levels);
  expect(message.length).toBeLessThanOrEqual(MESSAGE_LIMIT_CHARS);
  const stream = await SseStream.start(handle.baseUrl, { message });
  let peakSeen = 0;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const children = (await activeTurns(handle)).filter((turn) => turn.parentTurnId !== null);
      peakSeen = Math.max(peakSeen, children.length);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  const events = await stream.untilEnd(180_000).finally(() => (polling = false));
  await poller;
  const rootId = turnIdOf(stream);
  const { blocks } = await history(handle, sessionIdOf(stream));
  const { turns, responses } = await readDatabase(handle, (db) => ({
    turns: db
      .prepare("SELECT id, parent_turn_id, started_at, ended_at, status FROM turns")
      .all() as TurnRow[],
    responses: storedBlocks(db).flatMap((block) =>
      block.kind === "tool_response" && block.name === "delegate" ? [block] : [],
    ),
  }));
  const children = turns.filter((turn) => turn.parent_turn_id !== null);
  const peakInDatabase = peakOverlap(
    children.map((turn) => ({ startedAt: turn.started_at, endedAt: turn.ended_at })),
  );
  return { message, events, rootId, blocks, turns, children, responses, peakSeen, peakInDatabase };
}

/** What every delegate call of the tree may end with: a child's answer or a readable refusal. */
function expectAnsweredOrRefused(responses: readonly ToolResponseBlock[]): void {
  expect(responses.length).toBeGreaterThan(0);
  for (const response of responses) {
    const { result } = response;
    if (response.status === "complete") {
      expect(result).toMatch(/^\[child turn turn_\w+, agent "worker", end_turn\]/);
      continue;
    }
    expect({ status: response.status, result }).toEqual({
      status: "error",
      result: expect.stringMatching(
        /^\[ERROR\] Tool "delegate" failed: (This turn has used its budget of 16 child turns|Delegation depth limit of 3 reached|At most 4 child turns may run at once under this turn and all are busy); answer without delegating\.$/,
      ),
    });
  }
}

describe("nested delegate calls (the root turn's child budget)", () => {
  it("a 10-wide tree of 116 KB creates at most 1 + MAX_CHILD_TURNS turns, at most 4 at once, and answers", async () => {
    const tree = await runDelegateTree(10, 3);
    expect(tree.message.length).toBeGreaterThan(100_000);
    expect(tree.events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "end_turn" });
    expect(tree.turns.length).toBeLessThanOrEqual(1 + 16);
    expect(tree.children.length).toBeGreaterThan(0);
    expect(tree.children.every((turn) => turn.status === "completed")).toBe(true);
    expect(tree.peakInDatabase).toBeLessThanOrEqual(4);
    expect(tree.peakSeen).toBeLessThanOrEqual(4);

    // each of the root's calls ran a child that answered, or was refused with a readable error at once
    const results = ofType(tree.events, "tool_result");
    expect(results).toHaveLength(10);
    expect(ofType(tree.events, "tool_timeout")).toEqual([]);
    for (const result of results) {
      if (result.isError) {
        expect(result.result).toBe(
          '[ERROR] Tool "delegate" failed: This turn has used its budget of 16 child turns; answer without delegating.',
        );
        expect(result.attempts).toBe(1);
      } else {
        expect(result.result).toMatch(/^\[child turn turn_\w+, agent "worker", end_turn\]/);
      }
    }
    expectAnsweredOrRefused(tree.responses);
    expect([...resultsPerCall(tree.blocks).values()].every((count) => count === 1)).toBe(true);
    expect(tree.turns.find((turn) => turn.id === tree.rootId)).toMatchObject({ status: "completed" });
  }, 240_000);

  it("a 2-wide tree 3 levels deep answers: no call waits forever for a slot its own ancestors hold", async () => {
    const tree = await runDelegateTree(2, 3);
    expect(tree.events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "end_turn" });
    expect(tree.turns.length).toBeLessThanOrEqual(1 + 16);
    expect(tree.peakInDatabase).toBeLessThanOrEqual(4);
    expect(tree.peakSeen).toBeLessThanOrEqual(4);
    expect(tree.responses.filter((response) => response.status === "timeout")).toEqual([]);
    expectAnsweredOrRefused(tree.responses);
    expect(tree.children.every((turn) => turn.status === "completed")).toBe(true);
  }, 240_000);
});

/** `{"text":"deep","nested":[[[…]]]}` with the arrays `depth` levels deep. */
function deeplyNestedInput(depth: number): string {
  return `{"text":"deep","nested":${"[".repeat(depth)}${"]".repeat(depth)}}`;
}

describe("tool input nested 5,000 levels deep", () => {
  it("gets an invalid-input result, never a stack overflow reported as model_error", async () => {
    const handle = await server();
    const stream = await SseStream.start(handle.baseUrl, {
      message: `/tool echo ${deeplyNestedInput(5_000)}\n/then\nstill answering`,
    });
    const events = await stream.untilEnd(60_000);

    expect(ofType(events, "error")).toEqual([]);
    const results = ofType(events, "tool_result");
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ toolName: "echo", isError: true });
    expect(results[0]?.result).toContain("invalid input (it nests deeper than 64 levels)");
    expect(events.at(-1)).toMatchObject({ type: "turn_complete", stopReason: "end_turn" });

    const response = await fetch(`${handle.baseUrl}/api/sessions/${sessionIdOf(stream)}/history`);
    expect(response.status).toBe(200);
    const { blocks } = (await response.json()) as History;
    expect([...resultsPerCall(blocks).values()]).toEqual([1]);
    expect(blocks.at(-1)).toMatchObject({ kind: "text", role: "assistant", text: "still answering" });
  });
});

/** The value of one `reins_tool_calls_total` series on /metrics (0 when absent). */
async function toolCallsCounted(handle: ServerHandle, tool: string, status: string): Promise<number> {
  const text = await (await fetch(`${handle.baseUrl}/metrics`)).text();
  const line = text
    .split("\n")
    .find((entry) => entry.startsWith(`reins_tool_calls_total{tool="${tool}",status="${status}"}`));
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
}

describe("an abort while calls run", () => {
  it("closes them with results that carry the attempts made and counts them as cancelled", async () => {
    const handle = await server();
    const stream = await SseStream.start(handle.baseUrl, {
      message: '/tool sleep {"ms":60000}\n/tool hang {}',
    });
    await stream.next(() => ofType(stream.events, "tool_start").length === 2);
    const abort = await fetch(`${handle.baseUrl}/api/turns/${turnIdOf(stream)}/abort`, { method: "POST" });
    expect(abort.status).toBe(200);
    const events = await stream.untilEnd();

    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "user" });
    const results = ofType(events, "tool_result");
    expect(results.map((result) => result.toolName).sort()).toEqual(["hang", "sleep"]);
    for (const result of results) {
      expect(result).toMatchObject({ status: "cancelled", isError: true });
      expect(result.attempts).toBeGreaterThanOrEqual(1);
    }
    expect(await toolCallsCounted(handle, "sleep", "cancelled")).toBe(1);
    expect(await toolCallsCounted(handle, "hang", "cancelled")).toBe(1);
  });
});

describe("configurable loop detector and model retries", () => {
  it("stops the turn on the second identical call with LOOP_STOP_AT=2", async () => {
    const handle = await server({ LOOP_STOP_AT: "2" });
    const stream = await SseStream.start(handle.baseUrl, {
      message: '/tool echo {"text":"again"}\n/then\n/tool echo {"text":"again"}\n/then\nnever reached',
    });
    const events = await stream.untilEnd();
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "loop" });
    expect(ofType(events, "tool_start")).toHaveLength(1);
    const { blocks } = await history(handle, sessionIdOf(stream));
    expect([...resultsPerCall(blocks).values()]).toEqual([1, 1]);
  });

  it("does not retry a provider's 503 with RETRY_MAX_ATTEMPTS=1", async () => {
    const fake = await FakeProvider.start("openai");
    fakes.push(fake);
    fake.enqueue(
      { kind: "error", status: 503, message: "The server is overloaded" },
      { kind: "text", text: "a retry answered" },
    );
    const handle = await server({
      OPENAI_API_KEY: "sk-openai-test",
      OPENAI_BASE_URL: fake.baseUrl,
      DEFAULT_PROVIDER: "openai",
      RETRY_MAX_ATTEMPTS: "1",
    });
    const stream = await SseStream.start(handle.baseUrl, { message: "hello" });
    const events = await stream.untilEnd();

    expect(fake.requests).toHaveLength(1);
    expect(ofType(events, "error").map((event) => event.code)).toEqual(["model_error"]);
    expect(ofType(events, "error")[0]?.message).toContain("The server is overloaded");
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "error" });
    expect(ofType(events, "text_delta")).toEqual([]);
  });
});
