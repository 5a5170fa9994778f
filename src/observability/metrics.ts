/**
 * Prometheus metrics (prom-client) on a registry of their own — no global default registry, so two
 * apps in one process never share counters. Fed by decisions, tool outcomes and turn ends. reins'
 * own metrics are named `reins_…`; the optional Node process metrics keep prom-client's standard names.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { Decision } from "./decision.js";

export const UNKNOWN_TOOL_LABEL = "(unknown)";

export type MetricSources = {
  activeTurns: () => number;
  zombies: () => number;
  /** What the store's sessions in memory hold, when the store keeps them (SqliteHistoryStore). */
  historyCache?: () => { sessions: number; characters: number };
};

const BREAKER_STATE_VALUE = { closed: 0, half_open: 1, open: 2 } as const;

export class Metrics {
  readonly registry = new Registry();
  private readonly toolCalls: Counter<"tool" | "status">;
  private readonly toolErrors: Counter<"tool" | "classification">;
  private readonly retries: Counter<"tool">;
  private readonly retrySuccesses: Counter<"tool">;
  private readonly breakerOpens: Counter<"tool">;
  private readonly breakerState: Gauge<"tool">;
  private readonly timeouts: Counter<"tool" | "kind">;
  private readonly zombies: Gauge;
  private readonly zombiesTotal: Counter<"tool">;
  private readonly fallbacks: Counter<"tool">;
  private readonly skipped: Counter<"tool">;
  private readonly loopsDetected: Counter<"action">;
  private readonly activeTurns: Gauge;
  private readonly turnDuration: Histogram<"outcome">;
  private readonly turnsEnded: Counter<"outcome">;
  private readonly mcpCalls: Counter<"server">;
  private readonly mcpFailures: Counter<"server" | "kind">;
  private sources: MetricSources | undefined;

  /** The `tool` label: a registered tool's name, else "(unknown)", so model-invented names add no series. */
  private readonly toolLabel: (toolName: string) => string;

