/**
 * Transcript renderer cost (DESIGN.md §5.6: "pure, deterministic, O(n)"): `renderProviderRequest` —
 * render plus the provider adapter — over synthetic histories of 1k, 10k and 100k blocks for each
 * profile, median and fastest of several timed runs after a warm-up, and a check that time grows
 * linearly. Even a bare O(n) pass (a Map of every call id, one small object per block) grows faster
 * than 10× from 10k to 100k blocks on a real machine (caches, Map rehashing, the garbage collector),
 * so the renderer's 100k/10k ratio of fastest runs is compared with that reference pass's ratio: a
 * linear renderer stays within a small factor of it, a quadratic one would be ~10× above it.
 *
 * Standalone: `npx tsx bench/render-bench.ts`. `measureRenderer()` is exported for bench/run.ts.
 */
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import type { HistoryBlock, ToolResponseStatus } from "../src/history/model.js";
import { PROFILE_NAMES, renderProviderRequest, type ProfileName } from "../src/history/render/index.js";

const SIZES = [1_000, 10_000, 100_000] as const;
const TIMED_RUNS: Record<(typeof SIZES)[number], number> = { 1_000: 21, 10_000: 9, 100_000: 5 };
const WARMUP_RUNS = 2;
/** The renderer's 100k/10k ratio may exceed the reference O(n) pass's ratio by this factor (quadratic ≈ 10). */
const MAX_RATIO_OVER_REFERENCE = 2.5;
const MODEL = "claude-bench";

export type RenderBenchRow = {
  profile: ProfileName;
  blocks: number;
  medianMs: number;
  fastestMs: number;
  microsecondsPerBlock: number;
};
export type RenderBenchReport = {
  rows: RenderBenchRow[];
  /** fastest(100k) / fastest(10k) per profile. */
  ratios: Record<ProfileName, number>;
  /** The same ratio for the reference O(n) pass. */
  referenceRatio: number;
  linear: boolean;
};

/**
 * A history of about `size` blocks shaped like long agent sessions: turns of user text, thinking,
 * text and batches of calls with their results; now and then an aborted batch (synthetic results),
 * a result recorded before its call, a duplicate result and a call left without a result.
 */
export function syntheticHistory(size: number): HistoryBlock[] {
  const blocks: HistoryBlock[] = [];
  let turn = 0;
  let call = 0;
  const push = (content: Record<string, unknown>) =>
    blocks.push({
      ...content,
      sessionId: "ses_bench",
      turnId: `turn_${turn}`,
      position: blocks.length,
      createdAt: blocks.length,
    } as HistoryBlock);
  while (blocks.length < size) {
    turn += 1;
    push({ kind: "text", role: "user", text: `Please look into item ${turn} and report what you find.` });
    for (let step = 0; step < 3 && blocks.length < size; step++) {
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
      for (const callId of ids) {
        if (call % 23 === 0 && callId === ids[2]) continue; // left without a result
        push(response(callId, aborted ? "cancelled" : "complete", "line one\nline two\nline three"));
        if (call % 13 === 0) push(response(callId, "cancelled", "[CANCELLED] duplicate"));
      }
    }
    push({ kind: "text", role: "assistant", text: `Item ${turn} looks fine.` });
  }
  return blocks.slice(0, size);
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
  return sorted[Math.floor(sorted.length / 2)]!;
}

function timeRender(
  history: readonly HistoryBlock[],
  profile: ProfileName,
  runs: number,
): { medianMs: number; fastestMs: number } {
  const options = { thinking: true, model: MODEL, budgetTokens: Number.POSITIVE_INFINITY };
  for (let run = 0; run < WARMUP_RUNS; run++) renderProviderRequest(history, profile, options);
  const samples: number[] = [];
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    renderProviderRequest(history, profile, options);
    samples.push(performance.now() - started);
  }
  return { medianMs: median(samples), fastestMs: Math.min(...samples) };
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

function fastestReferenceMs(history: readonly HistoryBlock[], runs: number): number {
  for (let run = 0; run < WARMUP_RUNS; run++) referencePass(history);
  let fastest = Number.POSITIVE_INFINITY;
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    referencePass(history);
    fastest = Math.min(fastest, performance.now() - started);
  }
  return fastest;
}

export function measureRenderer(): RenderBenchReport {
  const histories = new Map(SIZES.map((size) => [size, syntheticHistory(size)]));
  const rows: RenderBenchRow[] = [];
  for (const profile of PROFILE_NAMES) {
    for (const size of SIZES) {
      const { medianMs, fastestMs } = timeRender(histories.get(size)!, profile, TIMED_RUNS[size]);
      rows.push({
        profile,
        blocks: size,
        medianMs,
        fastestMs,
        microsecondsPerBlock: (medianMs * 1000) / size,
      });
    }
  }
  const ratios = Object.fromEntries(
    PROFILE_NAMES.map((profile) => {
      const at = (size: number) =>
        rows.find((row) => row.profile === profile && row.blocks === size)!.fastestMs;
      return [profile, at(100_000) / at(10_000)];
    }),
  ) as Record<ProfileName, number>;
  const referenceRatio =
    fastestReferenceMs(histories.get(100_000)!, TIMED_RUNS[100_000]) /
    fastestReferenceMs(histories.get(10_000)!, TIMED_RUNS[10_000]);
  const linear = Object.values(ratios).every(
    (ratio) => ratio <= MAX_RATIO_OVER_REFERENCE * Math.max(referenceRatio, 10),
  );
  return { rows, ratios, referenceRatio, linear };
}

export function formatRenderReport(report: RenderBenchReport): string[] {
  const lines = [
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
  return lines;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const report = measureRenderer();
  console.log("Transcript renderer: renderProviderRequest (render + adapter), thinking on, no budget cut\n");
  for (const line of formatRenderReport(report)) console.log(line);
  if (!report.linear) process.exitCode = 1;
}
