/**
 * The two peer runtimes of the in-process comparison, each driven by the workload's stateless fake
 * model written against the peer's own model interface:
 * - Vercel AI SDK (`ai`, pinned): `generateText` with a `LanguageModelV3` whose `doGenerate` answers
 *   from the tool results in `options.prompt`, the no-op as a `tool()` with an `execute`, and
 *   `stopWhen: stepCountIs(S + 1)` so the answering step is reached;
 * - OpenAI Agents JS (`@openai/agents-core`, pinned): `Runner.run` of an `Agent` whose `Model` answers
 *   from the `function_call_result` items of `request.input`, the no-op as a function `tool()`,
 *   tracing off and `maxTurns: S + 1`.
 * Each factory returns a function that runs one turn; a turn that does not end with the final text
 * throws.
 */
import { Agent, Runner, Usage, setTracingDisabled, tool as agentsTool } from "@openai/agents-core";
import type { Model, ModelRequest, ModelResponse } from "@openai/agents-core";
import { generateText, stepCountIs, tool as aiTool, type LanguageModel } from "ai";
import { z } from "zod";
import {
  NOOP_RESULT,
  NOOP_TOOL_DESCRIPTION,
  NOOP_TOOL_NAME,
  USER_MESSAGE,
  FINAL_TEXT,
  answerAfter,
  callIdOf,
  type Cell,
  type WorkloadCounter,
} from "./workload.js";

export type RunTurn = () => Promise<void>;

// ---------------------------------------------------------------------------------------------------
// Vercel AI SDK

/** The language model interface `ai` 6 expects of a model object (specification v3). */
type LanguageModelV3 = Extract<LanguageModel, { specificationVersion: "v3" }>;
type GenerateOptions = Parameters<LanguageModelV3["doGenerate"]>[0];

const ZERO_AI_USAGE = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};

function fakeLanguageModel(cell: Cell, counter: WorkloadCounter): LanguageModelV3 {
  const countResults = (options: GenerateOptions) => {
    let results = 0;
    for (const message of options.prompt) {
      if (message.role !== "tool") continue;
      for (const part of message.content) if (part.type === "tool-result") results++;
    }
    return results;
  };
  return {
    specificationVersion: "v3",
    provider: "bench",
    modelId: "bench-fake",
    supportedUrls: {},
    async doGenerate(options) {
      const answer = answerAfter(cell, countResults(options));
      if (answer.kind === "text") counter.finalAnswers++;
      return {
        content:
          answer.kind === "text"
            ? [{ type: "text", text: answer.text }]
            : answer.indices.map((index) => ({
                type: "tool-call" as const,
                toolCallId: callIdOf(index),
                toolName: NOOP_TOOL_NAME,
                input: JSON.stringify({ index }),
              })),
        finishReason: { unified: answer.kind === "text" ? "stop" : "tool-calls", raw: undefined },
        usage: ZERO_AI_USAGE,
        warnings: [],
      };
    },
    doStream() {
      throw new Error("bench fake model: generateText does not stream");
    },
  };
}

/** One `generateText` turn of `cell` per call. */
export function aiSdkTurn(cell: Cell, counter: WorkloadCounter): RunTurn {
  const model = fakeLanguageModel(cell, counter);
  const tools = {
    [NOOP_TOOL_NAME]: aiTool({
      description: NOOP_TOOL_DESCRIPTION,
      inputSchema: z.object({ index: z.number().int() }),
      execute: async () => {
        counter.toolCalls++;
        return NOOP_RESULT;
      },
    }),
  };
  return async () => {
    const result = await generateText({
      model,
      tools,
      prompt: USER_MESSAGE,
      stopWhen: stepCountIs(cell.steps + 1),
    });
    if (result.text !== FINAL_TEXT)
      throw new Error(`ai generateText answered ${JSON.stringify(result.text)}`);
  };
}

// ---------------------------------------------------------------------------------------------------
// OpenAI Agents JS

class FakeAgentsModel implements Model {
  constructor(
    private readonly cell: Cell,
    private readonly counter: WorkloadCounter,
  ) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const input = typeof request.input === "string" ? [] : request.input;
    const results = input.filter((item) => item.type === "function_call_result").length;
    const answer = answerAfter(this.cell, results);
    if (answer.kind === "text") {
      this.counter.finalAnswers++;
      return {
        usage: new Usage(),
        output: [
          {
            type: "message",
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: answer.text }],
          },
        ],
      };
    }
    return {
      usage: new Usage(),
      output: answer.indices.map((index) => ({
        type: "function_call" as const,
        callId: callIdOf(index),
        name: NOOP_TOOL_NAME,
        status: "completed" as const,
        arguments: JSON.stringify({ index }),
      })),
    };
  }

  // eslint-disable-next-line require-yield -- the runner is only ever asked for whole responses here
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("bench fake model: Runner.run without stream does not stream");
  }
}

/** One `Runner.run` turn of `cell` per call, tracing off. */
export function openAiAgentsTurn(cell: Cell, counter: WorkloadCounter): RunTurn {
  setTracingDisabled(true);
  const runner = new Runner({ tracingDisabled: true });
  const agent = new Agent({
    name: "bench",
    instructions: "Call the tool as told.",
    model: new FakeAgentsModel(cell, counter),
    tools: [
      agentsTool({
        name: NOOP_TOOL_NAME,
        description: NOOP_TOOL_DESCRIPTION,
        parameters: z.object({ index: z.number().int() }),
        execute: async () => {
          counter.toolCalls++;
          return NOOP_RESULT;
        },
      }),
    ],
  });
  return async () => {
    const result = await runner.run(agent, USER_MESSAGE, { maxTurns: cell.steps + 1 });
    if (result.finalOutput !== FINAL_TEXT) {
      throw new Error(`agents Runner.run answered ${JSON.stringify(result.finalOutput)}`);
    }
  };
}
