import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream } from "../helpers/sse.js";

describe("smoke", () => {
  let server: ServerHandle;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    await server.stop();
    server.cleanup();
  });

  it("answers a plain message", async () => {
    const stream = await SseStream.start(server.baseUrl, { message: "hi" });
    const events = await stream.untilEnd();
    expect(events.map((event) => event.type)).toEqual([
      "turn_start",
      "text_delta",
      "text_delta",
      "text_delta",
      "turn_complete",
    ]);
  });
});
