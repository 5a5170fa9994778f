export { ToolRegistry, type ToolSpec } from "./registry.js";
export { ToolRunner, abortReasonOf, type CallScope, type RunnerSettings, type RunnerDeps } from "./runner.js";
export { ToolScheduler, type SchedulerSettings } from "./scheduler.js";
export { resolveCall, type LimitSettings, type ResolvedCall } from "./limits.js";
export { cancelledResult, interruptedResult, timeoutResult, errorResult } from "./results.js";
export { builtinTools, echoTool, sleepTool, hangTool } from "./builtin/index.js";
export {
  PermanentToolError,
  ToolError,
  TransientToolError,
  type Classification,
  type ToolErrorOptions,
} from "./resilience/tool-error.js";
export type {
  ToolCallHooks,
  ToolCallRequest,
  ToolConcurrency,
  ToolContext,
  ToolDefinition,
  ToolOutcome,
  ToolOutcomeStatus,
} from "./types.js";
