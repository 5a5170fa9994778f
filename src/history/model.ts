/**
 * The canonical history model (docs/semantics.md#transcript-integrity): what a session said and did,
 * independent of any provider's wire format. Canonical call ids are minted by the server and unique per
 * session.
 */

export type ToolResponseStatus = "complete" | "error" | "cancelled" | "timeout" | "interrupted" | "rejected";

export type TextBlock = { kind: "text"; role: "user" | "assistant"; text: string };
/**
 * Thinking, with the signature its provider gave it; a signature is only valid for that provider and
 * model, and for the block's exact text. A redacted block (`redacted`: the provider's opaque data) has
 * no text and no signature, and is as bound to its provider and model as a signed one.
 */
export type ThinkingBlock = {
  kind: "thinking";
  role: "assistant";
  text: string;
  signature?: string;
  redacted?: string;
  provider?: string;
  model?: string;
};
export type ToolCallBlock = {
  kind: "tool_call";
  role: "assistant";
  callId: string;
  /** The id the provider used, kept for diagnostics; never used for pairing. */
  providerCallId?: string;
  name: string;
  input: Record<string, unknown>;
};
export type ToolResponseBlock = {
  kind: "tool_response";
  role: "tool";
  callId: string;
  name: string;
  status: ToolResponseStatus;
  result: string;
  isError: boolean;
};

export type BlockContent = TextBlock | ThinkingBlock | ToolCallBlock | ToolResponseBlock;

/** A stored block with its place in the session. */
export type HistoryBlock = BlockContent & {
  sessionId: string;
  turnId: string;
  position: number;
  createdAt: number;
};

export type TurnStatus = "running" | "completed" | "aborted" | "interrupted";

export type TurnRecord = {
  id: string;
  sessionId: string;
  agentId: string;
  provider: string;
  model: string;
  status: TurnStatus;
  stopReason: string | null;
  abortReason: string | null;
  startedAt: number;
  endedAt: number | null;
  toolCallCount: number;
  parentTurnId: string | null;
  depth: number;
  /** Tokens the provider reported, summed over the turn's inferences; null until the turn completes. */
  usage: TokenUsage | null;
};

/** Tokens as the provider reported them (input: the prompt; output: what the model produced). */
export type TokenUsage = { inputTokens: number; outputTokens: number };

export type SessionRecord = {
  id: string;
  agentId: string;
  createdAt: number;
  updatedAt: number;
  /** The principal that owns the session; null when auth is off. */
  principal: string | null;
  stepMode: boolean;
  /** Given at creation or by a rename, else the first user message cut to 80 characters; null before. */
  title: string | null;
};

/** A session as its owner's list shows it. */
export type SessionSummary = SessionRecord & { turnCount: number };
