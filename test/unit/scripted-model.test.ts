/**
 * The scripted model (docs/semantics.md#the-scripted-model), fed canonical history arrays as the loop would
 * build them.
 */
import { describe, expect, it } from "vitest";
import { ModelError } from "../../src/errors.js";
import type { BlockContent, HistoryBlock } from "../../src/history/model.js";
import type { ModelEvent, ModelRequest } from "../../src/providers/engine.js";
import { ScriptedModel } from "../../src/providers/scripted.js";

/** Numbers blocks into a history of one session; a new user text block starts a new turn. */
function history(...blocks: BlockContent[]): HistoryBlock[] {
  let turn = 0;
  return blocks.map((block, position) => {
    if (block.kind === "text" && block.role === "user") turn++;
    return { ...block, sessionId: "ses_1", turnId: `turn_${turn}`, position, createdAt: 0 };
  });
}

const user = (text: string): BlockContent => ({ kind: "text", role: "user", text });
const say = (text: string): BlockContent => ({ kind: "text", role: "assistant", text });
const toolCall = (callId: string, name: string, input: Record<string, unknown> = {}): BlockContent => ({
  kind: "tool_call",
  role: "assistant",
  callId,
  name,
  input,
});
const toolResponse = (callId: string, name: string, result: string): BlockContent => ({
  kind: "tool_response",
  role: "tool",
  callId,
  name,
  status: "complete",
  result,
  isError: false,
});

function request(blocks: HistoryBlock[]): ModelRequest {
  return { turnId: "turn_x", sessionId: "ses_1", model: "scripted-1", history: blocks, tools: [] };
}

async function collect(blocks: HistoryBlock[], signal = new AbortController().signal): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const event of new ScriptedModel().stream(request(blocks), signal)) events.push(event);
  return events;
}

const textOf = (events: ModelEvent[]) =>
  events.flatMap((event) => (event.type === "text_delta" ? [event.text] : [])).join("");
const callsOf = (events: ModelEvent[]) =>
  events.flatMap((event) => (event.type === "tool_call" ? [{ name: event.name, input: event.input }] : []));
const stopOf = (events: ModelEvent[]) => events.at(-1);

