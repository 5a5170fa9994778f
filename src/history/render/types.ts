/**
 * The renderer's provider-neutral output: user text, assistant messages (text, thinking, tool calls)
 * and a tool-results message right after each assistant message that has calls. Adapters translate
 * this into a provider's request shape; they never repair it.
 */
import type { ToolResponseStatus } from "../model.js";
import type { IdFormat, ProfileName, ProviderFormat } from "./profiles.js";

export type RenderedUserMessage = { role: "user"; text: string };

export type RenderedTextPart = { type: "text"; text: string };
/**
 * Thinking kept only for the provider (and model) that made it: a signed block, or a redacted one
 * (`data`: the provider's opaque content). Either stays in its place among the message's thinking.
 */
export type RenderedThinkingPart =
  { type: "thinking"; text: string; signature: string } | { type: "redacted_thinking"; data: string };
export type RenderedToolCallPart = {
  type: "tool_call";
  /** The id the provider sees (projected per profile). */
  id: string;
  canonicalId: string;
  /** The name the provider sees (sanitized to the provider's pattern). */
  name: string;
  input: Record<string, unknown>;
  /** `input` as JSON, computed once (OpenAI-family `arguments`, size estimates). */
  arguments: string;
};
export type RenderedAssistantPart = RenderedTextPart | RenderedThinkingPart | RenderedToolCallPart;

export type RenderedAssistantMessage = {
  role: "assistant";
  /** Thinking first, then text, then tool calls. Never empty. */
  content: RenderedAssistantPart[];
  /** Kimi with thinking on: the message's reasoning text (`""` when none was recorded). */
  reasoningContent?: string;
};

export type RenderedToolResult = {
  /** The projected id of the call it answers. */
  id: string;
  canonicalId: string;
  name: string;
  /** Never empty or whitespace-only. */
  content: string;
  isError: boolean;
  status: ToolResponseStatus;
  /** True when the renderer made it up because no result was recorded. */
  synthetic: boolean;
};
/** Exactly one result per call of the assistant message before it, in call order. */
export type RenderedToolResultsMessage = { role: "tool_results"; results: RenderedToolResult[] };

export type RenderedMessage = RenderedUserMessage | RenderedAssistantMessage | RenderedToolResultsMessage;

export type RenderOptions = {
  /** Thinking is enabled for the request (default false). */
  thinking?: boolean;
  /** The model the request goes to: signed thinking from another model is dropped. */
  model?: string;
  /**
   * Overrides the profile's context budget (estimated tokens): the instructions (`system`) and the
   * transcript together. The transcript gets what the instructions leave.
   */
  budgetTokens?: number;
  /**
   * The agent's instructions. A provider request carries them as its `system` (Anthropic) or as the
   * `system` message its messages start with (OpenAI formats), made in the same copy as the rest;
   * `renderTranscript` leaves them out. Either way their estimated tokens come out of the budget
   * first (`diagnostics.budget.instructionTokens`). Never part of the rendered transcript or of what
   * a `TranscriptCache` keeps. Empty: none.
   */
  system?: string;
};

export type IdMaps = {
  /** canonical call id → projected id, for every emitted call. */
  toProjected: ReadonlyMap<string, string>;
  /** projected id → canonical call id: maps model output that names a projected id back. */
  toCanonical: ReadonlyMap<string, string>;
};

export type DedupeReason =
  "real_beats_synthetic" | "complete_beats_error" | "first_real_wins" | "first_synthetic_wins";

/**
 * Everything the renderer decided, for `/transcript`, logs and tests. JSON-serializable. `position`
 * is the history block's position, or -1 for a decision taken after assembly (a thinking block removed
 * when signed thinking had to be turned off, text beside tool calls that Mistral could not take).
 */
