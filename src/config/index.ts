export { loadConfig, parseConfig, type LoadedConfig } from "./load.js";
export { clampTimeouts, type TimeoutPair } from "./clamp.js";
export { ENV_BINDINGS, CONFIG_FILE_VARIABLE } from "./env.js";
export {
  configSchema,
  DEFAULT_TOOL_TIMEOUT_MS,
  type Config,
  type ConfigInput,
  type ToolOverride,
} from "./schema.js";
