/**
 * A section of `npm run bench`: what the tool runner itself costs per call, measured in-process (no
 * HTTP, no store, decisions discarded) through `ToolScheduler.runBatch` → `ToolRunner.run` around
 * trivial tools — with and without the wall-clock timer, through a zero-delay retry, a permanent
 * failure and an open circuit — next to the bare `tool.execute` and `CircuitBreaker.admit()+release()`.
 * Every figure is the median of several timed repetitions (process.hrtime.bigint()) after a warm-up;
 * differences are taken repetition by repetition against a reference measured alongside.
 */
import { z } from "zod";
import { ToolRegistry } from "../src/tools/registry.js";
import { CircuitBreaker, DEFAULT_BREAKER_SETTINGS } from "../src/tools/resilience/circuit-breaker.js";
import { PermanentToolError, TransientToolError } from "../src/tools/resilience/tool-error.js";
import { ToolRunner, type CallScope } from "../src/tools/runner.js";
import { ToolScheduler } from "../src/tools/scheduler.js";
import type {
  ToolCallRequest,
  ToolContext,
  ToolDefinition,
  ToolOutcome,
  ToolOutcomeStatus,
} from "../src/tools/types.js";
import { formatLoadAverage, summarize, type Print } from "./lib.js";

const DEFAULT_TIMEOUT_MS = 120_000;
const NO_TIMEOUT_MS = 0;
const MAX_CALL_TIMEOUT_MS = 600_000;
const PROGRESS_AFTER_MS = 5_000;
const PROGRESS_INTERVAL_MS = 5_000;
const MAX_PARALLEL_TOOLS = 8;

const WARMUP_REPETITIONS = 1;
const TIMED_REPETITIONS = 7;
const CALLS_PER_REPETITION = 10_000;
const BATCH_SIZES = [1, 8] as const;
/** Fewer calls: even a zero-delay retry waits for a timer, and Node fires `setTimeout(…, 0)` after ≥ 1 ms. */
const RETRY_CALLS_PER_REPETITION = 300;
const BARE_CALLS_PER_REPETITION = 100_000;
const BREAKER_OPERATIONS_PER_REPETITION = 1_000_000;
const NANOSECONDS_PER_MICROSECOND = 1_000;

/** One measured case: `repeat` performs `operations` operations. */
type Case = { operations: number; repeat: () => Promise<void> | void };

/** Per operation, in nanoseconds: wall-clock median and range, and the process's CPU time (median). */
type Measurement = {
  operations: number;
  wallMedianNs: number;
  wallMinNs: number;
  wallMaxNs: number;
  cpuMedianNs: number;
  /** Wall-clock ns per operation of each timed repetition, in order (for paired differences). */
  wallNsPerRepetition: number[];
};

type Expectation = { status: ToolOutcomeStatus; attempts: number; resultStartsWith: string };

