/**
 * Token usage end to end: the real server talks to the fake Anthropic and OpenAI servers through the
 * official SDKs; a turn of two inferences (a tool call, then the answer) carries the sum of what the
 * provider reported on `turn_complete.usage`, and its turn record keeps it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, sessionIdOf, turnIdOf } from "../helpers/sse.js";
import { FakeProvider } from "../support/fake-providers.js";

describe("turn_complete.usage", () => {
  let anthropic: FakeProvider;
  let openai: FakeProvider;
  let server: ServerHandle;

  beforeAll(async () => {
    anthropic = await FakeProvider.start("anthropic");
    openai = await FakeProvider.start("openai");
    server = await startServer({
      env: {
        ANTHROPIC_API_KEY: "sk-ant-test",
        ANTHROPIC_BASE_URL: anthropic.baseUrl,
        OPENAI_API_KEY: "sk-openai-test",
        OPENAI_BASE_URL: openai.baseUrl,
      },
    });
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
    await anthropic.close();
    await openai.close();
  });

  it.each(["anthropic", "openai"] as const)(
    "%s: sums the usage of both inferences of the turn, on the event and in the turn record",
    async (provider) => {
      const fake = provider === "anthropic" ? anthropic : openai;
      fake.enqueue(
        { kind: "tools", calls: [{ name: "echo", input: { text: "hi" } }], usage: { input: 100, output: 7 } },
        { kind: "text", text: "All done.", usage: { input: 130, output: 11 } },
      );
      const stream = await SseStream.open(`${server.baseUrl}/api/sessions/stream`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: "echo hi", provider }),
      });
      const events = await stream.untilEnd();
      const complete = events.at(-1) as Extract<TurnEvent, { type: "turn_complete" }>;
      expect(complete.type).toBe("turn_complete");
      expect(complete.usage).toEqual({ inputTokens: 230, outputTokens: 18 });
      if (provider === "openai") {
        // the usage chunk is asked for, as OpenAI requires
        expect(fake.accepted.at(-1)?.body.stream_options).toEqual({ include_usage: true });
      }

      const history = (await (
        await fetch(`${server.baseUrl}/api/sessions/${sessionIdOf(stream)}/history`)
      ).json()) as { turns: { id: string; usage: unknown }[] };
      const turn = history.turns.find((candidate) => candidate.id === turnIdOf(stream));
      expect(turn?.usage).toEqual({ inputTokens: 230, outputTokens: 18 });
    },
  );

  it("scripted: zeros, since no provider counted anything", async () => {
    const stream = await SseStream.open(`${server.baseUrl}/api/sessions/stream`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "hello", provider: "scripted" }),
    });
    const events = await stream.untilEnd();
    expect(events.at(-1)).toMatchObject({
      type: "turn_complete",
      usage: { inputTokens: 0, outputTokens: 0 },
    });
  });
});