export type RenderDiagnostics = {
  profile: ProfileName;
  format: ProviderFormat;
  idFormat: IdFormat;
  thinking: { requested: boolean; effective: boolean; reason?: string };
  /** Distinct canonical ids of the history's tool calls, in order of first appearance. */
  callIdsSeen: string[];
  emittedCalls: { canonicalId: string; projectedId: string; name: string }[];
  emittedResults: {
    canonicalId: string;
    projectedId: string;
    status: ToolResponseStatus;
    synthetic: boolean;
  }[];
  /** How projected ids were chosen: kept native ids and generated ones. */
  idProjection: { kept: number; generated: number };
  /** One entry per duplicate result dropped: which position won and why. */
  dedupe: {
    callId: string;
    keptPosition: number;
    keptStatus: ToolResponseStatus;
    droppedPosition: number;
    droppedStatus: ToolResponseStatus;
    reason: DedupeReason;
  }[];
  /** A second tool_call block with a canonical id already seen: dropped, never duplicated. */
  duplicateCalls: { callId: string; position: number }[];
  syntheticResults: { callId: string; projectedId: string; name: string; reason: "no_result_recorded" }[];
  /** Results whose call is nowhere in the history: dropped. */
  orphanResults: { callId: string; positions: number[] }[];
  /** Results recorded before their call, placed after it. */
  resultsBeforeCall: { callId: string; position: number }[];
  /** Text or thinking found between a call and its result, placed after the results. */
  movedBlocks: { position: number; kind: "text" | "thinking"; role: "user" | "assistant" }[];
  /**
   * Thinking not sent, and why. `redacted`: a redacted block for a profile that sends thinking as
   * text (Kimi); its data is only for the provider and model that made it.
   */
  droppedThinking: {
    position: number;
    reason:
      | "thinking_disabled"
      | "profile_drops_thinking"
      | "no_signature"
      | "other_provider"
      | "other_model"
      | "no_tool_calls"
      | "no_other_content"
      | "redacted";
  }[];
  droppedText: { position: number; role: "user" | "assistant"; reason: "empty" | "beside_tool_calls" }[];
  /** Text split off an assistant message with tool calls into its own message before it (Mistral). */
  splitText: { callIds: string[] }[];
  renamedTools: { callId: string; from: string; to: string }[];
  coercedInputs: { callId: string; reason: "not_an_object" | "not_serializable" | "not_well_formed" }[];
  /** Results with no text, rendered with a placeholder so no provider sees empty content. */
  emptyResults: { callId: string }[];
  /** Messages the renderer added so the provider's role rules hold. */
  insertedMessages: { index: number; role: "user" | "assistant"; reason: string }[];
  /** The history's blocks were not in position order and were sorted. */
  reordered: boolean;
  budget: BudgetReport & {
    /** The whole budget: the instructions' tokens and the transcript's (`RenderOptions.budgetTokens`). */
    budgetTokens: number;
    /** The agent's instructions' estimated tokens, taken from the budget before the transcript's. */
    instructionTokens: number;
  };
};

/** The numbers behind the diagnostics, counted during the render (the lists are built on demand). */
export type RenderCounts = {
  /** Distinct canonical call ids in the history. */
  calls: number;
  /** Calls (and so results) in the rendered transcript, after the budget. */
  emittedCalls: number;
  /** Of those, results the renderer made up because none was recorded. */
  syntheticResults: number;
  /** Duplicate results dropped, duplicate call blocks dropped, results without a call. */
  dedupe: number;
  duplicateCalls: number;
  orphanResults: number;
  /** Projected ids kept as the provider or the server wrote them, and generated ones. */
  keptIds: number;
  generatedIds: number;
  droppedTurns: number;
};

/**
 * A rendered transcript. `diagnostics` and `ids` list every call: they are built on first access
 * (and then kept), so a render that nobody inspects does not pay for them.
 */
export type RenderResult = {
  readonly messages: RenderedMessage[];
  readonly diagnostics: RenderDiagnostics;
  readonly ids: IdMaps;
  readonly counts: RenderCounts;
};

/** What the context budget did to a transcript (diagnostics.budget, without the limit itself). */
export type BudgetReport = {
  /** The transcript's estimated tokens before the cut, and after it (the instructions' not included). */
  estimatedTokens: number;
  renderedTokens: number;
  droppedTurns: number;
  droppedMessages: number;
  droppedToolCalls: number;
  droppedCallIds: string[];
  summary?: string;
  /**
   * Even the newest turn alone exceeds the budget (in a render's diagnostics: with the instructions, or
   * the instructions alone do); it is kept anyway.
   */
  overBudget: boolean;
};