export async function measureRunnerOverhead(print: Print, section: number): Promise<void> {
  print(
    `${section}. Runner overhead (in-process) — ToolScheduler.runBatch → ToolRunner.run, no HTTP, no store, decisions discarded`,
  );
  print(
    `   runner settings: idleTimeoutMs 0, progressAfterMs ${PROGRESS_AFTER_MS}, maxParallelTools ${MAX_PARALLEL_TOOLS}; ` +
      `median of ${TIMED_REPETITIONS} timed repetitions after ${WARMUP_REPETITIONS} warm-up round, [min–max] of those;`,
  );
  print(
    `   src loaded through tsx, as \`npm start\` runs it; CPU = this process's CPU time (all threads, GC included) per call; ` +
      `every outcome is checked; ` +
      `load average now ${formatLoadAverage()}`,
  );

  // a. The no-op tool, with and without the wall-clock timer, and its bare execute as the baseline.
  const noOp = noOpTool();
  const noOpCases: { batchSize: number; timeoutMs: number }[] = [];
  for (const timeoutMs of [DEFAULT_TIMEOUT_MS, NO_TIMEOUT_MS]) {
    for (const batchSize of BATCH_SIZES) noOpCases.push({ batchSize, timeoutMs });
  }
  const bareContext = toolContext(noOp.name);
  const noOpMeasurements = await measureInterleaved([
    ...noOpCases.map(({ batchSize, timeoutMs }) =>
      batchCase(createScheduler(noOp, timeoutMs), noOp.name, batchSize, CALLS_PER_REPETITION, {
        status: "complete",
        attempts: 1,
        resultStartsWith: "ok",
      }),
    ),
    {
      operations: BARE_CALLS_PER_REPETITION,
      repeat: async () => {
        for (let call = 0; call < BARE_CALLS_PER_REPETITION; call++) {
          if ((await noOp.execute({}, bareContext)) !== "ok")
            throw new Error("bare no-op: unexpected result");
        }
      },
    },
    {
      operations: BARE_CALLS_PER_REPETITION,
      repeat: () => {
        for (let call = 0; call < BARE_CALLS_PER_REPETITION; call++) {
          if (!noOp.inputSchema.safeParse({}).success) throw new Error("no-op input schema refused {}");
        }
      },
    },
  ]);
  const noOpByCase = new Map<string, Measurement>();
  print(`  a. no-op tool (\`execute: async () => "ok"\`, parallel)`);
  for (const [index, { batchSize, timeoutMs }] of noOpCases.entries()) {
    const measurement = required(noOpMeasurements[index]);
    noOpByCase.set(`${batchSize}/${timeoutMs}`, measurement);
    const timers = timeoutMs > 0 ? `timeoutMs ${timeoutMs}` : "timeoutMs 0 (no wall-clock timer)";
    print(formatMeasurement(`batches of ${batchSize}, ${timers}`, measurement, "call"));
  }
  const bare = required(noOpMeasurements[noOpCases.length]);
  const schema = required(noOpMeasurements[noOpCases.length + 1]);
  print(formatMeasurement("baseline: `await tool.execute({}, context)` alone", bare, "call"));
  print(formatMeasurement("for scale: `inputSchema.safeParse({})` alone", schema, "call"));
  for (const batchSize of BATCH_SIZES) {
    const timed = required(noOpByCase.get(`${batchSize}/${DEFAULT_TIMEOUT_MS}`));
    const untimed = required(noOpByCase.get(`${batchSize}/${NO_TIMEOUT_MS}`));
    print(
      `     batches of ${batchSize}: runner + scheduler over the bare execute ${formatPairedDifference(timed, bare)}; ` +
        `wall-clock timer (timeoutMs ${DEFAULT_TIMEOUT_MS} − 0) ${formatPairedDifference(timed, untimed)}`,
    );
  }
  print(
    `     (the progress timer, progressAfterMs ${PROGRESS_AFTER_MS}, is armed and cleared on every attempt either way)`,
  );
  const noOpSingle = required(noOpByCase.get(`1/${DEFAULT_TIMEOUT_MS}`));

  // b. A retry with zero delay, and a permanent failure.
  const [retried, zeroTimer] = await measureInterleaved([
    batchCase(
      createScheduler(failsOnceTool(), DEFAULT_TIMEOUT_MS),
      "fails_once",
      1,
      RETRY_CALLS_PER_REPETITION,
      {
        status: "complete",
        attempts: 2,
        resultStartsWith: "ok",
      },
    ),
    {
      operations: RETRY_CALLS_PER_REPETITION,
      repeat: async () => {
        for (let wait = 0; wait < RETRY_CALLS_PER_REPETITION; wait++) {
          await new Promise((resolveWait) => setTimeout(resolveWait, 0));
        }
      },
    },
  ]);
  const [permanentReference, permanent, errorConstruction] = await measureInterleaved([
    noOpReference(noOp),
    batchCase(
      createScheduler(permanentTool(), DEFAULT_TIMEOUT_MS),
      "fails_permanently",
      1,
      CALLS_PER_REPETITION,
      {
        status: "error",
        attempts: 1,
        resultStartsWith: "[ERROR]",
      },
    ),
    {
      operations: CALLS_PER_REPETITION,
      repeat: () => {
        for (let error = 0; error < CALLS_PER_REPETITION; error++) {
          if (new PermanentToolError("permanent failure").classification !== "permanent") {
            throw new Error("PermanentToolError is not permanent");
          }
        }
      },
    },
  ]);
  print(`  b. failures, batches of 1, timeoutMs ${DEFAULT_TIMEOUT_MS}`);
  print(formatMeasurement("transient once, then ok (2 attempts, retry delay 0)", required(retried), "call"));
  print(formatMeasurement("for scale: `await` a bare setTimeout(…, 0) alone", required(zeroTimer), "wait"));
  print(
    `     over the no-op of a. (batches of 1): wall ${signedMicroseconds(required(retried).wallMedianNs - noOpSingle.wallMedianNs)} µs/call, ` +
      `CPU ${signedMicroseconds(required(retried).cpuMedianNs - noOpSingle.cpuMedianNs)} µs/call; the wall time is almost all the zero-delay wait:`,
  );
  print(
    `     abortableDelay(0) is a setTimeout(…, 0), which Node fires after ≥ 1 ms; the CPU figure includes waking the idle process for it`,
  );
  print(formatMeasurement("PermanentToolError (1 attempt, no retry)", required(permanent), "call"));
  print(
    formatMeasurement("for scale: `new PermanentToolError(…)` alone", required(errorConstruction), "call"),
  );
  print(
    `     over the no-op (batches of 1, measured alongside): ${formatPairedDifference(required(permanent), required(permanentReference))} ` +
      `(the error with its stack trace, its classification, the error result)`,
  );

  // c. The circuit breaker: calls failing fast while it is open, and admit+release alone.
  const broken = createScheduler(brokenTool(), DEFAULT_TIMEOUT_MS);
  await openCircuit(broken, "broken");
  const [fastFailedReference, fastFailed] = await measureInterleaved([
    noOpReference(noOp),
    batchCase(broken, "broken", 1, CALLS_PER_REPETITION, {
      status: "error",
      attempts: 0,
      resultStartsWith: "[CIRCUIT_OPEN]",
    }),
  ]);
  if (broken.runner.breakers.get("broken").state !== "open") {
    throw new Error("runner overhead: the circuit closed while fast-failed calls were measured");
  }
  const breaker = new CircuitBreaker("bench", DEFAULT_BREAKER_SETTINGS, Date.now);
  const [admitRelease] = await measureInterleaved([
    {
      operations: BREAKER_OPERATIONS_PER_REPETITION,
      repeat: () => {
        for (let operation = 0; operation < BREAKER_OPERATIONS_PER_REPETITION; operation++) {
          const admission = breaker.admit();
          if (!admission.admitted) throw new Error("closed breaker refused a call");
          admission.release("success");
        }
      },
    },
  ]);
  print(
    `  c. circuit breaker (opened by ${DEFAULT_BREAKER_SETTINGS.failureThreshold} transient failures, retry maxAttempts 1; openMs ${DEFAULT_BREAKER_SETTINGS.openMs})`,
  );
  print(
    formatMeasurement("call failing fast on the open circuit, batches of 1", required(fastFailed), "call"),
  );
  print(
    `     against the no-op (batches of 1, measured alongside): ${formatPairedDifference(required(fastFailed), required(fastFailedReference))}`,
  );
  print(
    formatMeasurement(
      "CircuitBreaker.admit() + release() alone (closed)",
      required(admitRelease),
      "op",
      "ns",
    ),
  );
}

