/**
 * The transcript renderer (docs/semantics.md#transcript-integrity): canonical history → a transcript the
 * selected provider accepts, with diagnostics; provider profiles; id projection; the context budget; shape
 * adapters; a per-session cache that renders only what a session added since its previous render.
 */
export { renderTranscript } from "./render.js";
export { renderProviderRequest, type ProviderRequestMessages } from "./request.js";
export {
  DEFAULT_TRANSCRIPT_CACHE_SESSIONS,
  TranscriptCache,
  type TranscriptCacheOptions,
  type TranscriptCacheStats,
} from "./transcript-cache.js";
export {
  PROFILES,
  PROFILE_NAMES,
  TOOL_NAME_PATTERN,
  getProfile,
  isProfileName,
  type IdFormat,
  type ProfileName,
  type ProviderFormat,
  type ProviderProfile,
  type ShapeQuirks,
  type ThinkingPolicy,
} from "./profiles.js";
export {
  ID_PATTERNS,
  OPENAI_MAX_ID_LENGTH,
  IdProjector,
  isWellFormedId,
  projectCallIds,
  type IdProjection,
  type ProjectableCall,
  type ProjectionTarget,
} from "./ids.js";
export {
  CHARACTERS_PER_TOKEN,
  applyBudget,
  estimateMessageTokens,
  estimateTranscriptTokens,
  type BudgetOutcome,
} from "./budget.js";
export { sanitizeToolName } from "./tool-names.js";
export {
  CONTINUE_TEXT,
  EMPTY_RESULT_TEXT,
  NO_REPLY_BRIDGE_TEXT,
  missingResultText,
  omittedTurnsSummary,
} from "./wording.js";
export { toAnthropicRequestMessages } from "./adapters-anthropic.js";
export {
  toOpenAIChatMessages,
  type AssistantMessageWithReasoning,
  type OpenAIChatMessage,
  type ToolMessageWithName,
} from "./adapters-openai.js";
export type * from "./types.js";
