/**
 * Transcript renderer cost (docs/semantics.md#transcript-integrity: "pure, deterministic, O(n)"):
 * `renderProviderRequest` — render plus the provider adapter — over synthetic histories of 1k, 10k and 100k
 * blocks for each profile, median and fastest of several timed runs after a warm-up, and a check that time
 * grows linearly. Even a bare O(n) pass (a Map of every call id, one small object per block) grows faster
 * than 10× from 10k to 100k blocks on a real machine (caches, Map rehashing, the garbage collector), so the
 * renderer's 100k/10k ratio of fastest runs is compared with that reference pass's ratio: a linear renderer
 * stays within a small factor of it, a quadratic one would be ~10× above it.
 *
 * Goals, printed as ratios: a full render within 2.5× of the bare pass over the same 100k blocks and
 * within 5× over 10k; the render an inference pays — one more turn appended to a session of about
 * 100k blocks, through a `TranscriptCache`, with an agent's instructions in the request, each request
 * released as an engine releases it once sent — at most 1 % of a full render; and no call whose
 * recorded `complete` result is replaced by another one ("results lost"). Timed runs render the same
 * block objects again, as a session's renders do; the first (cold) render of each history is reported
 * too. Every render carries a system prompt, as an agent's does.
 *
 * A second reference shows how much of the goal any renderer has to spend on its output: a direct
 * pass that builds the same Anthropic messages with nothing else — the winning result of each call
 * from one Map, no id projection, no checks, no diagnostics, no budget, nothing kept for the next
 * render. It is not a renderer (it trusts the history it is given); it is the floor under one.
 *
 * bench/run.ts measures in RENDER_PROCESSES fresh processes, one after another, with the server's Node
 * flags (the renderer runs inside the server), and reports the median of each figure over them, every
 * ratio and share taken within one process (`measureRendererInFreshProcesses`, `combineRenderReports`).
 * Not in the bench's own process: the sections before this one fill its heap, and their leftovers slowed
 * the renders and the bare pass unevenly from one run to the next. Several, because each fresh process
 * has luck of its own too (the code V8 compiled for it, where its objects lie): one process's ratio may
 * be three times another's, and every process's ratios to the bare pass are printed beside the medians.
 *
 * Standalone: `npx tsx bench/render-bench.ts` (one process, this one; `--json`: the report as JSON).
 */
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { SERVER_NODE_FLAGS } from "../test/helpers/server.js";
import { runMeasurementProcess } from "./lib.js";
import type { HistoryBlock, ToolResponseStatus } from "../src/history/model.js";
import { withFields } from "../src/objects.js";
import { resultRank } from "../src/history/render/pairing.js";
import {
  PROFILE_NAMES,
  TranscriptCache,
  renderProviderRequest,
  type ProfileName,
  type ProviderRequestMessages,
} from "../src/history/render/index.js";

const SIZES = [1_000, 10_000, 100_000] as const;
type Size = (typeof SIZES)[number];
/**
 * Timed runs per render (the bare pass gets twice as many). On a shared machine a run is often slowed
 * by others; the fastest of a few more runs is what the code costs, not what the neighbours did.
 */
const TIMED_RUNS: Record<Size, number> = { 1_000: 21, 10_000: 15, 100_000: 11 };
const WARMUP_RUNS = 2;
/** The renderer's 100k/10k ratio may exceed the reference O(n) pass's ratio by this factor (quadratic ≈ 10). */
const MAX_RATIO_OVER_REFERENCE = 2.5;
/** Goals: full render / bare pass at 100k and at 10k blocks; one more turn / full render. */
export const GOAL_VS_REFERENCE_100K = 2.5;
export const GOAL_VS_REFERENCE_10K = 5;
export const GOAL_ONE_MORE_TURN_SHARE = 0.01;
/** Turns appended one by one to the ~100k-block session, each render timed. */
const APPENDED_TURNS = 9;
const MODEL = "claude-bench";
/** An agent's instructions: an inference's request carries them (Anthropic's `system`, else a leading message). */
const SYSTEM_PROMPT = "You look into items with the tools you are given and report what you find.";
const RENDER_OPTIONS = {
  thinking: true,
  model: MODEL,
  budgetTokens: Number.POSITIVE_INFINITY,
  system: SYSTEM_PROMPT,
};