// ---------------------------------------------------------------------------------------------------
// Tools and harness

function noOpTool(): ToolDefinition {
  return {
    name: "noop",
    description: "Returns ok at once.",
    inputSchema: z.strictObject({}),
    concurrency: "parallel",
    execute: async () => "ok",
  };
}

/**
 * Fails transiently on the first attempt of each call, then succeeds. Measured in batches of 1 only:
 * concurrent first attempts would be consecutive transient failures and open its circuit.
 */
function failsOnceTool(): ToolDefinition {
  const failedOnce = new Set<string>();
  return {
    name: "fails_once",
    description: "Fails transiently once per call, then returns ok.",
    inputSchema: z.strictObject({}),
    concurrency: "parallel",
    retry: { initialDelayMs: 0, maxDelayMs: 0, jitterRatio: 0 },
    execute: async (_input, context) => {
      if (failedOnce.delete(context.callId)) return "ok";
      failedOnce.add(context.callId);
      throw new TransientToolError("transient failure");
    },
  };
}

function permanentTool(): ToolDefinition {
  return {
    name: "fails_permanently",
    description: "Always fails permanently.",
    inputSchema: z.strictObject({}),
    concurrency: "parallel",
    execute: async () => {
      throw new PermanentToolError("permanent failure");
    },
  };
}

