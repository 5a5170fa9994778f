/**
 * The frame headers a response is made with (`withFrameHeaders`) follow the rule frameGuard applies to
 * the others: X-Frame-Options DENY, and `frame-ancestors 'none'` as the policy or appended to the one
 * there is, whatever the case of the header names, each header once.
 */
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import {
  FRAME_ANCESTORS_NONE,
  frameGuard,
  framedResponse,
  withFrameHeaders,
} from "../../src/http/frame-guard.js";

describe("withFrameHeaders", () => {
  it("adds both headers to a record with neither, keeping the others", () => {
    expect(withFrameHeaders({ "Content-Type": "text/event-stream" })).toEqual({
      "Content-Type": "text/event-stream",
      "X-Frame-Options": "DENY",
      "Content-Security-Policy": FRAME_ANCESTORS_NONE,
    });
  });

  it("appends to a policy of its own, and leaves one that already says frame-ancestors", () => {
    const appended = withFrameHeaders({
      "content-security-policy": "default-src 'self'",
      "x-frame-options": "SAMEORIGIN",
    });
    expect(appended).toEqual({
      "X-Frame-Options": "DENY",
      "Content-Security-Policy": `default-src 'self'; ${FRAME_ANCESTORS_NONE}`,
    });
    const own = "default-src 'self'; frame-ancestors https://example.com";
    expect(withFrameHeaders({ "Content-Security-Policy": own })["Content-Security-Policy"]).toBe(own);
  });

  it("makes the record once per record", () => {
    const headers = { "Content-Type": "text/event-stream" };
    expect(withFrameHeaders(headers)).toBe(withFrameHeaders(headers));
  });
});

describe("frameGuard", () => {
  const app = new Hono();
  app.use("*", frameGuard());
  app.get("/plain", (context) => context.text("ok"));
  app.get("/own-policy", (context) =>
    context.text("ok", 200, { "Content-Security-Policy": "default-src 'self'" }),
  );
  app.get("/framed", () => framedResponse("ok", { status: 200, headers: { "Content-Type": "text/plain" } }));

  it.each([
    ["/plain", FRAME_ANCESTORS_NONE],
    ["/own-policy", `default-src 'self'; ${FRAME_ANCESTORS_NONE}`],
    ["/framed", FRAME_ANCESTORS_NONE],
  ])("%s is served with DENY and the policy %s", async (path, policy) => {
    const response = await app.request(path);
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("content-security-policy")).toBe(policy);
  });

  it("does not read back the headers of a response made with them (what a served stream pays for)", async () => {
    const getter = Object.getOwnPropertyDescriptor(Response.prototype, "headers")!.get!;
    let reads = 0;
    Object.defineProperty(Response.prototype, "headers", {
      configurable: true,
      get(this: Response) {
        reads++;
        return getter.call(this);
      },
    });
    const readsServing = async (path: string) => {
      reads = 0;
      await app.request(path);
      return reads;
    };
    try {
      expect(await readsServing("/framed")).toBe(0);
      expect(await readsServing("/plain")).toBeGreaterThan(0);
    } finally {
      Object.defineProperty(Response.prototype, "headers", { configurable: true, get: getter });
    }
  });
});
