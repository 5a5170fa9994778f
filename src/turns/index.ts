export {
  BlankMessageError,
  SessionBusyError,
  SessionNotFoundError,
  ShuttingDownError,
  StoreUnavailableError,
  UnknownProviderError,
} from "./errors.js";
export { describeActiveTurn, type ActiveTurnDetails } from "./active-details.js";
export {
  TurnManager,
  type StartTurnRequest,
  type TurnManagerDeps,
  type TurnManagerSettings,
} from "./manager.js";
export { TurnRun, ChildTurnBudget, type RunningCall, type TurnRunOutcome } from "./turn-run.js";
export { publishToolResult, type PublishedOutcome, type ToolResultTarget } from "./tool-results.js";
export { TurnEventBus, type EventListener } from "./event-bus.js";
export {
  ToolCallingLoop,
  type LoopOptions,
  type LoopPhase,
  type LoopResult,
  type LoopSnapshot,
  type LoopTurn,
} from "./loop.js";
export { recoverInterruptedTurns } from "./recovery.js";