function brokenTool(): ToolDefinition {
  return {
    name: "broken",
    description: "Always fails transiently.",
    inputSchema: z.strictObject({}),
    concurrency: "parallel",
    retry: { maxAttempts: 1 },
    execute: async () => {
      throw new TransientToolError("transient failure");
    },
  };
}

type Harness = { runner: ToolRunner; scheduler: ToolScheduler; scope: CallScope };

function createScheduler(tool: ToolDefinition, timeoutMs: number): Harness {
  const registry = new ToolRegistry([tool]);
  const runner = new ToolRunner(registry, {
    defaults: { timeoutMs, idleTimeoutMs: 0 },
    maxCallTimeoutMs: MAX_CALL_TIMEOUT_MS,
    overrides: {},
    progressAfterMs: PROGRESS_AFTER_MS,
    progressIntervalMs: PROGRESS_INTERVAL_MS,
  });
  const scheduler = new ToolScheduler(runner, registry, { maxParallelTools: MAX_PARALLEL_TOOLS });
  const scope: CallScope = {
    turnId: "bench-turn",
    sessionId: "bench-session",
    agentId: "bench-agent",
    workspace: undefined,
    allowedRoots: [],
    depth: 0,
    signal: new AbortController().signal,
  };
  return { runner, scheduler, scope };
}

function toolContext(toolName: string): ToolContext {
  return {
    turnId: "bench-turn",
    sessionId: "bench-session",
    agentId: "bench-agent",
    callId: "call_0",
    toolName,
    workspace: undefined,
    allowedRoots: [],
    depth: 0,
    signal: new AbortController().signal,
    heartbeat: () => {},
  };
}

/** `calls` calls of `toolName` with input `{}`, as batches of `batchSize`, every outcome checked. */
function batchCase(
  harness: Harness,
  toolName: string,
  batchSize: number,
  calls: number,
  expected: Expectation,
): Case {
  if (calls % batchSize !== 0) throw new Error(`${calls} calls do not divide into batches of ${batchSize}`);
  const batch: ToolCallRequest[] = Array.from({ length: batchSize }, (_, index) => ({
    callId: `call_${index}`,
    name: toolName,
    input: {},
  }));
  return {
    operations: calls,
    repeat: async () => {
      for (let batchIndex = 0; batchIndex < calls / batchSize; batchIndex++) {
        const outcomes = await harness.scheduler.runBatch(batch, harness.scope);
        for (const outcome of outcomes) check(toolName, outcome, expected);
      }
    },
  };
}

/** The no-op in batches of 1 with the default timeout: the reference the failure paths are set against. */
function noOpReference(noOp: ToolDefinition): Case {
  return batchCase(createScheduler(noOp, DEFAULT_TIMEOUT_MS), noOp.name, 1, CALLS_PER_REPETITION, {
    status: "complete",
    attempts: 1,
    resultStartsWith: "ok",
  });
}

function check(toolName: string, outcome: ToolOutcome, expected: Expectation): void {
  if (
    outcome.status !== expected.status ||
    outcome.attempts !== expected.attempts ||
    !outcome.result.startsWith(expected.resultStartsWith)
  ) {
    throw new Error(
      `runner overhead: ${toolName} ended ${JSON.stringify(outcome)}, expected ${JSON.stringify(expected)}`,
    );
  }
}

/** Makes `toolName` fail transiently until its circuit opens, and checks that it did. */
async function openCircuit(harness: Harness, toolName: string): Promise<void> {
  const call: ToolCallRequest = { callId: "call_0", name: toolName, input: {} };
  for (let failure = 0; failure < DEFAULT_BREAKER_SETTINGS.failureThreshold; failure++) {
    const [outcome] = await harness.scheduler.runBatch([call], harness.scope);
    check(toolName, required(outcome), { status: "error", attempts: 1, resultStartsWith: "[ERROR]" });
  }
  const state = harness.runner.breakers.get(toolName).state;
  if (state !== "open") throw new Error(`runner overhead: circuit of ${toolName} is ${state}, not open`);
}

