/**
 * The in-process workload every runtime of the comparison runs (section 1 of `npm run bench`): a turn
 * whose stateless fake model answers K calls of a no-op tool at each of its first S steps and a short
 * text at step S. The model decides from what it is shown alone — how many tool results the turn's
 * conversation holds — so no runtime can benefit from state kept between requests. Also the floor: the
 * same workload as plain function calls, with no framework at all.
 */

/** One cell of the table: K calls per step, S steps with calls (then one answering step). */
export type Cell = { callsPerStep: number; steps: number };

export const CELLS: readonly Cell[] = [
  { callsPerStep: 1, steps: 1 },
  { callsPerStep: 1, steps: 10 },
  { callsPerStep: 5, steps: 1 },
  { callsPerStep: 5, steps: 10 },
];

export const NOOP_TOOL_NAME = "noop";
export const NOOP_TOOL_DESCRIPTION = "Does nothing and returns ok.";
export const NOOP_RESULT = "ok";
export const FINAL_TEXT = "done";
export const USER_MESSAGE = "go";

/** `1×10`: K×S. */
export function cellLabel(cell: Cell): string {
  return `${cell.callsPerStep}×${cell.steps}`;
}

export function callsPerTurn(cell: Cell): number {
  return cell.callsPerStep * cell.steps;
}

/**
 * The fake model's answer, given how many tool results the conversation already holds: the next K
 * calls (their indices, which also make every input of a turn distinct — reins's loop detector stops
 * a turn that repeats one call five times), or the final text once K·S results are in.
 */
export type ModelAnswer = { kind: "calls"; indices: number[] } | { kind: "text"; text: string };

export function answerAfter(cell: Cell, resultsSoFar: number): ModelAnswer {
  if (resultsSoFar >= callsPerTurn(cell)) return { kind: "text", text: FINAL_TEXT };
  return {
    kind: "calls",
    indices: Array.from({ length: cell.callsPerStep }, (_, offset) => resultsSoFar + offset),
  };
}

/** The id of call number `index` of a turn (ids are unique within a turn, as providers' are). */
export function callIdOf(index: number): string {
  return `call_${index}`;
}

/** Counts what a runtime did, so that every timed turn can be checked against the workload. */
export class WorkloadCounter {
  toolCalls = 0;
  finalAnswers = 0;

  reset(): void {
    this.toolCalls = 0;
    this.finalAnswers = 0;
  }

  /** Throws unless exactly `turns` turns of `cell` ran: K·S tool calls and one final answer each. */
  check(label: string, cell: Cell, turns: number): void {
    const expectedCalls = turns * callsPerTurn(cell);
    if (this.toolCalls !== expectedCalls || this.finalAnswers !== turns) {
      throw new Error(
        `${label}, ${cellLabel(cell)}: ${this.toolCalls} tool calls and ${this.finalAnswers} final answers ` +
          `for ${turns} turns, expected ${expectedCalls} and ${turns}`,
      );
    }
  }
}

type BareMessage =
  | { role: "user" | "assistant"; text: string }
  | { role: "assistant"; callId: string; name: string; input: { index: number } }
  | { role: "tool"; callId: string; result: string };

/**
 * The floor: the workload as plain function calls. The model is a function reading the conversation,
 * the tool an async function, the calls of a step awaited together, and the conversation an array.
 */
export function bareLoopTurn(cell: Cell, counter: WorkloadCounter): () => Promise<void> {
  const noop = async (input: { index: number }): Promise<string> => {
    if (!Number.isInteger(input.index)) throw new Error("bare loop: bad input");
    counter.toolCalls++;
    return NOOP_RESULT;
  };
  const model = (conversation: readonly BareMessage[]): ModelAnswer =>
    answerAfter(cell, conversation.filter((message) => message.role === "tool").length);
  return async () => {
    const conversation: BareMessage[] = [{ role: "user", text: USER_MESSAGE }];
    for (;;) {
      const answer = model(conversation);
      if (answer.kind === "text") {
        conversation.push({ role: "assistant", text: answer.text });
        counter.finalAnswers++;
        return;
      }
      const calls = answer.indices.map((index) => ({
        role: "assistant" as const,
        callId: callIdOf(index),
        name: NOOP_TOOL_NAME,
        input: { index },
      }));
      conversation.push(...calls);
      const results = await Promise.all(calls.map((call) => noop(call.input)));
      for (const [position, result] of results.entries()) {
        conversation.push({ role: "tool", callId: calls[position]?.callId ?? "", result });
      }
    }
  };
}