export type RenderBenchRow = {
  profile: ProfileName;
  blocks: number;
  medianMs: number;
  fastestMs: number;
  microsecondsPerBlock: number;
};
export type RenderGoalRow = {
  profile: ProfileName;
  /** The first render of the 100k history (block inputs not yet serialized). */
  coldMs: number;
  /** fastest render / fastest bare pass, over the same 100k and 10k blocks. */
  versusReference100k: number;
  versusReference10k: number;
  /** Median render of one more turn through a TranscriptCache, and its share of a full 100k render. */
  oneMoreTurnMs: number;
  oneMoreTurnShare: number;
  /** Calls with a recorded `complete` result that the request answers with another result. */
  resultsLost: number;
};
export type RenderBenchReport = {
  rows: RenderBenchRow[];
  /** fastest(100k) / fastest(10k) per profile. */
  ratios: Record<ProfileName, number>;
  /** The same ratio for the reference O(n) pass. */
  referenceRatio: number;
  linear: boolean;
  /** Fastest bare pass per size. */
  referenceMs: Record<Size, number>;
  /** Fastest direct pass per size (the floor under any renderer's output). */
  floorMs: Record<Size, number>;
  /** floorMs / referenceMs per size. */
  floorVersusReference: Record<Size, number>;
  goals: RenderGoalRow[];
  goalsMet: boolean;
};

/**
 * A history of about `size` blocks shaped like long agent sessions: turns of user text, thinking,
 * text and batches of calls with their results; now and then an aborted batch (synthetic results),
 * a result recorded before its call, a duplicate result, a call left without a result, and a call
 * that failed before it succeeded (an error, then a complete result for the same call).
 */
export function syntheticHistory(size: number): HistoryBlock[] {
  return syntheticTurns(size).slice(0, size);
}

/** Whole turns, at least `size` blocks of them. */
function syntheticTurns(size: number): HistoryBlock[] {
  const blocks: HistoryBlock[] = [];
  let turn = 0;
  let call = 0;
  // blocks made as a live session makes them (src/history/live-session.ts), so blocks of one shape
  // share a hidden class
  const push = (content: Record<string, unknown>) =>
    blocks.push(
      withFields(content, {
        sessionId: "ses_bench",
        turnId: `turn_${turn}`,
        position: blocks.length,
        createdAt: blocks.length,
      }) as unknown as HistoryBlock,
    );
  while (blocks.length < size) {
    turn += 1;
    push({ kind: "text", role: "user", text: `Please look into item ${turn} and report what you find.` });
    for (let step = 0; step < 3; step++) {
      push({
        kind: "thinking",
        role: "assistant",
        text: "Considering which tools to use next.",
        signature: `sig_${turn}_${step}`,
        provider: "anthropic",
        model: MODEL,
      });
      push({ kind: "text", role: "assistant", text: "Let me check a few things." });
      const ids: string[] = [];
      for (let index = 0; index < 3; index++) {
        call += 1;
        const callId = `call_${call.toString(36).padStart(16, "0")}`;
        ids.push(callId);
        if (call % 17 === 0) {
          push(response(callId, "complete", "recorded before its call"));
        }
        push({
          kind: "tool_call",
          role: "assistant",
          callId,
          providerCallId: `functions.read_file:${index}`,
          name: "read_file",
          input: { path: `/data/item-${turn}/${index}.txt` },
        });
      }
      const aborted = turn % 11 === 0 && step === 2;
      ids.forEach((callId, index) => {
        if (call % 23 === 0 && index === 2) return; // left without a result
        // A call that failed before it succeeded: the success must be what the model sees.
        if (!aborted && call % 29 === 0 && index === 0) push(response(callId, "error", "EAGAIN: try again"));
        push(response(callId, aborted ? "cancelled" : "complete", "line one\nline two\nline three"));
        if (call % 13 === 0) push(response(callId, "cancelled", "[CANCELLED] duplicate"));
      });
    }
    push({ kind: "text", role: "assistant", text: `Item ${turn} looks fine.` });
  }
  return blocks;
}

