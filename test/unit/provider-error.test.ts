/**
 * A provider's error as the turn reports it (docs/semantics.md#resilience): the OpenAI-format engine,
 * through the real SDK, against a loopback server answering with the error bodies OpenAI-compatible
 * providers send — OpenAI's `{error: {message}}`, Mistral's `{object: "error", message}` (a string, or an
 * object for a validation error), a bare JSON string — always quotes the provider's own words.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OpenAICompatibleEngine } from "../../src/providers/openai-compatible.js";
import { ProviderError } from "../../src/providers/provider-error.js";

let server: Server;
let baseUrl = "";
/** The body the next request is answered with, status 400. */
let nextBody = "";

beforeAll(async () => {
  server = createServer((request, response) => {
    request.resume();
    request.on("end", () => response.writeHead(400, { "content-type": "application/json" }).end(nextBody));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function failureOf(body: unknown): Promise<ProviderError> {
  nextBody = JSON.stringify(body);
  const engine = new OpenAICompatibleEngine({
    profile: "mistral",
    apiKey: "sk-test",
    baseUrl,
    model: "mistral-test",
    logger: pino({ level: "silent" }),
  });
  const request = { turnId: "turn_1", sessionId: "ses_1", model: "mistral-test", history: [], tools: [] };
  try {
    for await (const _event of engine.stream(request, new AbortController().signal)) {
      // no event comes before the error
    }
  } catch (error) {
    if (error instanceof ProviderError) return error;
    throw error;
  }
  throw new Error("the request did not fail");
}

describe("a provider's 400, quoted", () => {
  it.each<[string, unknown, string]>([
    ["OpenAI's envelope", { error: { message: "bad model", type: "invalid_request_error" } }, "bad model"],
    [
      "Mistral's body",
      { object: "error", message: "Unexpected role 'user' after role 'tool'" },
      "Unexpected role 'user' after role 'tool'",
    ],
    [
      "Mistral's validation error",
      { object: "error", message: { detail: [{ msg: "Field required" }] } },
      '{"detail":[{"msg":"Field required"}]}',
    ],
    ["a bare JSON string", "upstream said no", "upstream said no"],
  ])("%s", async (_shape, body, quoted) => {
    const failure = await failureOf(body);
    expect(failure.status).toBe(400);
    expect(failure.providerMessage).toBe(quoted);
    expect(failure.message).toBe(`mistral returned 400: ${quoted}`);
  });
});
