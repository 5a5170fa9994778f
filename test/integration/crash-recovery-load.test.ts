/**
 * Crash test under concurrent load: nothing a client was sent is lost by a `kill -9`.
 *
 * Each round starts a real server on a fresh SQLite file, launches 30–60 concurrent scripted turns
 * (text, thinking, parallel `echo`/`sleep` batches over several `/then` steps), each followed by a
 * real SSE client that records every frame it received, and kills the server with SIGKILL a seeded
 * 20–400 ms after its first response. A second server then opens the same DATA_DIR (crash recovery
 * runs at start-up) and, for every turn a client saw begin:
 * - the replay of `GET /api/turns/:id/events` starts with exactly the frames the client received
 *   (same ids, types and byte-for-byte data), is in seq order and ends with exactly one terminal event;
 * - the session's history pairs every call with exactly one result; every `tool_result` of the log
 *   (so every one a client received) is in history with the same status and text, and every result in
 *   history has its `tool_result` in the log;
 * - the transcript renders for a provider with nothing to repair (no orphan, duplicate, synthetic or
 *   misplaced result).
 *
 * Scripts, kill delays and the provider come from one seed, printed at the start; `CRASH_SEED=<n>`
 * replays a plan. Where the kill lands depends on the machine's speed, so only what holds wherever it
 * lands is asserted (before the first event, mid-batch, after every turn ended), and each round prints
 * its figures: events received, in flight (persisted, never received), appended by recovery.
 */
import { randomInt } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import fc from "fast-check";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { isTerminalEvent, type TurnEvent } from "../../src/events.js";
import type { HistoryBlock, ToolCallBlock, ToolResponseBlock, TurnRecord } from "../../src/history/model.js";
import type { RenderDiagnostics } from "../../src/history/render/types.js";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, type SseMessage } from "../helpers/sse.js";

const ROUNDS = 5;
const MIN_TURNS_PER_ROUND = 30;
const MAX_TURNS_PER_ROUND = 60;
const MIN_KILL_DELAY_MS = 20;
const MAX_KILL_DELAY_MS = 400;
const MAX_SLEEP_MS = 60;
const ROUND_TIMEOUT_MS = 180_000;
const STREAM_END_TIMEOUT_MS = 30_000;
const REQUEST_TIMEOUT_MS = 30_000;
const EVENT_RESULT_MAX_CHARS = 2000;
const PROVIDERS = ["anthropic", "openai", "kimi", "mistral"] as const;

const BASE_SEED = process.env.CRASH_SEED === undefined ? randomInt(2 ** 31) : Number(process.env.CRASH_SEED);

const SERVER_ENV = {
  ON_DISCONNECT: "continue",
  // every turn of a round belongs to the one anonymous principal: the per-principal limits must not
  // refuse the load this test is about
  MAX_TURNS_PER_PRINCIPAL: "1000",
  MAX_STREAMS_PER_PRINCIPAL: "1000",
  MAX_PARALLEL_TOOLS: "4",
};

// ---------------------------------------------------------------------------------------------------
// The seeded plan of a round

type CallPlan = { tool: "echo"; text: string } | { tool: "sleep"; ms: number };
type StepPlan = { think: string | null; words: string[]; calls: CallPlan[] };
type TurnPlan = { greeting: string | null; steps: StepPlan[]; answer: string[] };
type RoundPlan = {
  seed: number;
  killDelayMs: number;
  provider: (typeof PROVIDERS)[number];
  turns: TurnPlan[];
};