function response(callId: string, status: ToolResponseStatus, result: string): Record<string, unknown> {
  return {
    kind: "tool_response",
    role: "tool",
    callId,
    name: "read_file",
    status,
    result,
    isError: status !== "complete",
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function timeRender(
  history: readonly HistoryBlock[],
  profile: ProfileName,
  runs: number,
): { medianMs: number; fastestMs: number; coldMs: number } {
  const coldStarted = performance.now();
  renderProviderRequest(history, profile, RENDER_OPTIONS);
  const coldMs = performance.now() - coldStarted;
  for (let run = 1; run < WARMUP_RUNS; run++) renderProviderRequest(history, profile, RENDER_OPTIONS);
  const samples: number[] = [];
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    renderProviderRequest(history, profile, RENDER_OPTIONS);
    samples.push(performance.now() - started);
  }
  return { medianMs: median(samples), fastestMs: Math.min(...samples), coldMs };
}

/**
 * The render an inference pays: a session of about `size` blocks is rendered once through a cache,
 * then grows by one whole turn at a time; each of those renders is timed (median).
 */
function timeOneMoreTurn(profile: ProfileName, size: number): number {
  const blocks = syntheticTurns(size + APPENDED_TURNS * 40);
  const turnStarts = blocks.flatMap((block, index) =>
    block.kind === "text" && block.role === "user" && index >= size ? [index] : [],
  );
  const cache = new TranscriptCache();
  cache.renderProviderRequest("ses_bench", blocks.slice(0, turnStarts[0]), profile, RENDER_OPTIONS).release();
  const samples: number[] = [];
  for (let turn = 1; turn < turnStarts.length && samples.length < APPENDED_TURNS; turn++) {
    const grown = blocks.slice(0, turnStarts[turn]);
    const started = performance.now();
    // an engine releases each request once it is sent, before the session's next render
    cache.renderProviderRequest("ses_bench", grown, profile, RENDER_OPTIONS).release();
    samples.push(performance.now() - started);
  }
  if (cache.stats.fallbacks > 0) throw new Error(`${profile}: a grown session was rendered from scratch`);
  return median(samples);
}

/** Calls whose recorded `complete` result the request does not send. */
function resultsLost(history: readonly HistoryBlock[], request: ProviderRequestMessages): number {
  const completed = new Set<string>();
  for (const block of history) {
    if (block.kind === "tool_response" && block.status === "complete") completed.add(block.callId);
  }
  return request.diagnostics.emittedResults.filter(
    (result) => completed.has(result.canonicalId) && result.status !== "complete",
  ).length;
}

/** A bare O(n) pass over a history: what linear growth looks like on this machine. */
function referencePass(history: readonly HistoryBlock[]): number {
  const ids = new Map<string, { position: number }>();
  for (const block of history) {
    const entry = { position: block.position };
    if (block.kind === "tool_call" || block.kind === "tool_response") ids.set(block.callId, entry);
  }
  return ids.size;
}

/**
 * The direct pass: the Anthropic messages of a history that needs no repair, built as they are met.
 * A call's winner is its best result (the renderer's ranking; the first of a rank), a call without
 * one is answered `[INTERRUPTED]`, a result ends the assistant message of the calls before it, and
 * user text after tool results joins their user message — the same messages, in the same number, as
 * the renderer sends for the synthetic histories. Returns how many messages it built.
 */
function directPass(history: readonly HistoryBlock[]): number {
  const winners = new Map<string, HistoryBlock & { kind: "tool_response" }>();
  for (const block of history) {
    if (block.kind !== "tool_response") continue;
    const winner = winners.get(block.callId);
    if (winner === undefined || resultRank(block.status) > resultRank(winner.status)) {
      winners.set(block.callId, block);
    }
  }
  const messages: { role: "user" | "assistant"; content: Record<string, unknown>[] }[] = [];
  let content: Record<string, unknown>[] | undefined;
  let calls: string[] = [];
  let lastIsResults = false;
  const close = () => {
    if (content === undefined) return;
    messages.push({ role: "assistant", content });
    content = undefined;
    lastIsResults = calls.length > 0;
    if (!lastIsResults) return;
    messages.push({
      role: "user",
      content: calls.map((callId) => ({
        type: "tool_result",
        tool_use_id: callId,
        content: winners.get(callId)?.result ?? "[INTERRUPTED]",
      })),
    });
    calls = [];
  };
  for (const block of history) {
    if (block.kind === "text" && block.role === "user") {
      close();
      const part = { type: "text", text: block.text };
      if (lastIsResults) messages[messages.length - 1]!.content.push(part);
      else messages.push({ role: "user", content: [part] });
      lastIsResults = false;
    } else if (block.kind === "text" || block.kind === "thinking") {
      if (calls.length > 0) close();
      content ??= [];
      content.push(
        block.kind === "text"
          ? { type: "text", text: block.text }
          : { type: "thinking", thinking: block.text, signature: block.signature },
      );
    } else if (block.kind === "tool_call") {
      (content ??= []).push({ type: "tool_use", id: block.callId, name: block.name, input: block.input });
      calls.push(block.callId);
    } else if (calls.length > 0) {
      close(); // a result ends the assistant message of the calls before it
    }
  }
  close();
  return messages.length;
}

/** The fastest of `runs` timed runs of `pass` over `history`, after the warm-up runs. */
function fastestPassMs(
  pass: (history: readonly HistoryBlock[]) => number,
  history: readonly HistoryBlock[],
  runs: number,
): number {
  for (let run = 0; run < WARMUP_RUNS; run++) pass(history);
  let fastest = Number.POSITIVE_INFINITY;
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    pass(history);
    fastest = Math.min(fastest, performance.now() - started);
  }
  return fastest;
}

