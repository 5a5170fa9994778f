/**
 * A call's input as the provider is sent it: the object (a non-object input is wrapped as `{ value }`,
 * an unserializable one replaced by `{}`, each lone surrogate in its strings replaced by U+FFFD), its
 * JSON, and what had to be coerced to get there. Computed once per call block object, however often
 * the block is rendered: a block's input does not change after the call is recorded (checked by
 * identity all the same). The facts about the call's ids that id projection finds (ids.ts) are kept
 * beside it, for the same reason.
 */
import type { RenderDiagnostics } from "./types.js";
import type { HistoryBlock, ToolCallBlock } from "../model.js";
import type { IdFacts } from "./ids.js";
import { wellFormedValue } from "../../well-formed.js";

export type CoercionReason = RenderDiagnostics["coercedInputs"][number]["reason"];

/** With the facts about the call's ids, which id projection fills in one format at a time. */
export type SerializedInput = IdFacts & {
  source: unknown;
  input: Record<string, unknown>;
  json: string;
  coercions: readonly CoercionReason[];
};

export const NO_COERCIONS: readonly CoercionReason[] = [];
const serializedInputs = new WeakMap<HistoryBlock & ToolCallBlock, SerializedInput>();

export function serializeInput(block: HistoryBlock & ToolCallBlock): SerializedInput {
  const memo = serializedInputs.get(block);
  if (memo !== undefined && memo.source === block.input) return memo;
  const coercions: CoercionReason[] = [];
  let input: Record<string, unknown>;
  if (isPlainObject(block.input)) {
    input = block.input;
  } else {
    coercions.push("not_an_object");
    input = { value: block.input };
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(input);
  } catch {
    json = undefined;
  }
  if (json === undefined) {
    coercions.push("not_serializable");
    input = {};
    json = "{}";
  } else if (json.includes("\\ud")) {
    // JSON.stringify escapes a lone surrogate (and only that) as \udxxx: look closer only then
    const wellFormedInput = wellFormedValue(input) as Record<string, unknown>;
    if (wellFormedInput !== input) {
      coercions.push("not_well_formed");
      input = wellFormedInput;
      json = JSON.stringify(input);
    }
  }
  const serialized: SerializedInput = {
    source: block.input,
    input,
    json,
    coercions: coercions.length === 0 ? NO_COERCIONS : coercions,
    factsCallId: block.callId,
    factsProviderCallId: block.providerCallId,
    idAcceptance: 0,
    generatedIds: undefined,
  };
  serializedInputs.set(block, serialized);
  return serialized;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
