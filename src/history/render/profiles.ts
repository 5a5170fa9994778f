/**
 * Provider profiles (docs/semantics.md#transcript-integrity, docs/providers.md): for each provider the renderer
 * targets, its wire family, tool-call id format, thinking policy, message-shape quirks and context budget. A
 * profile is plain data; the renderer and the adapters read it, never the provider's name.
 */

export type ProfileName = "anthropic" | "openai" | "kimi" | "mistral";
export const PROFILE_NAMES: readonly ProfileName[] = ["anthropic", "openai", "kimi", "mistral"];

/** The request shape a provider speaks. */
export type ProviderFormat = "anthropic-messages" | "openai-chat";

/**
 * Tool-call id formats: `toolu` = `toolu_…` of `[A-Za-z0-9_-]`; `call` = `call_…` of at most 40
 * characters; `kimi-functions` = `functions.<name>:<index>`; `mistral-9` = exactly 9 of `[A-Za-z0-9]`.
 */
export type IdFormat = "toolu" | "call" | "kimi-functions" | "mistral-9";

/**
 * What happens to thinking blocks: `signed-blocks` keeps the provider's own signed blocks at the start
 * of their assistant message (Anthropic); `reasoning-content` turns their text into `reasoning_content`
 * on assistant messages with tool calls (Kimi); `drop` removes them (OpenAI, Mistral).
 */
export type ThinkingPolicy = "signed-blocks" | "reasoning-content" | "drop";

export type ShapeQuirks = {
  /** False: an assistant message with tool calls carries no text (Mistral). */
  textBesideToolCalls: boolean;
  /** True: a user message may not follow tool results directly; an assistant message bridges them (Mistral). */
  assistantBetweenToolResultsAndUser: boolean;
  /** True: the request must end with a user message or tool results (Mistral). */
  lastMessageUserOrTool: boolean;
  /** True: tool result messages carry the function `name` (Mistral, Kimi). */
  toolResultName: boolean;
};

export type ProviderProfile = {
  name: ProfileName;
  /** The provider name thinking blocks record (`ThinkingBlock.provider`); signatures are only valid for it. */
  provider: string;
  format: ProviderFormat;
  idFormat: IdFormat;
  thinking: ThinkingPolicy;
  /** Tool names the provider accepts; others are sanitized deterministically. */
  toolNamePattern: RegExp;
  quirks: ShapeQuirks;
  /**
   * Estimated tokens (ceil(characters / 4)) an agent's instructions and the rendered transcript may use
   * together before older turns are dropped.
   */
  contextBudgetTokens: number;
};

/** `^[a-zA-Z0-9_-]{1,64}$`: Anthropic's and Mistral's documented pattern, and OpenAI's for declared functions. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

export const DEFAULT_ANTHROPIC_BUDGET_TOKENS = 180_000;
export const DEFAULT_OPENAI_BUDGET_TOKENS = 120_000;
export const DEFAULT_KIMI_BUDGET_TOKENS = 120_000;
export const DEFAULT_MISTRAL_BUDGET_TOKENS = 120_000;

const NO_QUIRKS: ShapeQuirks = {
  textBesideToolCalls: true,
  assistantBetweenToolResultsAndUser: false,
  lastMessageUserOrTool: false,
  toolResultName: false,
};

export const PROFILES: Readonly<Record<ProfileName, ProviderProfile>> = Object.freeze({
  anthropic: {
    name: "anthropic",
    provider: "anthropic",
    format: "anthropic-messages",
    idFormat: "toolu",
    thinking: "signed-blocks",
    toolNamePattern: TOOL_NAME_PATTERN,
    quirks: NO_QUIRKS,
    contextBudgetTokens: DEFAULT_ANTHROPIC_BUDGET_TOKENS,
  },
  openai: {
    name: "openai",
    provider: "openai",
    format: "openai-chat",
    idFormat: "call",
    thinking: "drop",
    toolNamePattern: TOOL_NAME_PATTERN,
    quirks: NO_QUIRKS,
    contextBudgetTokens: DEFAULT_OPENAI_BUDGET_TOKENS,
  },
  kimi: {
    name: "kimi",
    provider: "kimi",
    format: "openai-chat",
    idFormat: "kimi-functions",
    thinking: "reasoning-content",
    toolNamePattern: TOOL_NAME_PATTERN,
    quirks: { ...NO_QUIRKS, toolResultName: true },
    contextBudgetTokens: DEFAULT_KIMI_BUDGET_TOKENS,
  },
  mistral: {
    name: "mistral",
    provider: "mistral",
    format: "openai-chat",
    idFormat: "mistral-9",
    thinking: "drop",
    toolNamePattern: TOOL_NAME_PATTERN,
    quirks: {
      textBesideToolCalls: false,
      assistantBetweenToolResultsAndUser: true,
      lastMessageUserOrTool: true,
      toolResultName: true,
    },
    contextBudgetTokens: DEFAULT_MISTRAL_BUDGET_TOKENS,
  },
});

export function isProfileName(name: string): name is ProfileName {
  return (PROFILE_NAMES as readonly string[]).includes(name);
}

/**
 * The profile called `name`, optionally with its own context budget (e.g. from configuration).
 * Throws on an unknown name so a misspelt provider fails loudly instead of rendering the wrong shape.
 */
export function getProfile(name: string, overrides: { contextBudgetTokens?: number } = {}): ProviderProfile {
  if (!isProfileName(name)) {
    throw new Error(`Unknown provider profile "${name}"; expected one of ${PROFILE_NAMES.join(", ")}.`);
  }
  const base = PROFILES[name];
  if (overrides.contextBudgetTokens === undefined) return base;
  if (!Number.isFinite(overrides.contextBudgetTokens) || overrides.contextBudgetTokens <= 0) {
    throw new Error(`contextBudgetTokens must be a positive number, got ${overrides.contextBudgetTokens}.`);
  }
  return { ...base, contextBudgetTokens: overrides.contextBudgetTokens };
}