export function measureRenderer(): RenderBenchReport {
  const histories = new Map(SIZES.map((size) => [size, syntheticHistory(size)]));
  const fastestPerSize = (pass: (history: readonly HistoryBlock[]) => number) =>
    bySize((size) => fastestPassMs(pass, histories.get(size)!, TIMED_RUNS[size] * 2));
  const referenceMs = fastestPerSize(referencePass);
  const floorMs = fastestPerSize(directPass);
  const rows: RenderBenchRow[] = [];
  const coldMs = new Map<ProfileName, number>();
  for (const profile of PROFILE_NAMES) {
    for (const size of SIZES) {
      const timing = timeRender(histories.get(size)!, profile, TIMED_RUNS[size]);
      if (size === 100_000) coldMs.set(profile, timing.coldMs);
      rows.push({
        profile,
        blocks: size,
        medianMs: timing.medianMs,
        fastestMs: timing.fastestMs,
        microsecondsPerBlock: (timing.medianMs * 1000) / size,
      });
    }
  }
  // after the timed renders: a render before them would serialize the inputs the cold render reports
  for (const [size, history] of histories) {
    const rendered = renderProviderRequest(history, "anthropic", RENDER_OPTIONS).messages.length;
    const direct = directPass(history);
    if (direct !== rendered) {
      throw new Error(`${size} blocks: the direct pass built ${direct} messages, the renderer ${rendered}`);
    }
  }
  const fastest = (profile: ProfileName, size: number) =>
    rows.find((row) => row.profile === profile && row.blocks === size)!.fastestMs;
  const ratios = byProfile((profile) => fastest(profile, 100_000) / fastest(profile, 10_000));
  const referenceRatio = referenceMs[100_000] / referenceMs[10_000];
  const linear = isLinear(ratios, referenceRatio);

  const largest = histories.get(100_000)!;
  const goals = PROFILE_NAMES.map((profile): RenderGoalRow => {
    const oneMoreTurnMs = timeOneMoreTurn(profile, 100_000);
    return {
      profile,
      coldMs: coldMs.get(profile)!,
      versusReference100k: fastest(profile, 100_000) / referenceMs[100_000],
      versusReference10k: fastest(profile, 10_000) / referenceMs[10_000],
      oneMoreTurnMs,
      oneMoreTurnShare: oneMoreTurnMs / fastest(profile, 100_000),
      resultsLost: resultsLost(largest, renderProviderRequest(largest, profile, RENDER_OPTIONS)),
    };
  });
  return {
    rows,
    ratios,
    referenceRatio,
    linear,
    referenceMs,
    floorMs,
    floorVersusReference: bySize((size) => floorMs[size] / referenceMs[size]),
    goals,
    goalsMet: goalsMetBy(goals),
  };
}

function bySize(figure: (size: Size) => number): Record<Size, number> {
  return Object.fromEntries(SIZES.map((size) => [size, figure(size)])) as Record<Size, number>;
}

function byProfile(figure: (profile: ProfileName) => number): Record<ProfileName, number> {
  return Object.fromEntries(PROFILE_NAMES.map((profile) => [profile, figure(profile)])) as Record<
    ProfileName,
    number
  >;
}

/** Every profile's render grows within MAX_RATIO_OVER_REFERENCE of the reference pass's growth. */
function isLinear(ratios: Record<ProfileName, number>, referenceRatio: number): boolean {
  return Object.values(ratios).every(
    (ratio) => ratio <= MAX_RATIO_OVER_REFERENCE * Math.max(referenceRatio, 10),
  );
}

