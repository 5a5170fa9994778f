/**
 * `web_fetch` cannot reach loopback or private networks (docs/semantics.md#isolation-and-limits), tested by
 * performing the attack: a real `node:http` target on 127.0.0.1 (and one on ::1) records every request it
 * gets, and the tool is called with every spelling of loopback, through a DNS name, and through a redirector
 * that is itself allowed. The target must record no hit and each call must end with the refusal. Then
 * `webFetchAllow` (an IP, a CIDR range, a host name) lets the same fetches through. Last, the real server
 * with SYSTEM_TOOLS=web_fetch: the model cannot fetch reins' own `/metrics`.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import { PermanentToolError } from "../../src/tools/resilience/tool-error.js";
import { createWebFetchTool, type WebFetchSettings } from "../../src/tools/system/index.js";
import type { ToolContext } from "../../src/tools/types.js";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream } from "../helpers/sse.js";

/** The redirector's address: loopback too, but a different one, so it can be allowed alone. */
const REDIRECTOR_HOST = "127.0.0.2";

/** A loopback server, the paths it was asked for and whether each request carried credentials. */
type Target = { server: Server; port: number; hits: string[]; authorizations: (string | undefined)[] };

/**
 * A server that answers every request with "secret" (gzipped on `/gzip`) and records the path it
 * was asked for.
 */