  constructor(options: { defaultMetrics?: boolean; isKnownTool?: (toolName: string) => boolean } = {}) {
    const isKnownTool = options.isKnownTool ?? (() => true);
    this.toolLabel = (toolName) => (isKnownTool(toolName) ? toolName : UNKNOWN_TOOL_LABEL);
    const registers = [this.registry];
    // Gauges of live state are read at scrape time from the sources given to `observe`.
    const sources = () => this.sources;
    this.toolCalls = new Counter({
      name: "reins_tool_calls_total",
      help: "Tool calls by final status",
      labelNames: ["tool", "status"],
      registers,
    });
    this.toolErrors = new Counter({
      name: "reins_tool_errors_total",
      help: "Failed tool attempts by classification",
      labelNames: ["tool", "classification"],
      registers,
    });
    this.retries = new Counter({
      name: "reins_tool_retries_total",
      help: "Retries scheduled",
      labelNames: ["tool"],
      registers,
    });
    this.retrySuccesses = new Counter({
      name: "reins_tool_retry_successes_total",
      help: "Calls that succeeded after at least one retry",
      labelNames: ["tool"],
      registers,
    });
    this.breakerOpens = new Counter({
      name: "reins_circuit_opens_total",
      help: "Circuit breaker openings",
      labelNames: ["tool"],
      registers,
    });
    this.breakerState = new Gauge({
      name: "reins_circuit_state",
      help: "Circuit breaker state (0 closed, 1 half-open, 2 open)",
      labelNames: ["tool"],
      registers,
    });
    this.timeouts = new Counter({
      name: "reins_tool_timeouts_total",
      help: "Tool timeouts by kind",
      labelNames: ["tool", "kind"],
      registers,
    });
    this.zombies = new Gauge({
      name: "reins_zombie_tools",
      help: "Tools still running after their call was closed",
      registers,
      collect() {
        const source = sources();
        if (source) this.set(source.zombies());
      },
    });
    this.zombiesTotal = new Counter({
      name: "reins_zombies_total",
      help: "Calls that became zombies",
      labelNames: ["tool"],
      registers,
    });
    this.fallbacks = new Counter({
      name: "reins_tool_fallbacks_total",
      help: "Calls answered by a fallback tool",
      labelNames: ["tool"],
      registers,
    });
    this.skipped = new Counter({
      name: "reins_tool_skipped_total",
      help: "Calls skipped because a dependency failed",
      labelNames: ["tool"],
      registers,
    });
    this.loopsDetected = new Counter({
      name: "reins_loop_detections_total",
      help: "Repeated-call warnings and stops",
      labelNames: ["action"],
      registers,
    });
    this.activeTurns = new Gauge({
      name: "reins_active_turns",
      help: "Turns running now",
      registers,
      collect() {
        const source = sources();
        if (source) this.set(source.activeTurns());
      },
    });
    new Gauge({
      name: "reins_history_cached_sessions",
      help: "Sessions whose history is held in memory",
      registers,
      collect() {
        const cache = sources()?.historyCache?.();
        if (cache) this.set(cache.sessions);
      },
    });
    new Gauge({
      name: "reins_history_cached_characters",
      help: "Characters of stored history the sessions in memory hold (HISTORY_CACHE_MB bounds it)",
      registers,
      collect() {
        const cache = sources()?.historyCache?.();
        if (cache) this.set(cache.characters);
      },
    });
    this.turnDuration = new Histogram({
      name: "reins_turn_duration_seconds",
      help: "Turn duration by outcome",
      labelNames: ["outcome"],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers,
    });
    this.turnsEnded = new Counter({
      name: "reins_turns_total",
      help: "Turns ended, by outcome",
      labelNames: ["outcome"],
      registers,
    });
    this.mcpCalls = new Counter({
      name: "reins_mcp_calls_total",
      help: "Calls of MCP servers' tools, by server",
      labelNames: ["server"],
      registers,
    });
    this.mcpFailures = new Counter({
      name: "reins_mcp_call_failures_total",
      help: "Failed calls of MCP servers' tools, by server and kind",
      labelNames: ["server", "kind"],
      registers,
    });
    // No prefix: the process metrics keep the names Node dashboards and alerts expect
    // (`process_cpu_seconds_total`, `nodejs_eventloop_lag_seconds`, …); reins' own carry `reins_`.
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  observeDecision(decision: Decision): void {
    switch (decision.kind) {
      case "classification":
        this.toolErrors.inc({
          tool: this.toolLabel(decision.toolName),
          classification: decision.classification,
        });
        break;
      case "retry":
        this.retries.inc({ tool: this.toolLabel(decision.toolName) });
        break;
      case "retry_succeeded":
        this.retrySuccesses.inc({ tool: this.toolLabel(decision.toolName) });
        break;
      case "breaker_transition":
        this.breakerState.set({ tool: this.toolLabel(decision.toolName) }, BREAKER_STATE_VALUE[decision.to]);
        if (decision.to === "open") this.breakerOpens.inc({ tool: this.toolLabel(decision.toolName) });
        break;
      case "timeout":
        this.timeouts.inc({ tool: this.toolLabel(decision.toolName), kind: decision.timeoutKind });
        break;
      case "zombie":
        if (decision.state === "started") this.zombiesTotal.inc({ tool: this.toolLabel(decision.toolName) });
        break;
      case "fallback":
        this.fallbacks.inc({ tool: this.toolLabel(decision.toolName) });
        break;
      case "skipped":
        this.skipped.inc({ tool: this.toolLabel(decision.toolName) });
        break;
      case "loop":
        this.loopsDetected.inc({ action: decision.action });
        break;
      default:
        break;
    }
  }

  toolCallEnded(toolName: string, status: string): void {
    this.toolCalls.inc({ tool: this.toolLabel(toolName), status });
  }

  /** One call of an MCP server's tool ended; anything but "ok" counts as a failure of that kind. */
  mcpCallEnded(server: string, outcome: string): void {
    this.mcpCalls.inc({ server });
    if (outcome !== "ok") this.mcpFailures.inc({ server, kind: outcome });
  }

  /** Gauges read at scrape time. */
  observe(sources: MetricSources): void {
    this.sources = sources;
  }

  turnEnded(outcome: string, durationMs: number): void {
    this.turnsEnded.inc({ outcome });
    this.turnDuration.observe({ outcome }, durationMs / 1000);
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