function goalsMetBy(goals: readonly RenderGoalRow[]): boolean {
  return goals.every(
    (goal) =>
      goal.versusReference100k <= GOAL_VS_REFERENCE_100K &&
      goal.versusReference10k <= GOAL_VS_REFERENCE_10K &&
      goal.oneMoreTurnShare <= GOAL_ONE_MORE_TURN_SHARE &&
      goal.resultsLost === 0,
  );
}

/** Fresh processes bench/run.ts measures the renderer in; its figures are the medians over them. */
export const RENDER_PROCESSES = 5;
/** How long one process's measurement may take (about 10 s on two cores) before the bench gives up. */
const RENDER_PROCESS_LIMIT_MS = 120_000;
const JSON_FLAG = "--json";

/** `measureRenderer()` in `count` fresh processes, one after another; their reports in order. */
export async function measureRendererInFreshProcesses(count: number): Promise<RenderBenchReport[]> {
  const reports: RenderBenchReport[] = [];
  for (let run = 0; run < count; run++) reports.push(await measureInFreshProcess());
  return reports;
}

/** One fresh process running this module with `--json`, its report parsed. */
async function measureInFreshProcess(): Promise<RenderBenchReport> {
  const label = "the renderer's measurement process";
  const printed = await runMeasurementProcess(
    fileURLToPath(import.meta.url),
    [JSON_FLAG],
    RENDER_PROCESS_LIMIT_MS,
    label,
  );
  try {
    return JSON.parse(printed) as RenderBenchReport;
  } catch {
    throw new Error(`${label} printed no report: ${printed.slice(0, 200)}`);
  }
}

/**
 * One report from several processes': each figure the median of the processes' figures — each ratio,
 * and each share, taken within its process — and results lost the most any process lost; growth and
 * goals judged on those medians. The reports must hold the same rows and goals in the same order (they
 * come from the same code).
 */
export function combineRenderReports(reports: readonly RenderBenchReport[]): RenderBenchReport {
  const [first] = reports;
  if (first === undefined) throw new Error("no render report to combine");
  const sameLayout = reports.every(
    (report) =>
      report.rows.every(
        (row, index) =>
          row.profile === first.rows[index]?.profile && row.blocks === first.rows[index]?.blocks,
      ) && report.goals.every((goal, index) => goal.profile === first.goals[index]?.profile),
  );
  if (!sameLayout) throw new Error("render reports of different layouts cannot be combined");
  const medianOver = (figure: (report: RenderBenchReport) => number) => median(reports.map(figure));
  const perSize = (figure: (report: RenderBenchReport) => Record<Size, number>) =>
    bySize((size) => medianOver((report) => figure(report)[size]));
  const rows = first.rows.map(({ profile, blocks }, index): RenderBenchRow => ({
    profile,
    blocks,
    medianMs: medianOver((report) => report.rows[index]!.medianMs),
    fastestMs: medianOver((report) => report.rows[index]!.fastestMs),
    microsecondsPerBlock: medianOver((report) => report.rows[index]!.microsecondsPerBlock),
  }));
  const ratios = byProfile((profile) => medianOver((report) => report.ratios[profile]));
  const referenceRatio = medianOver((report) => report.referenceRatio);
  const goals = first.goals.map(({ profile }, index): RenderGoalRow => ({
    profile,
    coldMs: medianOver((report) => report.goals[index]!.coldMs),
    versusReference100k: medianOver((report) => report.goals[index]!.versusReference100k),
    versusReference10k: medianOver((report) => report.goals[index]!.versusReference10k),
    oneMoreTurnMs: medianOver((report) => report.goals[index]!.oneMoreTurnMs),
    oneMoreTurnShare: medianOver((report) => report.goals[index]!.oneMoreTurnShare),
    resultsLost: Math.max(...reports.map((report) => report.goals[index]!.resultsLost)),
  }));
  return {
    rows,
    ratios,
    referenceRatio,
    linear: isLinear(ratios, referenceRatio),
    referenceMs: perSize((report) => report.referenceMs),
    floorMs: perSize((report) => report.floorMs),
    floorVersusReference: perSize((report) => report.floorVersusReference),
    goals,
    goalsMet: goalsMetBy(goals),
  };
}

/**
 * The report's lines; with `processReports` (the reports `report` combines), a line saying so first
 * and, after the goals, each process's own ratios to the bare pass.
 */
