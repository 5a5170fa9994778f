/**
 * The decision log: the one `DecisionRecorder` of a server. Each decision is appended to its turn's
 * persisted trace and counted in the metrics, so the trace and /metrics always agree.
 */
import type { Logger } from "pino";
import type { HistoryStore } from "../history/store.js";
import type { Decision, DecisionRecorder } from "./decision.js";
import type { Metrics } from "./metrics.js";

export class DecisionLog implements DecisionRecorder {
  constructor(
    private readonly store: Pick<HistoryStore, "appendTrace">,
    private readonly metrics: Metrics,
    private readonly logger: Logger,
  ) {}

  record(turnId: string, decision: Decision): void {
    this.metrics.observeDecision(decision);
    try {
      this.store.appendTrace(turnId, decision);
    } catch (error) {
      // The trace must never break a turn (e.g. the database closing during shutdown).
      this.logger.warn({ err: error, turnId, decision: decision.kind }, "could not persist trace entry");
    }
    // the record is built only when it will be written: a burst of timeouts makes three decisions each
    if (this.logger.isLevelEnabled("debug")) this.logger.debug({ turnId, ...decision }, "decision");
  }
}