const WORDS = [
  "tool",
  "batch",
  "the",
  "crash",
  "événement",
  "日本語",
  "🦀",
  'quote"d',
  "back\\slash",
  "tab\tbed",
];
const wordArbitrary = fc.constantFrom(...WORDS);
const callArbitrary: fc.Arbitrary<CallPlan> = fc.oneof(
  fc.record({ tool: fc.constant("echo" as const), text: fc.string({ unit: "grapheme", maxLength: 40 }) }),
  fc.record({ tool: fc.constant("sleep" as const), ms: fc.integer({ min: 1, max: MAX_SLEEP_MS }) }),
);
const stepArbitrary: fc.Arbitrary<StepPlan> = fc.record({
  think: fc.option(fc.array(wordArbitrary, { minLength: 1, maxLength: 6 }).map((words) => words.join(" "))),
  words: fc.array(wordArbitrary, { maxLength: 12 }),
  calls: fc.array(callArbitrary, { minLength: 1, maxLength: 5 }),
});
const turnArbitrary: fc.Arbitrary<TurnPlan> = fc.oneof(
  {
    weight: 1,
    arbitrary: fc.record({
      greeting: wordArbitrary,
      steps: fc.constant<StepPlan[]>([]),
      answer: fc.constant<string[]>([]),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      greeting: fc.constant(null),
      steps: fc.array(stepArbitrary, { minLength: 1, maxLength: 4 }),
      // empty: the model answers with a summary of the results
      answer: fc.array(wordArbitrary, { maxLength: 8 }),
    }),
  },
);

/** The plan of round `round`: its kill delay lies in the round's own band of 20–400 ms. */
function planRound(round: number): RoundPlan {
  const seed = (BASE_SEED + round * 7_919) % 2 ** 31;
  const bandMs = (MAX_KILL_DELAY_MS - MIN_KILL_DELAY_MS) / ROUNDS;
  const arbitrary = fc.record({
    killDelayMs: fc.integer({
      min: Math.round(MIN_KILL_DELAY_MS + round * bandMs),
      max: Math.round(MIN_KILL_DELAY_MS + (round + 1) * bandMs),
    }),
    provider: fc.constantFrom(...PROVIDERS),
    turns: fc.array(turnArbitrary, { minLength: MIN_TURNS_PER_ROUND, maxLength: MAX_TURNS_PER_ROUND }),
  });
  const [plan] = fc.sample(arbitrary, { seed, numRuns: 1 });
  if (!plan) throw new Error("fast-check produced no plan");
  return { seed, ...plan };
}

/**
 * The scripted model's message for one turn (docs/semantics.md#the-scripted-model). Every call's input is
 * distinct within the turn, so the loop detector never stops a turn this test expects to run on.
 */
function scriptOf(turn: TurnPlan, turnIndex: number): string {
  if (turn.greeting !== null) return `hello ${turn.greeting}`;
  const sleepsMs = new Set<number>();
  const steps = turn.steps.map((step, stepIndex) => {
    const lines: string[] = [];
    if (step.think !== null) lines.push(`/think ${step.think}`);
    if (step.words.length > 0) lines.push(step.words.join(" "));
    for (const [callIndex, call] of step.calls.entries()) {
      if (call.tool === "echo") {
        const text = `t${turnIndex}s${stepIndex}c${callIndex} ${call.text}`;
        lines.push(`/tool echo ${JSON.stringify({ text })}`);
      } else {
        let ms = call.ms;
        while (sleepsMs.has(ms)) ms++;
        sleepsMs.add(ms);
        lines.push(`/tool sleep ${JSON.stringify({ ms })}`);
      }
    }
    return lines.join("\n");
  });
  if (turn.answer.length > 0) steps.push(turn.answer.join(" "));
  return steps.join("\n/then\n");
}

// ---------------------------------------------------------------------------------------------------
// What the clients and the restarted server say

type Frame = Pick<SseMessage, "id" | "event" | "data">;
type History = { turns: TurnRecord[]; blocks: HistoryBlock[] };
type Transcript = { provider: string; diagnostics: RenderDiagnostics };

/** The turn frames of a stream (pings are not part of the turn's sequence), as received. */
function framesOf(stream: SseStream): Frame[] {
  return stream.messages
    .filter((message) => message.event !== "ping")
    .map(({ id, event, data }) => ({ id, event, data }));
}

function eventsOf(frames: Frame[]): TurnEvent[] {
  return frames.map((frame) => JSON.parse(frame.data) as TurnEvent);
}

/** Events only recovery writes: it closes open calls as `interrupted` and ends the turn. */
function isRecoveryEvent(event: TurnEvent): boolean {
  return (
    (event.type === "tool_result" && event.status === "interrupted") ||
    (event.type === "turn_abort" && event.reason === "interrupted")
  );
}

