/**
 * The chat page as a chat, in a real browser (Chromium via playwright-core) against the real server, at
 * desktop (1280×800) and phone (390×844) size: assistant markdown rendered and sanitised with a Copy
 * button on code blocks, the conversation restored from the stored history after a reload, the
 * sessions sidebar (new with an agent, switch, rename, delete), the banner with Retry while the server
 * is unreachable, and the operator page listing an active turn. With UPDATE_SCREENSHOTS=1 the
 * screenshots also replace docs/chat-desktop.png and docs/chat-phone.png.
 */
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  BrowserHarness,
  SCREENSHOT_DIR,
  checkOpenedPages,
  CHAT_DESKTOP_VIEWPORT,
  CHAT_PHONE_VIEWPORT,
  expectAttribute,
  expectText,
  sendMessage,
  toolLine,
  toolLineNamed,
  type OpenedPage,
} from "../helpers/browser.js";
import { PROJECT_ROOT, startServer, type ServerHandle } from "../helpers/server.js";

/** A scripted answer in markdown: a thinking block, a tool call, then a heading, bold text and code. */
const MARKDOWN_SCRIPT = [
  "/think Plan the answer.",
  '/tool echo {"text":"from the tool"}',
  "/then",
  "## Result",
  "Here is **bold** text and <i>raw html</i>.",
  "```js",
  "const answer = 42;",
  "```",
].join("\n");

const harness = new BrowserHarness();
/** For a poll that waits on a request and a render: vitest's default second is short on a busy machine. */
const POLL = { timeout: 10_000 };
let opened: (OpenedPage & { server: ServerHandle })[] = [];

beforeAll(async () => {
  await harness.launch();
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
});

afterAll(async () => {
  await harness.closeAll();
});

afterEach(async (context) => {
  const pages = opened;
  opened = [];
  await checkOpenedPages(context.task.name, context.task.result?.state === "fail", pages);
});

async function openPage(viewport = CHAT_DESKTOP_VIEWPORT, env: Record<string, string> = {}) {
  const server = await harness.startServer({ env });
  const entry = { server, ...(await harness.open(server, viewport)) };
  opened.push(entry);
  return entry;
}

/** The sidebar entry of the session `sessionId`. */
function sessionItem(page: Page, sessionId: string) {
  return page.locator(`[data-testid="session-item"][data-session-id="${sessionId}"]`);
}

/** The session the page has open (from its label "session ses_…"). */
async function openSessionId(page: Page): Promise<string> {
  let id = "";
  await expect
    .poll(async () => {
      id = /session (ses_\S+)/.exec((await page.getByTestId("session-id").textContent()) ?? "")?.[1] ?? "";
      return id;
    })
    .toMatch(/^ses_/);
  return id;
}

/** Sends the markdown script and checks how the answer is rendered. */
async function sendMarkdownAndCheck(page: Page) {
  await sendMessage(page, MARKDOWN_SCRIPT);
  await expectAttribute(page.getByTestId("turn-status"), "data-state", "complete", 15_000);
  await expectMarkdownShown(page);
}

async function expectMarkdownShown(page: Page) {
  const answer = page.getByTestId("assistant-text").last();
  await expectText(answer.locator("h2"), /^Result$/);
  await expectText(answer.locator("strong"), /^bold$/);
  // raw HTML in the model's text is shown as text, never as an element
  await expectText(answer, /<i>raw html<\/i>/);
  await expect(answer.locator("i").count()).resolves.toBe(0);
  const codeBlock = answer.getByTestId("code-block");
  await expectText(codeBlock.locator("pre code"), /const answer = 42;/);
  await expect(codeBlock.getByTestId("copy-code").isVisible()).resolves.toBe(true);
  await expectAttribute(toolLine(page, '"text":"from the tool"'), "data-state", "complete");
  await expectText(page.getByTestId("thinking"), /Plan the answer\./);
}

