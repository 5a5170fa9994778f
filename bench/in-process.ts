/**
 * Section 1 of `npm run bench`: per tool call, in one process, reins (SQLite in memory and SQLite
 * file) against the Vercel AI SDK and OpenAI Agents JS, with a bare JS loop as the floor — all running
 * the same stateless fake model and no-op tool (bench/workload.ts) for every cell K×S of the table.
 * Repetitions run round robin (every runtime and cell once per round, the runtimes' order rotating),
 * so drift spreads over all of them; each figure is the median over rounds of wall time / (turns·K·S).
 * Every timed turn is checked afterwards: K·S tool calls and the final answer.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "../test/helpers/server.js";
import { summarize, type Print } from "./lib.js";
import { aiSdkTurn, openAiAgentsTurn, type RunTurn } from "./peers.js";
import { createReinsInProcess } from "./reins-in-process.js";
import { CELLS, WorkloadCounter, bareLoopTurn, callsPerTurn, cellLabel, type Cell } from "./workload.js";

/** Tool calls per repetition of a cell: 200 turns of 1×1, 4 turns of 5×10. */
const CALLS_PER_REPETITION = 200;
const WARMUP_ROUNDS = 2;
const TIMED_ROUNDS = 9;
const NANOSECONDS_PER_MICROSECOND = 1_000;

type Contender = {
  label: string;
  kind: "floor" | "peer" | "reins";
  turnOf(cell: Cell): RunTurn;
  /** Checks the turns run since the last call (beyond the shared counter), outside the timed part. */
  checkTurns?(): void;
};

type InProcessReport = {
  /** Median µs per tool call, by contender label, then cell label. */
  microsecondsPerCall: Map<string, Map<string, number>>;
};

export async function measureInProcess(print: Print, section: number): Promise<void> {
  const counter = new WorkloadCounter();
  const reinsMemory = await createReinsInProcess("memory", counter);
  try {
    const reinsFile = await createReinsInProcess("file", counter);
    try {
      const contenders: Contender[] = [
        { label: "a bare JS loop (the floor)", kind: "floor", turnOf: (cell) => bareLoopTurn(cell, counter) },
        {
          label: `Vercel AI SDK ${packageVersion("ai")} \`generateText\``,
          kind: "peer",
          turnOf: (cell) => aiSdkTurn(cell, counter),
        },
        {
          label: `OpenAI Agents JS ${packageVersion("@openai/agents-core")} (tracing off)`,
          kind: "peer",
          turnOf: (cell) => openAiAgentsTurn(cell, counter),
        },
        ...[reinsMemory, reinsFile].map((reins): Contender => ({
          label: reins.label,
          kind: "reins",
          turnOf: (cell) => reins.turn(cell),
          checkTurns: () => reins.checkTurns(),
        })),
      ];
      printHeader(print, section);
      const report = await measureRoundRobin(contenders, counter);
      printTable(print, contenders, report);
    } finally {
      reinsFile.close();
    }
  } finally {
    reinsMemory.close();
  }
}

function printHeader(print: Print, section: number): void {
  print(
    `${section}. In-process, per tool call — the same stateless fake model and no-op tool in every runtime: ` +
      `K calls per step for S steps, then a text answer`,
  );
  print(
    `   µs per tool call = wall time / (turns·K·S), median of ${TIMED_ROUNDS} round-robin rounds after ${WARMUP_ROUNDS} warm-up rounds; ` +
      `${CALLS_PER_REPETITION} calls per runtime and cell per round (${CELLS.map((cell) => `${CALLS_PER_REPETITION / callsPerTurn(cell)} turns of ${cellLabel(cell)}`).join(", ")})`,
  );
  print(
    `   reins: the built package (dist/), createRuntime (default configuration, silent logger) + manager.startTurn + turn.done, a new session per turn; ` +
      `every turn checked (completed, K·S calls)`,
  );
}