async function startTarget(host: string): Promise<Target> {
  const hits: string[] = [];
  const authorizations: (string | undefined)[] = [];
  const server = createServer((request, response) => {
    hits.push(request.url ?? "");
    authorizations.push(request.headers.authorization);
    if (request.url === "/gzip") {
      response
        .writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" })
        .end(gzipSync("secret from the target, compressed"));
      return;
    }
    response.writeHead(200, { "content-type": "text/plain" }).end("secret from the target");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return { server, port: (server.address() as AddressInfo).port, hits, authorizations };
}

/** A server that redirects `/to?url=<url>` there (302), and `/loop` to itself forever. */
async function startRedirector(): Promise<Target> {
  const target = await startTarget(REDIRECTOR_HOST);
  target.server.removeAllListeners("request");
  target.server.on("request", (request, response) => {
    const url = new URL(request.url ?? "/", `http://${REDIRECTOR_HOST}`);
    target.hits.push(url.pathname);
    const location = url.pathname === "/loop" ? "/loop" : (url.searchParams.get("url") ?? "/");
    response.writeHead(302, { location }).end();
  });
  return target;
}

async function stop(target: Target | undefined): Promise<void> {
  if (target === undefined) return;
  target.server.closeAllConnections();
  await new Promise((resolve) => target.server.close(resolve));
}

function makeContext(): ToolContext {
  return {
    turnId: "turn-1",
    sessionId: "session-1",
    agentId: "agent-1",
    callId: "call-1",
    toolName: "web_fetch",
    workspace: undefined,
    allowedRoots: [],
    depth: 0,
    signal: new AbortController().signal,
    heartbeat: () => {},
    services: undefined,
  };
}

function fetchWith(settings: Partial<WebFetchSettings>, url: string): Promise<unknown> {
  const tool = createWebFetchTool({ maxOutputBytes: 10_000, ...settings });
  return tool.execute({ url }, makeContext());
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (result) => expect.unreachable(`expected a refusal, got: ${String(result).slice(0, 200)}`),
    (error: unknown) => error,
  );
}

let target: Target;
let target6: Target | undefined;
let ipv6Unavailable = "";
let redirector: Target;

beforeAll(async () => {
  target = await startTarget("127.0.0.1");
  redirector = await startRedirector();
  try {
    target6 = await startTarget("::1");
  } catch (error) {
    ipv6Unavailable = `no IPv6 loopback on this machine (${(error as Error).message})`;
  }
});

afterAll(async () => {
  await Promise.all([stop(target), stop(target6), stop(redirector)]);
});

beforeEach(() => {
  target.hits.length = 0;
  target.authorizations.length = 0;
  if (target6 !== undefined) target6.hits.length = 0;
  redirector.hits.length = 0;
});

describe("web_fetch refuses loopback in every spelling", () => {
  const spellings: [label: string, url: () => string, reason: RegExp][] = [
    ["dotted", () => `http://127.0.0.1:${target.port}/secret`, /127\.0\.0\.1.*loopback address/],
    ["decimal", () => `http://2130706433:${target.port}/secret`, /loopback address/],
    ["hexadecimal", () => `http://0x7f000001:${target.port}/secret`, /loopback address/],
    ["short", () => `http://127.1:${target.port}/secret`, /loopback address/],
    ["octal", () => `http://0177.0.0.1:${target.port}/secret`, /loopback address/],
    ["unspecified", () => `http://0.0.0.0:${target.port}/secret`, /unspecified address/],
    [
      "IPv4-mapped IPv6",
      () => `http://[::ffff:127.0.0.1]:${target.port}/secret`,
      /loopback address \(IPv4-mapped 127\.0\.0\.1\)/,
    ],
    [
      "localhost",
      () => `http://localhost:${target.port}/secret`,
      /localhost \(127\.0\.0\.1\).*loopback address/,
    ],
    ["https", () => `https://127.0.0.1:${target.port}/secret`, /loopback address/],
    [
      "a redirect to 127.0.0.1",
      () => `http://${REDIRECTOR_HOST}:${redirector.port}/to?url=http://127.0.0.1:${target.port}/secret`,
      /loopback address/,
    ],
    [
      "a redirect to localhost",
      () => `http://${REDIRECTOR_HOST}:${redirector.port}/to?url=http://localhost:${target.port}/secret`,
      /localhost \(127\.0\.0\.1\).*loopback address/,
    ],
  ];

  it.each(spellings)("%s: refused, the target records no hit", async (_label, url, reason) => {
    // The redirector is allowed so that only the hop to the target is in question.
    const error = await rejectionOf(fetchWith({ webFetchAllow: [REDIRECTOR_HOST] }, url()));
    expect(error).toBeInstanceOf(PermanentToolError);
    expect((error as Error).message).toMatch(/^web_fetch refused /);
    expect((error as Error).message).toMatch(reason);
    expect((error as Error).message).toContain("WEB_FETCH_ALLOW");
    expect(target.hits).toEqual([]);
  });

  it("the redirector was reached, so the refusal was at the second hop", async () => {
    const url = `http://${REDIRECTOR_HOST}:${redirector.port}/to?url=http://127.1:${target.port}/secret`;
    await rejectionOf(fetchWith({ webFetchAllow: [REDIRECTOR_HOST] }, url));
    expect(redirector.hits).toEqual(["/to"]);
    expect(target.hits).toEqual([]);
  });

  it("[::1] and a redirect to it: refused, the IPv6 target records no hit", async (context) => {
    if (target6 === undefined) {
      context.skip(ipv6Unavailable);
      return;
    }
    const direct = `http://[::1]:${target6.port}/secret`;
    const redirected = `http://${REDIRECTOR_HOST}:${redirector.port}/to?url=${direct}`;
    for (const url of [direct, redirected]) {
      const error = await rejectionOf(fetchWith({ webFetchAllow: [REDIRECTOR_HOST] }, url));
      expect((error as Error).message).toMatch(/^web_fetch refused \[?::1\]? \(::1\): loopback address/);
    }
    expect(target6.hits).toEqual([]);
  });

  it("a DNS name that resolves to loopback (among public addresses) is refused at connect", async () => {
    const resolved: string[] = [];
    const error = await rejectionOf(
      fetchWith(
        {
          resolveHost: async (hostname) => {
            resolved.push(hostname);
            return [
              { address: "93.184.216.34", family: 4 },
              { address: "127.0.0.1", family: 4 },
            ];
          },
        },
        `http://rebinding.example:${target.port}/secret`,
      ),
    );
    expect(resolved).toEqual(["rebinding.example"]);
    expect((error as Error).message).toMatch(/refused rebinding\.example \(127\.0\.0\.1\): loopback address/);
    expect(target.hits).toEqual([]);
  });

  it("a private destination is refused without the allow-list, whoever names it", async () => {
    const error = await rejectionOf(
      fetchWith(
        { resolveHost: async () => [{ address: "10.1.2.3", family: 4 }] },
        `http://intranet.example:${target.port}/`,
      ),
    );
    expect((error as Error).message).toMatch(/intranet\.example \(10\.1\.2\.3\): private address/);
  });
});

describe("web_fetch with WEB_FETCH_ALLOW", () => {
  it.each([
    ["an IP", ["127.0.0.1"], () => `http://127.0.0.1:${target.port}/allowed`],
    ["a CIDR range", ["127.0.0.0/8"], () => `http://2130706433:${target.port}/allowed`],
    ["a host name", ["localhost"], () => `http://localhost:${target.port}/allowed`],
    [
      "an IPv4 entry, IPv4-mapped URL",
      ["127.0.0.1"],
      () => `http://[::ffff:127.0.0.1]:${target.port}/allowed`,
    ],
  ])("%s lets the fetch through", async (_label, allow, url) => {
    const result = await fetchWith({ webFetchAllow: allow }, url());
    expect(result).toBe("HTTP 200 OK\nContent-Type: text/plain\n\nsecret from the target");
    expect(target.hits).toEqual(["/allowed"]);
  });

  it("drops the credentials a redirect puts in its URL: not sent, not shown", async () => {
    const final = `http://user:hunter2@127.0.0.1:${target.port}/creds`;
    const result = String(
      await fetchWith(
        { webFetchAllow: [REDIRECTOR_HOST, "127.0.0.1"] },
        `http://${REDIRECTOR_HOST}:${redirector.port}/to?url=${encodeURIComponent(final)}`,
      ),
    );
    expect(result).toContain("secret from the target");
    expect(result).not.toContain("hunter2");
    expect(target.hits).toEqual(["/creds"]);
    expect(target.authorizations).toEqual([undefined]);
  });

  it("an allowed redirect chain is followed and names the final URL", async () => {
    const final = `http://127.0.0.1:${target.port}/allowed`;
    const result = await fetchWith(
      { webFetchAllow: [REDIRECTOR_HOST, "127.0.0.1/32"] },
      `http://${REDIRECTOR_HOST}:${redirector.port}/to?url=${final}`,
    );
    expect(result).toBe(`HTTP 200 OK\nURL: ${final}\nContent-Type: text/plain\n\nsecret from the target`);
    expect(target.hits).toEqual(["/allowed"]);
  });

  it("[::1] is let through by ::1 or ::1/128", async (context) => {
    if (target6 === undefined) {
      context.skip(ipv6Unavailable);
      return;
    }
    for (const allow of [["::1"], ["[::1]"], ["::1/128"]]) {
      const result = await fetchWith({ webFetchAllow: allow }, `http://[::1]:${target6.port}/six`);
      expect(result).toContain("secret from the target");
    }
    expect(target6.hits).toEqual(["/six", "/six", "/six"]);
  });

  it("a gzip body comes back decoded, as it did with fetch", async () => {
    const result = await fetchWith({ webFetchAllow: ["127.0.0.1"] }, `http://127.0.0.1:${target.port}/gzip`);
    expect(result).toBe("HTTP 200 OK\nContent-Type: text/plain\n\nsecret from the target, compressed");
  });

  it("allowing one address does not allow its neighbour", async () => {
    const error = await rejectionOf(
      fetchWith({ webFetchAllow: ["127.0.0.3", "localhost"] }, `http://127.0.0.1:${target.port}/`),
    );
    expect((error as Error).message).toMatch(/loopback address/);
    expect(target.hits).toEqual([]);
  });

  it("a redirect loop stops at the hop limit with a permanent error", async () => {
    const error = await rejectionOf(
      fetchWith({ webFetchAllow: [REDIRECTOR_HOST] }, `http://${REDIRECTOR_HOST}:${redirector.port}/loop`),
    );
    expect(error).toBeInstanceOf(PermanentToolError);
    expect((error as Error).message).toMatch(/redirected more than 10 times/);
    expect(redirector.hits).toHaveLength(11);
  });

  it("a redirect to another scheme is refused as permanent", async () => {
    const error = await rejectionOf(
      fetchWith(
        { webFetchAllow: [REDIRECTOR_HOST] },
        `http://${REDIRECTOR_HOST}:${redirector.port}/to?url=file:///etc/passwd`,
      ),
    );
    expect(error).toBeInstanceOf(PermanentToolError);
    expect((error as Error).message).toContain("file:///etc/passwd");
  });
});

describe("web_fetch with the check in the DNS step", () => {
  it("an abort while the name is resolving ends the call with the abort's reason", async () => {
    let resolving = () => {};
    const started = new Promise<void>((resolve) => (resolving = resolve));
    const tool = createWebFetchTool({
      maxOutputBytes: 100,
      resolveHost: () => {
        resolving();
        return new Promise(() => {});
      },
    });
    const controller = new AbortController();
    const result = tool.execute(
      { url: "http://slow-dns.example/" },
      { ...makeContext(), signal: controller.signal },
    );
    await started;
    const reason = new Error("stopped while resolving");
    controller.abort(reason);
    await expect(result).rejects.toBe(reason);
  });
});

describe("the real server: the model cannot fetch reins' own /metrics", () => {
  let server: ServerHandle | undefined;

  afterAll(async () => {
    await server?.stop();
    server?.cleanup();
  });

  const fetchMetrics = async (env: Record<string, string>) => {
    server = await startServer({ env: { SYSTEM_TOOLS: "web_fetch", ...env } });
    const urls = [
      `http://127.0.0.1:${server.port}/metrics`,
      `http://localhost:${server.port}/metrics`,
      `http://2130706433:${server.port}/metrics`,
      `http://[::ffff:127.0.0.1]:${server.port}/metrics`,
    ];
    const script = urls.map((url) => `/tool web_fetch ${JSON.stringify({ url })}`).join("\n");
    const stream = await SseStream.start(server.baseUrl, { message: script });
    const events = await stream.untilEnd();
    await server.stop();
    server.cleanup();
    server = undefined;
    return events.filter(
      (event): event is Extract<TurnEvent, { type: "tool_result" }> => event.type === "tool_result",
    );
  };

  it("every spelling of its own address is refused", async () => {
    const results = await fetchMetrics({});
    expect(results).toHaveLength(4);
    for (const result of results) {
      expect(result).toMatchObject({ toolName: "web_fetch", isError: true, status: "error", attempts: 1 });
      expect(result.result).toMatch(/web_fetch refused .*loopback address/);
      expect(result.result).not.toContain("# HELP");
    }
  });

  it("WEB_FETCH_ALLOW=127.0.0.0/8 lets it through (the setting reaches the tool)", async () => {
    const results = await fetchMetrics({ WEB_FETCH_ALLOW: "127.0.0.0/8" });
    expect(results).toHaveLength(4);
    for (const result of results) {
      expect(result).toMatchObject({ toolName: "web_fetch", isError: false, status: "complete" });
      expect(result.result).toContain("# HELP");
    }
  });
});
