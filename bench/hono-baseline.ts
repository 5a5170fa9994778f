/**
 * The HTTP floor of the throughput comparison, run as its own process by bench/hono-baseline-process.ts:
 * a bare Hono app on @hono/node-server whose `POST /api/sessions/stream` reads the JSON body and
 * streams, with `streamSSE`, the same events one reins echo turn streams (given in
 * `BENCH_BASELINE_EVENTS`: same number, same types and ids, same JSON sizes), each stamped with the
 * current time as reins stamps `at`. No turn, no store, no tools: what serving the bytes costs.
 */
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { streamSSE } from "hono/streaming";

type RecordedEvent = { type: string; seq: number; at: number } & Record<string, unknown>;

const events = JSON.parse(process.env.BENCH_BASELINE_EVENTS ?? "[]") as RecordedEvent[];
if (events.length === 0) throw new Error("BENCH_BASELINE_EVENTS must hold the events of one turn");

const app = new Hono();
app.post("/api/sessions/stream", async (context) => {
  const body = (await context.req.json().catch(() => undefined)) as { message?: unknown } | undefined;
  if (typeof body?.message !== "string") return context.json({ error: "message must be a string" }, 400);
  return streamSSE(context, async (stream) => {
    for (const event of events) {
      await stream.writeSSE({
        id: String(event.seq),
        event: event.type,
        data: JSON.stringify({ ...event, at: Date.now() }),
      });
    }
  });
});

const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) => {
  process.stdout.write(`${JSON.stringify({ msg: "listening", port: info.port })}\n`);
});
process.once("SIGTERM", () => {
  server.close(() => process.exit(0));
  if ("closeAllConnections" in server) server.closeAllConnections();
});