async function measureRoundRobin(
  contenders: readonly Contender[],
  counter: WorkloadCounter,
): Promise<InProcessReport> {
  const turns = new Map<string, RunTurn>();
  const key = (contender: Contender, cell: Cell) => `${contender.label} ${cellLabel(cell)}`;
  for (const contender of contenders) {
    for (const cell of CELLS) turns.set(key(contender, cell), contender.turnOf(cell));
  }
  const samples = new Map<string, number[]>();
  for (let round = 0; round < WARMUP_ROUNDS + TIMED_ROUNDS; round++) {
    for (const cell of CELLS) {
      const turnCount = CALLS_PER_REPETITION / callsPerTurn(cell);
      for (let offset = 0; offset < contenders.length; offset++) {
        const contender = contenders[(round + offset) % contenders.length];
        const runTurn = contender && turns.get(key(contender, cell));
        if (!contender || !runTurn) throw new Error("in-process: missing contender");
        counter.reset();
        const startedAt = process.hrtime.bigint();
        for (let turn = 0; turn < turnCount; turn++) await runTurn();
        const elapsedNs = Number(process.hrtime.bigint() - startedAt);
        counter.check(contender.label, cell, turnCount);
        contender.checkTurns?.();
        if (round < WARMUP_ROUNDS) continue;
        const perCall = elapsedNs / NANOSECONDS_PER_MICROSECOND / CALLS_PER_REPETITION;
        const cellSamples = samples.get(key(contender, cell)) ?? [];
        cellSamples.push(perCall);
        samples.set(key(contender, cell), cellSamples);
      }
    }
  }
  const microsecondsPerCall = new Map<string, Map<string, number>>();
  for (const contender of contenders) {
    const byCell = new Map<string, number>();
    for (const cell of CELLS)
      byCell.set(cellLabel(cell), summarize(samples.get(key(contender, cell)) ?? []).p50);
    microsecondsPerCall.set(contender.label, byCell);
  }
  return { microsecondsPerCall };
}

function printTable(print: Print, contenders: readonly Contender[], report: InProcessReport): void {
  const labelWidth = Math.max(...contenders.map((contender) => contender.label.length), 34);
  const cellWidth = 9;
  const row = (label: string, values: readonly string[]) =>
    `  | ${label.padEnd(labelWidth)} | ${values.map((value) => value.padStart(cellWidth)).join(" | ")} |`;
  print(row("runtime (µs per tool call)", CELLS.map(cellLabel)));
  print(`  |${"-".repeat(labelWidth + 2)}|${CELLS.map(() => `${"-".repeat(cellWidth + 1)}:`).join("|")}|`);
  const figure = (label: string, cell: Cell) =>
    report.microsecondsPerCall.get(label)?.get(cellLabel(cell)) ?? NaN;
  for (const contender of contenders) {
    print(
      row(
        contender.label,
        CELLS.map((cell) => formatMicroseconds(figure(contender.label, cell))),
      ),
    );
  }
  const peers = contenders.filter((contender) => contender.kind === "peer");
  const bestPeer = (cell: Cell) => Math.min(...peers.map((peer) => figure(peer.label, cell)));
  for (const reins of contenders.filter((contender) => contender.kind === "reins")) {
    const name = reins.label.replace(/^reins, /, "");
    print(
      row(
        `best peer / reins (${name})`,
        CELLS.map((cell) => `${(bestPeer(cell) / figure(reins.label, cell)).toFixed(2)}×`),
      ),
    );
  }
  print(`  (a ratio above 1 means reins is faster than the faster of the two peers in that cell)`);
}

/** `1,143` above 100 µs, `93.4` below, `0.7` for the floor. */
function formatMicroseconds(value: number): string {
  if (!Number.isFinite(value)) return "n/a";
  if (value >= 100) return Math.round(value).toLocaleString("en-US");
  return value.toFixed(1);
}

function packageVersion(name: string): string {
  const manifest = readFileSync(join(PROJECT_ROOT, "node_modules", name, "package.json"), "utf8");
  return (JSON.parse(manifest) as { version: string }).version;
}