export function formatRenderReport(
  report: RenderBenchReport,
  processReports: readonly RenderBenchReport[] = [],
): string[] {
  const lines = [
    ...(processReports.length > 1
      ? [
          `figures: medians over ${processReports.length} fresh processes (node ${SERVER_NODE_FLAGS.join(" ")}, the server's flags; ` +
            "sources through tsx), each ratio and share taken within its process; results lost: the most any process lost",
          "",
        ]
      : []),
    "profile     blocks    median ms   fastest ms   µs/block (median)",
    "----------  -------   ---------   ----------   -----------------",
  ];
  for (const row of report.rows) {
    lines.push(
      `${row.profile.padEnd(10)}  ${String(row.blocks).padStart(7)}   ${row.medianMs.toFixed(2).padStart(9)}   ${row.fastestMs.toFixed(2).padStart(10)}   ${row.microsecondsPerBlock.toFixed(2).padStart(17)}`,
    );
  }
  lines.push("", "fastest(100k) / fastest(10k): 10 is ideal linear growth, 100 quadratic");
  lines.push(
    `reference   ${report.referenceRatio.toFixed(1).padStart(5)}   (a bare O(n) pass: Map of call ids, one object per block)`,
  );
  for (const [profile, ratio] of Object.entries(report.ratios)) {
    lines.push(`${profile.padEnd(10)}  ${ratio.toFixed(1).padStart(5)}`);
  }
  lines.push(
    report.linear
      ? "growth: linear (within the reference pass's growth)"
      : `growth: NOT linear (more than ${MAX_RATIO_OVER_REFERENCE}× the reference pass's ratio)`,
  );
  lines.push(
    "",
    `goals: full render ≤ ${GOAL_VS_REFERENCE_100K}× the bare pass at 100k and ≤ ${GOAL_VS_REFERENCE_10K}× at 10k; ` +
      `one more turn ≤ ${GOAL_ONE_MORE_TURN_SHARE * 100} % of a full render; no result lost`,
    `bare pass: ${report.referenceMs[10_000].toFixed(2)} ms at 10k, ${report.referenceMs[100_000].toFixed(2)} ms at 100k`,
    `direct pass (the same Anthropic messages, no checks, ids, diagnostics or budget): ` +
      `${report.floorMs[10_000].toFixed(2)} ms at 10k (${report.floorVersusReference[10_000].toFixed(2)}× bare), ` +
      `${report.floorMs[100_000].toFixed(2)} ms at 100k (${report.floorVersusReference[100_000].toFixed(2)}× bare)`,
    "profile     ×bare 100k   ×bare 10k   cold 100k ms   one more turn ms   share of full   results lost",
    "----------  ----------   ---------   ------------   ----------------   -------------   ------------",
  );
  for (const goal of report.goals) {
    lines.push(
      `${goal.profile.padEnd(10)}  ${goal.versusReference100k.toFixed(2).padStart(10)}   ${goal.versusReference10k.toFixed(2).padStart(9)}   ${goal.coldMs.toFixed(1).padStart(12)}   ${goal.oneMoreTurnMs.toFixed(3).padStart(16)}   ${`${(goal.oneMoreTurnShare * 100).toFixed(2)} %`.padStart(13)}   ${String(goal.resultsLost).padStart(12)}`,
    );
  }
  if (processReports.length > 1) {
    lines.push("each process's ×bare 100k | ×bare 10k, in the order they ran:");
    report.goals.forEach(({ profile }, index) => {
      const each = (figure: (goal: RenderGoalRow) => number) =>
        processReports.map((processReport) => figure(processReport.goals[index]!).toFixed(2)).join(" ");
      lines.push(
        `${profile.padEnd(10)}  ${each((goal) => goal.versusReference100k)} | ${each((goal) => goal.versusReference10k)}`,
      );
    });
  }
  lines.push(report.goalsMet ? "goals: met" : "goals: NOT all met on this machine (see the ratios above)");
  return lines;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const report = measureRenderer();
  if (process.argv.includes(JSON_FLAG)) {
    process.stdout.write(JSON.stringify(report));
  } else {
    console.log(
      "Transcript renderer: renderProviderRequest (render + adapter), thinking on, a system prompt, no budget cut\n",
    );
    for (const line of formatRenderReport(report)) console.log(line);
    if (!report.linear) process.exitCode = 1;
  }
}