describe("chat page", () => {
  for (const [size, viewport] of [
    ["desktop", CHAT_DESKTOP_VIEWPORT],
    ["phone", CHAT_PHONE_VIEWPORT],
  ] as const) {
    it(`${size}: renders markdown with a Copy button, restores the conversation after a reload`, async () => {
      const { page, context } = await openPage(viewport);
      await context.grantPermissions(["clipboard-read", "clipboard-write"]);
      await sendMarkdownAndCheck(page);
      await expectText(page.getByTestId("turn-status"), /\d+ in · \d+ out tokens/);

      const sessionId = await openSessionId(page);
      await expectAttribute(sessionItem(page, sessionId), "aria-current", "true");
      const shot = join(SCREENSHOT_DIR, `chat-${size}.png`);
      await page.screenshot({ path: shot });
      if (process.env.UPDATE_SCREENSHOTS === "1")
        copyFileSync(shot, join(PROJECT_ROOT, `docs/chat-${size}.png`));

      const copy = page.getByTestId("copy-code").first();
      await copy.click();
      await expectText(copy, /^Copied$/);
      await expect(page.evaluate<string>("navigator.clipboard.readText()")).resolves.toContain(
        "const answer = 42;",
      );

      // the page keeps nothing but the session id: everything below comes from the stored history
      await page.reload();
      await expectText(page.getByTestId("session-id"), new RegExp(sessionId));
      await expect.poll(() => page.getByTestId("turn").count(), POLL).toBe(1);
      await expectText(page.getByTestId("user-message"), /## Result/);
      await expectMarkdownShown(page);
      await expectText(toolLine(page, '"text":"from the tool"').getByTestId("tool-result"), /from the tool/);
      await expectAttribute(page.getByTestId("turn-status"), "data-state", "complete");
      await expectText(page.getByTestId("turn-status"), /\d+ in · \d+ out tokens/);

      const widths = await page.evaluate<{ scroll: number; client: number }>(
        "({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })",
      );
      expect(widths.scroll).toBeLessThanOrEqual(widths.client);
    }, 60_000);
  }

  it("sessions sidebar: new with an agent, switch, rename and delete", async () => {
    const { page } = await openPage();
    await expect
      .poll(() => page.getByTestId("agent-select").locator("option").count(), POLL)
      .toBeGreaterThan(0);
    await sendMessage(page, "first conversation");
    await expectText(page.getByTestId("assistant-text").last(), /You said: first conversation/);
    const first = await openSessionId(page);

    await page.getByTestId("new-session").click();
    await expect.poll(() => openSessionId(page), POLL).not.toBe(first);
    const second = await openSessionId(page);
    await expect(page.getByTestId("turn").count()).resolves.toBe(0);
    await sendMessage(page, "second conversation");
    await expectText(page.getByTestId("assistant-text").last(), /You said: second conversation/);

    // both are listed, titled by their first message; switching restores each conversation
    await expectText(sessionItem(page, first), /first conversation/);
    await expectText(sessionItem(page, second), /second conversation/);
    await sessionItem(page, first).getByTestId("session-open").click();
    await expectText(page.getByTestId("session-id"), new RegExp(first));
    await expectText(page.getByTestId("assistant-text").last(), /You said: first conversation/);
    await expect(page.getByTestId("turn").count()).resolves.toBe(1);
    await sessionItem(page, second).getByTestId("session-open").click();
    await expectText(page.getByTestId("assistant-text").last(), /You said: second conversation/);
    await expect(page.getByTestId("turn").count()).resolves.toBe(1);

    // rename: the server keeps the new title
    await sessionItem(page, first).getByTestId("session-rename").click();
    const input = page.getByTestId("session-rename-input");
    await input.fill("Renamed plan");
    await input.press("Enter");
    await expectText(sessionItem(page, first), /Renamed plan/);
    const server = opened[0]!.server;
    const renamed = (await (await fetch(`${server.baseUrl}/api/sessions/${first}`)).json()) as {
      title: string;
    };
    expect(renamed.title).toBe("Renamed plan");

    // delete the open session: gone from the list, from the server, and from the log
    page.once("dialog", (dialog) => void dialog.accept());
    await sessionItem(page, second).getByTestId("session-delete").click();
    await sessionItem(page, second).waitFor({ state: "detached", timeout: 10_000 });
    await expect(page.getByTestId("turn").count()).resolves.toBe(0);
    expect((await fetch(`${server.baseUrl}/api/sessions/${second}`)).status).toBe(404);
    await expect(sessionItem(page, first).count()).resolves.toBe(1);
  }, 60_000);

  it("shows a banner with Retry while the server is unreachable, and recovers after Retry", async () => {
    const entry = await openPage();
    const { page, server } = entry;
    await sendMessage(page, "before the outage");
    await expectText(page.getByTestId("assistant-text").last(), /You said: before the outage/);
    const sessionId = await openSessionId(page);

    await server.stop();
    const banner = page.getByTestId("unreachable");
    // the sidebar's poll notices within its interval
    await banner.waitFor({ state: "visible", timeout: 15_000 });
    await expectText(banner, /cannot be reached/);
    await sendMessage(page, "during the outage");
    await expectText(page.getByTestId("turn-status").last(), /Not sent: the server cannot be reached/);
    await expect(page.getByText("Failed to fetch").count()).resolves.toBe(0);

    // the same data directory and port: the session is still there
    const restarted = await startServer({ dataDir: server.dataDir, env: { PORT: String(server.port) } });
    entry.server = restarted;
    try {
      await page.getByTestId("retry").click();
      await banner.waitFor({ state: "hidden", timeout: 10_000 });
      await expectText(page.getByTestId("assistant-text").last(), /You said: before the outage/);
      await expect(page.getByTestId("turn").count()).resolves.toBe(1);
      await expectText(sessionItem(page, sessionId), /before the outage/);
    } finally {
      // the data directory is the first server's: the harness deletes it
      await restarted.stop();
    }
  }, 60_000);

  it("a session deleted elsewhere: the message is not sent, and the next one starts a new session", async () => {
    const { page, server } = await openPage();
    await sendMessage(page, "before the delete");
    await expectText(page.getByTestId("assistant-text").last(), /You said: before the delete/);
    const deleted = await openSessionId(page);
    expect((await fetch(`${server.baseUrl}/api/sessions/${deleted}`, { method: "DELETE" })).status).toBe(200);
    await sendMessage(page, "after the delete");
    await expectText(page.getByTestId("turn-status").last(), /this session was deleted/);
    await sendMessage(page, "once more");
    await expectText(page.getByTestId("assistant-text").last(), /You said: once more/);
    await expect.poll(() => openSessionId(page), POLL).not.toBe(deleted);
  }, 60_000);

  it("keeps a running turn when the open session is opened again or the token is saved: neither is leaving", async () => {
    const { page, server } = await openPage();
    await sendMessage(page, '/tool sleep {"ms":2500}');
    await toolLineNamed(page, "sleep").waitFor({ state: "visible", timeout: 10_000 });
    const sessionId = await openSessionId(page);
    await sessionItem(page, sessionId).getByTestId("session-open").click();
    await page.getByTestId("settings").locator("summary").click();
    await page.getByTestId("token-save").click();
    await expectAttribute(page.getByTestId("turn-status"), "data-state", "complete", 15_000);
    const history = (await (await fetch(`${server.baseUrl}/api/sessions/${sessionId}/history`)).json()) as {
      turns: { status: string }[];
    };
    expect(history.turns.map((turn) => turn.status)).toEqual(["completed"]);
  }, 60_000);

  it("never lets markup in the model's text run: raw HTML is shown as text, javascript: links are dropped, links open beside", async () => {
    const { page } = await openPage();
    const at = Date.now();
    const common = { turnId: "turn_stubbed", at };
    const text = [
      '<img src="x" data-testid="injected" onerror="window.injected = 1">',
      "[click me](javascript:window.injected=2) and ![pic](javascript:window.injected=3)",
      "[the docs](https://example.com/docs)",
      "<script>window.injected = 4</script>",
    ].join("\n\n");
    const events = [
      {
        type: "turn_start",
        seq: 1,
        sessionId: "ses_stubbed",
        agentId: "default",
        provider: "scripted",
        model: "scripted-1",
        startedAt: at,
      },
      { type: "text_delta", seq: 2, text },
      {
        type: "turn_complete",
        seq: 3,
        stopReason: "end_turn",
        durationMs: 5,
        toolCallCount: 0,
        usage: { inputTokens: 1200, outputTokens: 34 },
      },
    ];
    const body = events
      .map(
        (event) =>
          `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify({ ...event, ...common })}\n\n`,
      )
      .join("");
    await page.route("**/api/sessions/stream", (route) =>
      route.fulfill({ status: 200, contentType: "text/event-stream", body }),
    );
    await sendMessage(page, "anything");
    await expectText(page.getByTestId("turn-status"), /1,200 in · 34 out tokens/);
    const answer = page.getByTestId("assistant-text");
    await expectText(answer, /<img src="x"/);
    await expectText(answer, /<script>window\.injected = 4<\/script>/);
    await expect(answer.locator('script, [onerror], [data-testid="injected"]').count()).resolves.toBe(0);
    // the markdown image survives without its javascript: source
    await expect(answer.locator('[src^="javascript"], [href^="javascript"]').count()).resolves.toBe(0);
    const clickMe = answer.locator("a", { hasText: "click me" });
    await expect(clickMe.getAttribute("href")).resolves.toBeNull();
    // a link opens beside the chat (leaving the page would cut a running turn's stream), with no opener
    const docs = answer.locator("a", { hasText: "the docs" });
    await expect(docs.getAttribute("href")).resolves.toBe("https://example.com/docs");
    await expect(docs.getAttribute("target")).resolves.toBe("_blank");
    await expect(docs.getAttribute("rel")).resolves.toBe("noopener noreferrer");
    await expect(page.evaluate<unknown>("window.injected")).resolves.toBeUndefined();
  });

  it("serves exactly the two vendor ES modules from node_modules, under the page's CSP", async () => {
    const server = await harness.startServer();
    for (const path of ["/vendor/marked.js", "/vendor/dompurify.js"]) {
      const response = await fetch(`${server.baseUrl}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("content-type"), path).toContain("text/javascript");
      expect(response.headers.get("content-security-policy"), path).toContain("script-src 'self';");
      expect(await response.text(), path).toMatch(/export ?\{/);
    }
    for (const path of [
      "/vendor/marked.js.map",
      "/vendor/purify.cjs.js",
      "/vendor/../package.json",
      "/node_modules/marked/package.json",
      "/vendor/%2e%2e/%2e%2e/package.json",
    ]) {
      const response = await fetch(`${server.baseUrl}${path}`);
      expect(response.status, path).toBe(404);
      await response.body?.cancel();
    }
  });

  it("the operator page lists an active turn (not the chat page) and aborts it", async () => {
    const { page, server, context } = await openPage();
    await expect(page.getByTestId("active-turns").count()).resolves.toBe(0);
    await sendMessage(page, '/tool sleep {"ms":60000}');
    const line = toolLine(page, '"ms":60000');
    await expectAttribute(line, "data-state", "running");
    const turnId = await page.getByTestId("turn").getAttribute("data-turn-id");

    const operator = await context.newPage();
    await operator.goto(`${server.baseUrl}/operator.html`);
    const item = operator.locator(`[data-testid="active-turn"][data-turn-id="${turnId}"]`);
    await item.waitFor({ timeout: 10_000 });
    await expectText(item.getByTestId("active-turn-tools"), /sleep \d/);
    await item.getByTestId("active-turn-abort").click();
    await item.waitFor({ state: "detached", timeout: 10_000 });
    await expectAttribute(page.getByTestId("turn-status"), "data-state", "aborted");
    await expectAttribute(line, "data-state", "cancelled");
    await operator.close();
  }, 60_000);
});
