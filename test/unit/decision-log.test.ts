/**
 * The decision log: every decision goes to its turn's trace and to the metrics; the log line at debug
 * level carries the turn and the whole decision, and is not made at all at a level above debug.
 */
import { Writable } from "node:stream";
import pino from "pino";
import { describe, expect, it } from "vitest";
import type { Decision } from "../../src/observability/decision.js";
import { DecisionLog } from "../../src/observability/decision-log.js";
import { Metrics } from "../../src/observability/metrics.js";

const timeout: Decision = {
  kind: "classification",
  callId: "call_1",
  toolName: "sleep",
  classification: "transient",
  basis: "timeout (total)",
  error: "timed out",
};

function decisionLog(level: "debug" | "info") {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const traced: [string, Decision][] = [];
  const metrics = new Metrics();
  const log = new DecisionLog(
    { appendTrace: (turnId, decision) => void traced.push([turnId, decision]) },
    metrics,
    pino({ level }, sink),
  );
  return { log, lines, traced, metrics };
}

async function settle(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
}

describe("DecisionLog", () => {
  it("traces and counts every decision, and logs it whole at debug level", async () => {
    const { log, lines, traced, metrics } = decisionLog("debug");
    log.record("turn_1", timeout);
    await settle();
    expect(traced).toEqual([["turn_1", timeout]]);
    expect(await metrics.registry.getSingleMetricAsString("reins_tool_errors_total")).toContain(
      'classification="transient"',
    );
    expect(lines).toEqual([expect.objectContaining({ msg: "decision", turnId: "turn_1", ...timeout })]);
  });

  it("traces and counts it but writes no log line at info level", async () => {
    const { log, lines, traced, metrics } = decisionLog("info");
    log.record("turn_1", timeout);
    await settle();
    expect(traced).toHaveLength(1);
    expect(await metrics.registry.getSingleMetricAsString("reins_tool_errors_total")).toContain("sleep");
    expect(lines).toEqual([]);
  });
});