// ---------------------------------------------------------------------------------------------------
// Timing

/**
 * Warms every case up, then times the repetitions round-robin across the cases, so that drift (GC
 * state, CPU frequency, other load) spreads evenly over the figures being compared.
 */
async function measureInterleaved(cases: readonly Case[]): Promise<Measurement[]> {
  for (let repetition = 0; repetition < WARMUP_REPETITIONS; repetition++) {
    for (const measured of cases) await measured.repeat();
  }
  const wallNs = cases.map((): number[] => []);
  const cpuNs = cases.map((): number[] => []);
  for (let repetition = 0; repetition < TIMED_REPETITIONS; repetition++) {
    for (const [index, measured] of cases.entries()) {
      const cpuBefore = process.cpuUsage();
      const startedAt = process.hrtime.bigint();
      await measured.repeat();
      const elapsedNs = Number(process.hrtime.bigint() - startedAt);
      const cpu = process.cpuUsage(cpuBefore);
      wallNs[index]?.push(elapsedNs / measured.operations);
      cpuNs[index]?.push(((cpu.user + cpu.system) * NANOSECONDS_PER_MICROSECOND) / measured.operations);
    }
  }
  return cases.map((measured, index) => {
    const wall = summarize(wallNs[index] ?? []);
    return {
      operations: measured.operations,
      wallMedianNs: wall.p50,
      wallMinNs: wall.min,
      wallMaxNs: wall.max,
      cpuMedianNs: summarize(cpuNs[index] ?? []).p50,
      wallNsPerRepetition: wallNs[index] ?? [],
    };
  });
}

/**
 * `minuend − subtrahend` in wall-clock time per operation, repetition by repetition (the two ran back
 * to back in each round): the median and the range, `+2.41 µs/call [−3.58 … +6.26]`.
 */
function formatPairedDifference(minuend: Measurement, subtrahend: Measurement): string {
  const differences = summarize(
    minuend.wallNsPerRepetition.map(
      (wallNs, repetition) => wallNs - (subtrahend.wallNsPerRepetition[repetition] ?? NaN),
    ),
  );
  const range = `[${signedMicroseconds(differences.min)} … ${signedMicroseconds(differences.max)}]`;
  return `${signedMicroseconds(differences.p50)} µs/call ${range}`;
}

// ---------------------------------------------------------------------------------------------------
// Report lines

/** `label  N ops/rep  wall x µs/op [min–max]  CPU y µs/op`. */
function formatMeasurement(
  label: string,
  measurement: Measurement,
  operation: "call" | "wait" | "op",
  unit: "µs" | "ns" = "µs",
): string {
  const scale = unit === "µs" ? NANOSECONDS_PER_MICROSECOND : 1;
  const digits = unit === "µs" ? 2 : 1;
  const value = (nanoseconds: number) => (nanoseconds / scale).toFixed(digits);
  return [
    `     ${label.padEnd(54)}`,
    `${String(measurement.operations).padStart(7)} ${operation}s/rep`,
    `wall ${value(measurement.wallMedianNs).padStart(8)} ${unit}/${operation}`,
    `[${value(measurement.wallMinNs)}–${value(measurement.wallMaxNs)}]`.padEnd(17),
    `CPU ${value(measurement.cpuMedianNs).padStart(8)} ${unit}/${operation}`,
  ].join("  ");
}

/** Nanoseconds as signed microseconds without the unit: `+2.41`, `−0.49`. */
function signedMicroseconds(nanoseconds: number): string {
  const microseconds = nanoseconds / NANOSECONDS_PER_MICROSECOND;
  return `${microseconds >= 0 ? "+" : "−"}${Math.abs(microseconds).toFixed(2)}`;
}

function required<T>(value: T | undefined): T {
  if (value === undefined) throw new Error("runner overhead: missing measurement");
  return value;
}