async function getJson<T>(url: string): Promise<{ status: number; body: T }> {
  const response = await fetch(url, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  return { status: response.status, body: (await response.json()) as T };
}

/** Rejects, naming `what`, when `promise` has not settled within `timeoutMs`. */
async function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

type RoundFigures = {
  launched: number;
  streamsOpened: number;
  turnsSeen: number;
  endedBeforeKill: number;
  runningAtKill: number;
  eventsReceived: number;
  persistedNotReceived: number;
  appendedByRecovery: number;
  callsClosed: number;
};

function describeFigures(plan: RoundPlan, round: number, figures: RoundFigures): string {
  return (
    `crash-recovery-load: seed ${plan.seed} round ${round}, kill ${plan.killDelayMs} ms after the first response, ` +
    `transcripts for ${plan.provider}: ${figures.launched} turns launched, ${figures.streamsOpened} streams ` +
    `opened, ${figures.turnsSeen} turns seen by their client (${figures.endedBeforeKill} ended before the ` +
    `kill, ${figures.runningAtKill} running); ${figures.eventsReceived} events received, ` +
    `${figures.persistedNotReceived} in flight (persisted, never received), ${figures.appendedByRecovery} ` +
    `appended by recovery; ${figures.callsClosed} calls in history, each with one result\n`
  );
}

// ---------------------------------------------------------------------------------------------------
// The checks, for one turn whose client received `received`

/**
 * The replay starts with exactly the frames the client received (same ids, types, data bytes), is in
 * seq order and ends with exactly one terminal event. Returns the replay's events.
 */
function checkReplay(label: string, received: Frame[], replay: Frame[]): TurnEvent[] {
  expect(received, `${label}: frames the client received (+) vs the start of the replay (-)`).toEqual(
    replay.slice(0, received.length),
  );
  const events = eventsOf(replay);
  const positions = replay.map((_, position) => position + 1);
  expect(
    replay.map((frame) => frame.id),
    `${label}: replay ids`,
  ).toEqual(positions.map(String));
  expect(
    events.map((event) => event.seq),
    `${label}: replay seqs`,
  ).toEqual(positions);
  expect(
    replay.map((frame) => frame.event),
    `${label}: replay event names`,
  ).toEqual(events.map((event) => event.type));
  expect(events[0]?.type, `${label}: first event of the replay`).toBe("turn_start");
  expect(
    events.filter(isTerminalEvent).map((event) => event.seq),
    `${label}: terminal events of the replay`,
  ).toEqual([events.length]);
  if (eventsOf(received).some(isTerminalEvent)) {
    expect(replay, `${label}: replay of a turn that had ended`).toHaveLength(received.length);
  }
  const resultIds = events.flatMap((event) => (event.type === "tool_result" ? [event.toolId] : []));
  expect(new Set(resultIds).size, `${label}: a call with two tool_result events`).toBe(resultIds.length);
  return events;
}

type Pairing = {
  calls: (HistoryBlock & ToolCallBlock)[];
  responses: (HistoryBlock & ToolResponseBlock)[];
};

/**
 * History after recovery: every call paired with exactly one result placed after it, the turn no longer
 * running; every call the log started is there, and every result in the log (so every one a client
 * received) is there with the same status and text.
 */
function checkHistory(label: string, turnId: string, history: History, events: TurnEvent[]): Pairing {
  const calls = history.blocks.filter(
    (block): block is HistoryBlock & ToolCallBlock => block.kind === "tool_call",
  );
  const responses = history.blocks.filter(
    (block): block is HistoryBlock & ToolResponseBlock => block.kind === "tool_response",
  );
  expect(new Set(calls.map((call) => call.callId)).size, `${label}: duplicate call ids`).toBe(calls.length);
  for (const call of calls) {
    const paired = responses.filter((response) => response.callId === call.callId);
    expect(paired, `${label}: results of call ${call.callId}`).toHaveLength(1);
    expect(paired[0]?.position, `${label}: result of ${call.callId} before its call`).toBeGreaterThan(
      call.position,
    );
  }
  expect(responses, `${label}: results without a call`).toHaveLength(calls.length);

  const status = history.turns.find((turn) => turn.id === turnId)?.status;
  const last = events.at(-1);
  const interrupted = last?.type === "turn_abort" && last.reason === "interrupted";
  expect(status, `${label}: turn status`).toBe(
    interrupted ? "interrupted" : last?.type === "turn_complete" ? "completed" : "aborted",
  );

  for (const event of events) {
    if (event.type === "tool_start") {
      expect(
        calls.some((call) => call.callId === event.toolId),
        `${label}: started call ${event.toolId} missing from history`,
      ).toBe(true);
    }
    if (event.type !== "tool_result") continue;
    const response = responses.find((block) => block.callId === event.toolId);
    expect(
      response && {
        name: response.name,
        status: response.status,
        isError: response.isError,
        result: response.result.slice(0, EVENT_RESULT_MAX_CHARS),
      },
      `${label}: result of ${event.toolId} (seq ${event.seq}) in history`,
    ).toEqual({ name: event.toolName, status: event.status, isError: event.isError, result: event.result });
  }
  // The log and history agree: a call's result and its tool_result event are committed together.
  expect(
    events.flatMap((event) => (event.type === "tool_result" ? [event.toolId] : [])).sort(),
    `${label}: calls with a tool_result in the log vs calls with a result in history`,
  ).toEqual(responses.map((response) => response.callId).sort());
  return { calls, responses };
}

/** The transcript renders for `provider` with nothing to repair: every call emitted with its result. */
function checkTranscript(label: string, transcript: Transcript, { calls }: Pairing): void {
  const { diagnostics } = transcript;
  expect(
    {
      orphanResults: diagnostics.orphanResults,
      duplicateCalls: diagnostics.duplicateCalls,
      dedupe: diagnostics.dedupe,
      syntheticResults: diagnostics.syntheticResults,
      resultsBeforeCall: diagnostics.resultsBeforeCall,
      overBudget: diagnostics.budget.overBudget,
    },
    `${label}: transcript diagnostics for ${transcript.provider}`,
  ).toEqual({
    orphanResults: [],
    duplicateCalls: [],
    dedupe: [],
    syntheticResults: [],
    resultsBeforeCall: [],
    overBudget: false,
  });
  const callIds = calls.map((call) => call.callId);
  expect(
    diagnostics.emittedCalls.map((call) => call.canonicalId),
    `${label}: calls in the transcript`,
  ).toEqual(callIds);
  expect(
    diagnostics.emittedResults.map((result) => result.canonicalId).sort(),
    `${label}: results in the transcript`,
  ).toEqual([...callIds].sort());
}

// ---------------------------------------------------------------------------------------------------

const servers: ServerHandle[] = [];
const streams: SseStream[] = [];
const dataDirs: string[] = [];

/** A server on `dataDir`; the directory is the test's own, so it is removed even if the start fails. */
async function server(dataDir: string): Promise<ServerHandle> {
  const handle = await startServer({ env: SERVER_ENV, dataDir });
  servers.push(handle);
  return handle;
}

function freshDataDir(): string {
  const dataDir = mkdtempSync(join(tmpdir(), "reins-crash-load-"));
  dataDirs.push(dataDir);
  return dataDir;
}

afterEach(async () => {
  await Promise.all(streams.splice(0).map((stream) => stream.cancel()));
  for (const handle of servers.splice(0)) await handle.stop("SIGKILL");
  for (const dataDir of dataDirs.splice(0)) rmSync(dataDir, { recursive: true, force: true });
});

beforeAll(() => {
  process.stdout.write(`crash-recovery-load: seed ${BASE_SEED} (replay with CRASH_SEED=${BASE_SEED})\n`);
});

/**
 * Launches every turn of the plan at once and kills the server `killDelayMs` after the first response
 * (so the kill lands in the load, not in the server's warm-up); resolves, once every stream has ended,
 * with each turn's client (undefined when the kill came before its response).
 */
async function launchAndKill(plan: RoundPlan, target: ServerHandle): Promise<(SseStream | undefined)[]> {
  const launches = plan.turns.map((turn, index) =>
    SseStream.start(target.baseUrl, { message: scriptOf(turn, index) }).then((stream) => {
      streams.push(stream);
      return stream;
    }),
  );
  await within(
    Promise.any(launches).catch((error: unknown) => {
      throw new Error("the server answered none of the turn requests", { cause: error });
    }),
    REQUEST_TIMEOUT_MS,
    "the first response of the server",
  );
  await delay(plan.killDelayMs);
  expect(await within(target.stop("SIGKILL"), REQUEST_TIMEOUT_MS, "kill -9 of the server")).toBe("SIGKILL");
  const clients = await within(
    // a request the kill came before was sent nothing
    Promise.all(launches.map((launch) => launch.catch(() => undefined))),
    REQUEST_TIMEOUT_MS,
    "turn requests after the kill",
  );
  await Promise.all(clients.map((stream) => stream?.untilEnd(STREAM_END_TIMEOUT_MS)));
  return clients;
}

/** Every check for one turn whose client received `received` (at least one frame) before the kill. */
async function verifyTurn(
  target: ServerHandle,
  plan: RoundPlan,
  name: string,
  received: Frame[],
  figures: RoundFigures,
): Promise<void> {
  const receivedEvents = eventsOf(received);
  const turnId = receivedEvents[0]?.turnId;
  const label = `seed ${plan.seed}, ${name} (${turnId})`;
  figures.turnsSeen++;
  figures.eventsReceived += received.length;
  if (receivedEvents.some(isTerminalEvent)) figures.endedBeforeKill++;
  else figures.runningAtKill++;

  const replayStream = await SseStream.open(`${target.baseUrl}/api/turns/${turnId}/events`);
  streams.push(replayStream);
  await replayStream.untilEnd(STREAM_END_TIMEOUT_MS);
  const events = checkReplay(label, received, framesOf(replayStream));
  const added = events.slice(received.length);
  figures.appendedByRecovery += added.filter(isRecoveryEvent).length;
  figures.persistedNotReceived += added.filter((event) => !isRecoveryEvent(event)).length;

  const start = events[0];
  if (start?.type !== "turn_start") throw new Error(`${label}: the replay does not start with turn_start`);
  const history = await getJson<History>(`${target.baseUrl}/api/sessions/${start.sessionId}/history`);
  expect(history.status, `${label}: history status`).toBe(200);
  const pairing = checkHistory(label, start.turnId, history.body, events);
  figures.callsClosed += pairing.calls.length;

  const transcript = await getJson<Transcript>(
    `${target.baseUrl}/api/sessions/${start.sessionId}/transcript?provider=${plan.provider}`,
  );
  expect(transcript.status, `${label}: transcript status`).toBe(200);
  checkTranscript(label, transcript.body, pairing);
}

describe(`kill -9 under concurrent load (seed ${BASE_SEED})`, () => {
  it.each(Array.from({ length: ROUNDS }, (_, round) => round))(
    "round %i: every event a client received survives in the replay, history and transcript",
    async (round) => {
      const plan = planRound(round);
      const dataDir = freshDataDir();
      const first = await server(dataDir);
      const clients = await launchAndKill(plan, first);
      const figures: RoundFigures = {
        launched: plan.turns.length,
        streamsOpened: clients.filter((stream) => stream !== undefined).length,
        turnsSeen: 0,
        endedBeforeKill: 0,
        runningAtKill: 0,
        eventsReceived: 0,
        persistedNotReceived: 0,
        appendedByRecovery: 0,
        callsClosed: 0,
      };

      const second = await server(dataDir);
      const active = await getJson<{ turns: unknown[] }>(`${second.baseUrl}/api/turns/active`);
      expect(active.body.turns, "turns left active after recovery").toEqual([]);

      for (const [index, client] of clients.entries()) {
        const received = client ? framesOf(client) : [];
        if (received.length > 0)
          await verifyTurn(second, plan, `round ${round}, turn ${index}`, received, figures);
      }
      process.stdout.write(describeFigures(plan, round, figures));
    },
    ROUND_TIMEOUT_MS,
  );
});