describe("ScriptedModel", () => {
  it("answers a message without directives with `You said: …`, word by word", async () => {
    const events = await collect(history(user("hello big world")));
    expect(events).toEqual([
      { type: "text_delta", text: "You " },
      { type: "text_delta", text: "said: " },
      { type: "text_delta", text: "hello " },
      { type: "text_delta", text: "big " },
      { type: "text_delta", text: "world" },
      { type: "stop", reason: "end_turn" },
    ]);
  });

  it("reads the newest user message, not an earlier turn's", async () => {
    const events = await collect(
      history(
        user("/tool echo {}"),
        toolCall("c1", "echo"),
        toolResponse("c1", "echo", "x"),
        say("ok"),
        user("again"),
      ),
    );
    expect(textOf(events)).toBe("You said: again");
    expect(callsOf(events)).toEqual([]);
  });

  it("drives the k-th inference of a turn with step k of the script", async () => {
    const script = [
      '/tool echo {"text":"one"}',
      "/then",
      '/tool echo {"text":"two"}',
      "/then",
      "all done",
    ].join("\n");
    const first = await collect(history(user(script)));
    expect(callsOf(first)).toEqual([{ name: "echo", input: { text: "one" } }]);
    expect(stopOf(first)).toEqual({ type: "stop", reason: "tool_use" });

    const second = await collect(
      history(user(script), toolCall("c1", "echo", { text: "one" }), toolResponse("c1", "echo", "one")),
    );
    expect(callsOf(second)).toEqual([{ name: "echo", input: { text: "two" } }]);
    expect(stopOf(second)).toEqual({ type: "stop", reason: "tool_use" });

    const third = await collect(
      history(
        user(script),
        toolCall("c1", "echo", { text: "one" }),
        toolResponse("c1", "echo", "one"),
        toolCall("c2", "echo", { text: "two" }),
        toolResponse("c2", "echo", "two"),
      ),
    );
    expect(callsOf(third)).toEqual([]);
    expect(textOf(third)).toBe("all done");
    expect(stopOf(third)).toEqual({ type: "stop", reason: "end_turn" });
  });

  it("makes several /tool lines of one step one batch, in order", async () => {
    const script = ['/tool echo {"text":"a"}', '/tool sleep {"ms":5}', "/tool hang {}", "/tool hang"].join(
      "\n",
    );
    const events = await collect(history(user(script)));
    expect(callsOf(events)).toEqual([
      { name: "echo", input: { text: "a" } },
      { name: "sleep", input: { ms: 5 } },
      { name: "hang", input: {} },
      { name: "hang", input: {} },
    ]);
    expect(events.filter((event) => event.type === "stop")).toEqual([{ type: "stop", reason: "tool_use" }]);
  });

  it("turns /think into a thinking block and other lines into streamed text", async () => {
    const events = await collect(history(user("/think let me see\nthe answer is 4")));
    expect(events).toEqual([
      { type: "thinking_delta", text: "let me see" },
      { type: "text_delta", text: "the " },
      { type: "text_delta", text: "answer " },
      { type: "text_delta", text: "is " },
      { type: "text_delta", text: "4" },
      { type: "stop", reason: "end_turn" },
    ]);
  });

  it("answers with one line per tool result of the turn when no step is left", async () => {
    const long = "x".repeat(250);
    const events = await collect(
      history(
        user('/tool echo {"text":"hi"}\n/tool echo {"text":"long"}'),
        toolCall("c1", "echo", { text: "hi" }),
        toolCall("c2", "echo", { text: "long" }),
        toolResponse("c1", "echo", "hi there"),
        toolResponse("c2", "echo", long),
      ),
    );
    expect(textOf(events)).toBe(`echo: hi there\necho: ${"x".repeat(200)}`);
    expect(callsOf(events)).toEqual([]);
    expect(stopOf(events)).toEqual({ type: "stop", reason: "end_turn" });
  });

  it("does not count an earlier turn's results in the summary", async () => {
    const events = await collect(
      history(
        user("/tool echo {}"),
        toolCall("c1", "echo"),
        toolResponse("c1", "echo", "old"),
        say("echo: old"),
        user("/tool sleep {}"),
        toolCall("c2", "sleep"),
        toolResponse("c2", "sleep", "new"),
      ),
    );
    expect(textOf(events)).toBe("sleep: new");
  });

  it("fails with a ModelError naming the tool when its input is not valid JSON", async () => {
    const failure = collect(history(user("/tool echo {not json")));
    await expect(failure).rejects.toBeInstanceOf(ModelError);
    await expect(failure).rejects.toThrow(/\/tool echo is not valid JSON/);
  });

  it("fails with a ModelError when a tool's input is JSON but not an object", async () => {
    await expect(collect(history(user("/tool echo [1,2]")))).rejects.toThrow(
      /input of \/tool echo must be a JSON object/,
    );
  });

  it("stops streaming when its signal is aborted", async () => {
    const controller = new AbortController();
    const reason = new Error("stop now");
    const received: ModelEvent[] = [];
    const consume = (async () => {
      for await (const event of new ScriptedModel().stream(
        request(history(user("one two three four five"))),
        controller.signal,
      )) {
        received.push(event);
        if (received.length === 2) controller.abort(reason);
      }
    })();
    await expect(consume).rejects.toBe(reason);
    expect(received).toEqual([
      { type: "text_delta", text: "You " },
      { type: "text_delta", text: "said: " },
    ]);
  });

  it("yields nothing under an already-aborted signal", async () => {
    const controller = new AbortController();
    controller.abort(new Error("gone"));
    const received: ModelEvent[] = [];
    await expect(
      (async () => {
        for await (const event of new ScriptedModel().stream(request(history(user("hi"))), controller.signal))
          received.push(event);
      })(),
    ).rejects.toThrow("gone");
    expect(received).toEqual([]);
  });
});

describe("ScriptedModel directive matching", () => {
  it("reads lines that only begin like a directive as text", async () => {
    const events = await collect(
      history(user('/thinking about it\n/toolbox is great\n/tool echo {"text":"x"}')),
    );
    expect(events.some((event) => event.type === "thinking_delta")).toBe(false);
    expect(textOf(events)).toBe("/thinking about it\n/toolbox is great");
    expect(callsOf(events)).toEqual([{ name: "echo", input: { text: "x" } }]);
  });
});
