/**
 * reins as a library: the loop, the tool registry, runner and scheduler, the ModelEngine interface
 * with the scripted engine, the history stores, and the configuration — everything needed to run
 * governed turns in-process without HTTP. The server (`main.ts`) is one user of this face.
 */
export * from "./config/index.js";
export * from "./history/index.js";
export * from "./providers/index.js";
export * from "./tools/index.js";
export * from "./turns/index.js";
export * from "./errors.js";
export {
  eventBodySchema,
  isTerminalEvent,
  ABORT_REASONS,
  type EventBody,
  type EventOf,
  type EventType,
  type TurnEvent,
} from "./events.js";
export { buildApp, type AppDeps } from "./app.js";
export { createRuntime, type Runtime, type RuntimeOptions } from "./runtime.js";
