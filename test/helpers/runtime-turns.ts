/**
 * Turns of an in-process runtime, followed from their first event: `runTurn` starts one with the
 * scripted model's message, collects every event (the replay, then live) and waits for its end.
 */
import type { Runtime, TurnEvent } from "../../src/index.js";

export async function runTurn(
  runtime: Runtime,
  message: string,
  onEvent?: (event: TurnEvent, turnId: string) => void,
): Promise<TurnEvent[]> {
  const events: TurnEvent[] = [];
  const turn = runtime.manager.startTurn({ message });
  const { replay } = runtime.manager.follow(turn, 0, (event) => {
    events.push(event);
    onEvent?.(event, turn.turnId);
  });
  events.unshift(...replay);
  await turn.done;
  return events;
}

/** The turn's first tool result; throws when there is none. */
export function resultOf(events: readonly TurnEvent[]) {
  const result = events.find((event) => event.type === "tool_result");
  if (!result || result.type !== "tool_result") throw new Error("no tool_result");
  return result;
}
