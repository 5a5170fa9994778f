export {
  TurnManager,
  SessionBusyError,
  SessionNotFoundError,
  UnknownProviderError,
  type ActiveTurnDetails,
  type StartTurnRequest,
  type TurnManagerDeps,
  type TurnManagerSettings,
} from "./manager.js";
export { ActiveTurn } from "./active-turn.js";
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
