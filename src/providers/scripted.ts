/**
 * The scripted model (docs/semantics.md#the-scripted-model): needs no key and no network, and drives every
 * feature end to end. It reads the newest user message; `/then` lines split it into steps, and step k drives
 * the k-th inference of the turn. In a step, `/tool NAME {json}` is a call (several make one batch), `/think
 * TEXT` a thinking block, any other line text streamed word by word. With no step left it answers with one
 * line per tool result of the turn; a message with no directive gets `You said: <message>`.
 */
import { ModelError } from "../errors.js";
import type { HistoryBlock } from "../history/model.js";
import type { ModelEngine, ModelEvent, ModelRequest } from "./engine.js";

type Step = { lines: string[] };

const DIRECTIVE = /^\/(tool|think|then)\b/;
const RESULT_PREVIEW_CHARS = 200;

export class ScriptedModel implements ModelEngine {
  readonly provider = "scripted";
  readonly defaultModel = "scripted-1";

  async *stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent> {
    const { message, stepIndex, results } = readTurn(request.history);
    const hasDirective = message.split("\n").some((line) => DIRECTIVE.test(line.trim()));
    const steps = hasDirective ? splitSteps(message) : [];
    const step = steps[stepIndex];

    if (!hasDirective) {
      yield* streamWords(`You said: ${message}`, signal);
      yield { type: "stop", reason: "end_turn" };
      return;
    }
    // With no step left, or told not to call tools, it answers from the results it has.
    if (!step || request.toolChoice === "none") {
      const summary = results.map((block) => `${block.name}: ${block.result.slice(0, RESULT_PREVIEW_CHARS)}`);
      yield* streamWords(summary.join("\n") || "Done.", signal);
      yield { type: "stop", reason: "end_turn" };
      return;
    }

    const calls: ModelEvent[] = [];
    const text: string[] = [];
    for (const [index, line] of step.lines.entries()) {
      const trimmed = line.trim();
      if (/^\/think\b/.test(trimmed)) {
        throwIfAborted(signal);
        yield { type: "thinking_delta", text: trimmed.slice("/think".length).trim() };
      } else if (/^\/tool\b/.test(trimmed)) {
        calls.push(parseToolLine(trimmed, stepIndex, index));
      } else if (trimmed !== "") {
        text.push(line);
      }
    }
    if (text.length > 0) yield* streamWords(text.join("\n"), signal);
    for (const call of calls) {
      throwIfAborted(signal);
      yield call;
    }
    yield { type: "stop", reason: calls.length > 0 ? "tool_use" : "end_turn" };
  }
}

/** The newest user message, how many inferences this turn already made, and this turn's results. */
function readTurn(history: readonly HistoryBlock[]) {
  let userIndex = -1;
  for (let index = history.length - 1; index >= 0; index--) {
    const block = history[index];
    if (block?.kind === "text" && block.role === "user") {
      userIndex = index;
      break;
    }
  }
  const userBlock = history[userIndex];
  if (!userBlock || userBlock.kind !== "text")
    throw new ModelError("scripted model: no user message in history");
  const turnBlocks = history.slice(userIndex + 1);
  // An inference leaves one assistant message; its blocks share a contiguous run of positions.
  let stepIndex = 0;
  let previousRole: string | undefined;
  for (const block of turnBlocks) {
    if (block.role === "assistant" && previousRole !== "assistant") stepIndex++;
    previousRole = block.role;
  }
  const results = turnBlocks.filter((block) => block.kind === "tool_response");
  return { message: userBlock.text, stepIndex, results };
}

function splitSteps(message: string): Step[] {
  const steps: Step[] = [{ lines: [] }];
  for (const line of message.split("\n")) {
    if (/^\/then\s*$/.test(line.trim())) steps.push({ lines: [] });
    else steps[steps.length - 1]?.lines.push(line);
  }
  return steps;
}

function parseToolLine(line: string, stepIndex: number, lineIndex: number): ModelEvent {
  const match = /^\/tool\s+([A-Za-z0-9_-]{1,64})\s*(.*)$/.exec(line);
  if (!match) throw new ModelError(`scripted model: "/tool" needs a tool name: ${line}`);
  const [, name = "", json = ""] = match;
  let input: unknown = {};
  if (json.trim() !== "") {
    try {
      input = JSON.parse(json);
    } catch (error) {
      throw new ModelError(
        `scripted model: input of /tool ${name} is not valid JSON (${(error as Error).message})`,
      );
    }
  }
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new ModelError(`scripted model: input of /tool ${name} must be a JSON object`);
  }
  return {
    type: "tool_call",
    id: `scripted_${stepIndex}_${lineIndex}`,
    name,
    input: input as Record<string, unknown>,
  };
}

async function* streamWords(text: string, signal: AbortSignal): AsyncIterable<ModelEvent> {
  for (const word of text.match(/\S+\s*|\s+/g) ?? []) {
    throwIfAborted(signal);
    yield { type: "text_delta", text: word };
    // Yield to the event loop between words, as a network stream would, so aborts land mid-answer.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error("aborted");
}
