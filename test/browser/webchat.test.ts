/**
 * The built-in webchat page in a real browser (Chromium via playwright-core) against the real server:
 * live tool lines and their elapsed colours, cancelling a tool and a turn, the operator page's active turns, step
 * mode, reattaching after a reload, the API token, and the phone layout. Screenshots go to
 * test-results/ (the docs' screenshots come from chat.test.ts).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  BrowserHarness,
  SCREENSHOT_DIR,
  checkOpenedPages,
  PHONE_VIEWPORT,
  elapsedSeconds,
  expectAttribute,
  expectText,
  sendMessage,
  toolLine,
  toolLineNamed,
  type OpenedPage,
} from "../helpers/browser.js";
import type { ServerHandle } from "../helpers/server.js";

const FAST_PROGRESS = { PROGRESS_AFTER_MS: "300", PROGRESS_INTERVAL_MS: "500" };

const harness = new BrowserHarness();
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

async function openPage(env: Record<string, string> = {}, viewport?: { width: number; height: number }) {
  const server = await harness.startServer({ env: { ...FAST_PROGRESS, ...env } });
  const entry = { server, ...(await harness.open(server, viewport)) };
  opened.push(entry);
  return entry;
}

describe("webchat page", () => {
  it("shows a live line per tool: the elapsed counter ticks and turns green → yellow, every final state", async () => {
    const { page } = await openPage({}, { width: 1200, height: 1000 });
    await sendMessage(
      page,
      [
        "/think Run a few tools at once and watch them.",
        "Running a batch.",
        '/tool sleep {"ms":16000,"heartbeatMs":500}',
        '/tool echo {"text":"hello"}',
        '/tool flaky {"failures":2,"kind":"transient"}',
        '/tool hang {"_meta":{"timeout":1500}}',
        '/tool sleep {"ms":60000}',
        "/then",
        "All done.",
      ].join("\n"),
    );

    const slow = toolLine(page, '"ms":16000');
    const elapsed = slow.getByTestId("tool-elapsed");
    await expectAttribute(slow, "data-state", "running");
    await expectAttribute(elapsed, "data-level", "green");
    const first = await elapsedSeconds(slow);
    await expect.poll(() => elapsedSeconds(slow), { timeout: 5_000 }).toBeGreaterThan(first + 0.5);
    await expect(slow.getByTestId("tool-limits").textContent()).resolves.toContain("timeout 120 s");
    await expectText(slow.getByTestId("tool-message"), /slept \d+ms of 16000ms/);

    const echo = toolLine(page, '"text":"hello"');
    await expectAttribute(echo, "data-state", "complete");
    await expectText(echo.getByTestId("tool-result"), /hello/);

    const flaky = toolLine(page, '"failures":2');
    await expectAttribute(flaky, "data-state", "complete");
    await expectAttribute(flaky.getByTestId("tool-retries"), "data-count", "2");
    await expectText(flaky.getByTestId("tool-retries"), /failure 2 of 2/);

    // the call's own timeout shows in its limits; its input is what the tool runs with, `_meta` left out
    const hang = toolLineNamed(page, "hang");
    await expect(hang.getByTestId("tool-limits").textContent()).resolves.toContain("timeout 1.5 s");
    await expect(hang.getByTestId("tool-input").textContent()).resolves.not.toContain("_meta");
    await expectAttribute(hang, "data-state", "timeout");
    await expectText(hang.getByTestId("tool-result"), /\[TIMEOUT\] Tool "hang"/);

    const cancelled = toolLine(page, '"ms":60000');
    await cancelled.getByTestId("tool-cancel").click();
    await expectAttribute(cancelled, "data-state", "cancelled");
    await expectText(page.getByTestId("thinking"), /watch them/);

    // past 10 s the counter turns yellow while the call (16 s: slack for a busy machine) still runs
    await expectAttribute(elapsed, "data-level", "yellow", 20_000);
    await expectAttribute(slow, "data-state", "running", 1_000);
    await expect(elapsed.getAttribute("class")).resolves.toContain("level-yellow");
    await page.screenshot({ path: join(SCREENSHOT_DIR, "webchat.png") });

    await expectAttribute(slow, "data-state", "complete", 15_000);
    await expectAttribute(page.getByTestId("turn-status"), "data-state", "complete", 10_000);
    await expectText(page.getByTestId("assistant-text").last(), /All done\./);
    await expect(page.getByTestId("send").isEnabled()).resolves.toBe(true);
  }, 60_000);

  it("cancels one tool of a batch: its line ends cancelled and the turn completes", async () => {
    const { page } = await openPage();
    await sendMessage(
      page,
      [
        '/tool sleep {"ms":60000,"heartbeatMs":500}',
        '/tool sleep {"ms":1500}',
        '/tool echo {"text":"kept"}',
        "/then",
        "Finished without the slow one.",
      ].join("\n"),
    );
    const slow = toolLine(page, '"ms":60000');
    await expectAttribute(slow, "data-state", "running");
    await slow.getByTestId("tool-cancel").click();

    await expectAttribute(slow, "data-state", "cancelled");
    await expectText(slow.getByTestId("tool-state"), /cancelled/);
    await expectText(slow.getByTestId("tool-result"), /\[CANCELLED\]/);
    await expect(slow.getByTestId("tool-cancel").count()).resolves.toBe(0);
    await expectAttribute(toolLine(page, '"ms":1500'), "data-state", "complete");
    await expectAttribute(toolLine(page, '"text":"kept"'), "data-state", "complete");
    const status = page.getByTestId("turn-status");
    await expectAttribute(status, "data-state", "complete");
    await expectText(status, /Turn complete/);
    await expectText(page.getByTestId("assistant-text").last(), /Finished without the slow one\./);
  });

  it("stops a turn: turn_abort is shown with its reason and every running line ends cancelled", async () => {
    const { page } = await openPage();
    await sendMessage(page, ['/tool sleep {"ms":60000}', '/tool sleep {"ms":45000}'].join("\n"));
    await expectAttribute(toolLine(page, '"ms":60000'), "data-state", "running");
    await expectAttribute(toolLine(page, '"ms":45000'), "data-state", "running");
    const stop = page.getByTestId("turn-cancel");
    await stop.click();

    const status = page.getByTestId("turn-status");
    await expectAttribute(status, "data-state", "aborted");
    await expectText(status, /aborted \(user\)/);
    await expectAttribute(toolLine(page, '"ms":60000'), "data-state", "cancelled");
    await expectAttribute(toolLine(page, '"ms":45000'), "data-state", "cancelled");
    await expect(stop.isHidden()).resolves.toBe(true);
    await expect(page.getByTestId("send").isEnabled()).resolves.toBe(true);
  });

  it("lists running turns on the operator page and aborts one from there", async () => {
    const { page, context, server } = await openPage();
    await sendMessage(page, '/tool sleep {"ms":60000}');
    const turn = page.getByTestId("turn");
    await expectAttribute(toolLine(page, '"ms":60000'), "data-state", "running");
    const turnId = await turn.getAttribute("data-turn-id");
    expect(turnId).toMatch(/^turn_/);

    // the operator view is a page of its own, linked from the chat
    await expect(page.getByTestId("operator-link").getAttribute("href")).resolves.toBe("/operator.html");
    const operator = await context.newPage();
    await operator.goto(`${server.baseUrl}/operator.html`);
    const item = operator.locator(`[data-testid="active-turn"][data-turn-id="${turnId}"]`);
    await item.waitFor({ timeout: 5_000 });
    await expectText(item.getByTestId("active-turn-tools"), /sleep \d/);
    await item.getByTestId("active-turn-abort").click();

    await expectAttribute(page.getByTestId("turn-status"), "data-state", "aborted");
    await expectAttribute(toolLine(page, '"ms":60000'), "data-state", "cancelled");
    await item.waitFor({ state: "detached", timeout: 5_000 });
    await expect(operator.getByTestId("active-empty").isVisible()).resolves.toBe(true);
    await operator.close();
  });

  it("step mode: each pause shows its summary, deadline and a Continue button; switching it off releases a pause", async () => {
    const { page } = await openPage({ STEP_PAUSE_TIMEOUT_MS: "60000" });
    await page.getByTestId("step-mode").check();
    await sendMessage(page, ['/tool echo {"text":"stepped"}', "/then", "Stepped through."].join("\n"));

    const firstPause = page.getByTestId("pause").first();
    await expectAttribute(firstPause, "data-state", "waiting");
    await expectText(firstPause.getByTestId("pause-countdown"), /auto-continues in \d+ s/);
    await expectText(firstPause.getByTestId("pause-summary"), /echo\s*\{"text":"stepped"\}/);
    // paused after the inference: the requested call has not run yet
    await expect(page.getByTestId("tool-line").count()).resolves.toBe(0);
    await firstPause.getByTestId("continue").click();
    await expectAttribute(firstPause, "data-state", "continued");
    await expectAttribute(toolLine(page, '"text":"stepped"'), "data-state", "complete");
    const secondPause = page.getByTestId("pause").nth(1);
    await expectAttribute(secondPause, "data-state", "waiting");
    await expectText(secondPause.getByTestId("pause-summary"), /echo\s*complete: stepped/);

    await secondPause.getByTestId("continue").click();
    await expectAttribute(secondPause, "data-state", "continued");
    await expectAttribute(page.getByTestId("turn-status"), "data-state", "complete");
    await expect(page.getByTestId("pause").count()).resolves.toBe(2);
    await expectText(page.getByTestId("assistant-text").last(), /Stepped through\./);

    // switching step mode off during a pause releases it at once; the turn runs to its end
    await sendMessage(page, '/tool echo {"text":"released"}');
    const thirdPause = page.getByTestId("turn").last().getByTestId("pause");
    await expectAttribute(thirdPause, "data-state", "waiting");
    await page.getByTestId("step-mode").uncheck();
    await expectAttribute(page.getByTestId("turn-status").last(), "data-state", "complete");
    await expectAttribute(toolLine(page, '"text":"released"'), "data-state", "complete");
    await expect(thirdPause.getAttribute("data-state")).resolves.not.toBe("waiting");
  });

  it("a turn stopped during a pause leaves its pause card ended, not continued", async () => {
    const { page } = await openPage({ STEP_PAUSE_TIMEOUT_MS: "60000" });
    await page.getByTestId("step-mode").check();
    await sendMessage(page, '/tool echo {"text":"held"}');
    const pause = page.getByTestId("pause").first();
    await expectAttribute(pause, "data-state", "waiting");
    await page.getByTestId("turn-cancel").click();
    await expectAttribute(page.getByTestId("turn-status"), "data-state", "aborted");
    await expectAttribute(pause, "data-state", "ended");
  });

  it("reattaches to the running turn after a reload: the tool line is back and then completes", async () => {
    const { page } = await openPage({ DISCONNECT_GRACE_MS: "10000" });
    await sendMessage(
      page,
      // 10 s: the reload and the reattachment must be done before the call ends, on a busy machine too
      ['/tool sleep {"ms":10000,"heartbeatMs":500}', "/then", "Survived the reload."].join("\n"),
    );
    const line = toolLine(page, '"ms":10000');
    await expectAttribute(line, "data-state", "running");
    await expect.poll(() => elapsedSeconds(line), { timeout: 5_000 }).toBeGreaterThanOrEqual(1);

    await page.reload();
    await expectText(page.getByTestId("turn-meta"), /reattached/);
    await expectAttribute(line, "data-state", "running");
    // the counter carries on from the call's start, not from the reload
    await expect(elapsedSeconds(line)).resolves.toBeGreaterThanOrEqual(1);
    await expectAttribute(line, "data-state", "complete", 20_000);
    await expectAttribute(page.getByTestId("turn-status"), "data-state", "complete");
    await expectText(page.getByTestId("assistant-text").last(), /Survived the reload\./);
    await expect(page.getByTestId("tool-line").count()).resolves.toBe(1);
    await expect(page.getByTestId("turn").count()).resolves.toBe(1);
  }, 60_000);

  it("with AUTH_TOKENS: a wrong token shows the 401 message, the right one works and is kept", async () => {
    const { page } = await openPage({ AUTH_TOKENS: "alice:secret-token" });
    const banner = page.getByTestId("auth-error");
    // the active-turns poll already needs a token
    await banner.waitFor({ state: "visible", timeout: 5_000 });

    await page.getByTestId("token-input").fill("wrong-token");
    await sendMessage(page, "hello there");
    await expectText(banner, /rejected the API token \(401/);
    await expectAttribute(page.getByTestId("turn-status").last(), "data-state", "failed");
    await expectText(page.getByTestId("turn-status").last(), /Not sent: .*401/);

    await page.getByTestId("token-input").fill("secret-token");
    await page.getByTestId("send").click();
    await expectAttribute(page.getByTestId("turn-status").last(), "data-state", "complete");
    await expectText(page.getByTestId("assistant-text").last(), /You said: hello there/);
    await banner.waitFor({ state: "hidden", timeout: 5_000 });

    await page.reload();
    await expect(page.getByTestId("token-input").inputValue()).resolves.toBe("secret-token");
    await page.waitForTimeout(2_500); // a full poll interval with the kept token
    await expect(banner.isHidden()).resolves.toBe(true);
  });

  it("says plainly why a turn stopped: the loop detector's turn_abort and calls that never started", async () => {
    const { page } = await openPage();
    await sendMessage(page, Array.from({ length: 5 }, () => '/tool echo {"text":"again"}').join("\n"));
    const status = page.getByTestId("turn-status");
    await expectAttribute(status, "data-state", "aborted");
    await expectText(status, /aborted \(loop\): the loop detector stopped a repeating tool call/);
    const lines = page.getByTestId("tool-line");
    await expect(lines.count()).resolves.toBe(5);
    for (const line of await lines.all()) {
      await expect(line.getAttribute("data-state")).resolves.toBe("cancelled");
      await expectText(line.getByTestId("tool-limits"), /never started/);
    }
    await expectText(lines.first().getByTestId("tool-result"), /repeated too often/);
  });

  it("shows error events and parses any SSE framing (CRLF, comments, pings)", async () => {
    const { page } = await openPage();
    const common = { turnId: "turn_stubbed", at: Date.now() };
    const frames = [
      ": a comment line the parser must skip\r\n\r\n",
      `id: 1\r\nevent: turn_start\r\ndata: ${JSON.stringify({ type: "turn_start", seq: 1, sessionId: "ses_stubbed", agentId: "default", provider: "scripted", model: "scripted-1", startedAt: common.at, ...common })}\r\n\r\n`,
      'event: ping\ndata: {"at":1}\n\n',
      `id: 2\nevent: text_delta\ndata: ${JSON.stringify({ type: "text_delta", seq: 2, text: "<b>not bold</b>", ...common })}\n\n`,
      `id: 3\nevent: error\ndata: ${JSON.stringify({ type: "error", seq: 3, code: "model_failed", message: "The provider answered 500 <script>", ...common })}\n\n`,
      `id: 4\nevent: turn_abort\ndata: ${JSON.stringify({ type: "turn_abort", seq: 4, reason: "error", ...common })}\n\n`,
    ].join("");
    await page.route("**/api/sessions/stream", (route) =>
      route.fulfill({ status: 200, contentType: "text/event-stream", body: frames }),
    );
    await sendMessage(page, "anything");

    const error = page.getByTestId("turn-error");
    await expectText(error, /^Error \(model_failed\): The provider answered 500 <script>$/);
    await expect(error.getAttribute("role")).resolves.toBe("alert");
    const status = page.getByTestId("turn-status");
    await expectAttribute(status, "data-state", "aborted");
    await expectText(status, /aborted \(error\): an error ended the turn/);
    // text is text: markup in events is shown, never interpreted (markdown wraps it in a paragraph)
    await expectText(page.getByTestId("assistant-text"), /^<b>not bold<\/b>\s*$/);
    await expect(page.locator(".assistant-text b").count()).resolves.toBe(0);
  });

  it("fits a 375px-wide phone screen without horizontal scrolling", async () => {
    const { page } = await openPage({}, PHONE_VIEWPORT);
    await sendMessage(
      page,
      [
        "/think A long thought that has to wrap on a narrow screen without pushing anything sideways.",
        '/tool sleep {"ms":60000,"heartbeatMs":500}',
        '/tool flaky {"failures":1,"kind":"transient","text":"a-long-result-without-any-spaces-that-must-still-wrap-somewhere-on-a-phone"}',
        '/tool hang {"_meta":{"timeout":800}}',
      ].join("\n"),
    );
    await expectAttribute(toolLineNamed(page, "hang"), "data-state", "timeout");
    await expectAttribute(toolLine(page, '"failures":1'), "data-state", "complete");
    await expectAttribute(toolLine(page, '"ms":60000'), "data-state", "running");
    await page.screenshot({ path: join(SCREENSHOT_DIR, "webchat-375.png") });

    // evaluated in the page (a string, as this project's TypeScript has no DOM types)
    const widths = await page.evaluate<{ scroll: number; client: number }>(
      "({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })",
    );
    expect(widths.scroll).toBeLessThanOrEqual(widths.client);
    for (const testId of ["send", "turn-cancel", "tool-cancel", "message-input", "step-mode"]) {
      const box = await page.getByTestId(testId).first().boundingBox();
      expect(box, testId).not.toBeNull();
      expect(box!.x, testId).toBeGreaterThanOrEqual(0);
      expect(box!.x + box!.width, testId).toBeLessThanOrEqual(PHONE_VIEWPORT.width);
    }
    await page.getByTestId("turn-cancel").click();
    await expectAttribute(page.getByTestId("turn-status"), "data-state", "aborted");
  });
});
