/**
 * The tools that touch the system (docs/semantics.md#the-scripted-model): `exec`, `read_file`, `web_fetch`.
 * Each is off unless enabled in `tools.system.enabled`; `exec` and `read_file` are confined at call time to
 * the call's `allowedRoots` and `workspace`.
 */
import type { ToolDefinition } from "../types.js";
import type { ProcessGroups } from "./process-groups.js";
import type { ExecIsolation, SandboxOptions } from "./sandbox.js";
import { createExecTool } from "./exec.js";
import { createReadFileTool } from "./read-file.js";
import { createWebFetchTool } from "./web-fetch.js";

export { createExecTool, type ExecInput, type ExecSettings } from "./exec.js";
export { createReadFileTool, type ReadFileInput, type ReadFileSettings } from "./read-file.js";
export {
  createWebFetchTool,
  type ResolveHost,
  type WebFetchInput,
  type WebFetchSettings,
} from "./web-fetch.js";
export { AddressPolicy, restrictedRangeOf } from "./address-policy.js";
export { EXEC_PROCESS_RECORD_FILE, ProcessGroups } from "./process-groups.js";
export { ProcessRecord } from "./process-record.js";
export {
  SandboxUnavailableError,
  type ExecIsolation,
  type SandboxOptions,
  type SandboxProbe,
  type SandboxProbeResult,
} from "./sandbox.js";
export { confinePath, isInside, resolveConfinement, type Confinement } from "./paths.js";

export type SystemToolName = "exec" | "read_file" | "web_fetch";

export type SystemToolSettings = {
  enabled: readonly SystemToolName[];
  execKillGraceMs: number;
  maxOutputBytes: number;
  /** How `exec` is isolated (`bwrap` unless given); see ExecSettings. */
  execIsolation?: ExecIsolation;
  /** Paths `exec` and `read_file` must never reach, even inside an allowed root (the server's DATA_DIR). */
  privatePaths?: readonly string[];
  /** Where bwrap is and how its start-up probe runs. */
  sandbox?: SandboxOptions;
  processGroups?: ProcessGroups;
  /** Destinations `web_fetch` may reach although not public (hosts, IPs, CIDR ranges). */
  webFetchAllow?: readonly string[];
};

const FACTORIES: Record<SystemToolName, (settings: SystemToolSettings) => ToolDefinition> = {
  exec: (settings) => createExecTool(settings) as ToolDefinition,
  read_file: (settings) => createReadFileTool(settings) as ToolDefinition,
  web_fetch: (settings) => createWebFetchTool(settings) as ToolDefinition,
};

/** The enabled system tools, each a fresh definition built with `settings`. */
export function systemTools(settings: SystemToolSettings): ToolDefinition[] {
  const enabled = new Set(settings.enabled);
  return (Object.keys(FACTORIES) as SystemToolName[])
    .filter((name) => enabled.has(name))
    .map((name) => FACTORIES[name](settings));
}
