/**
 * Harness for the browser tests: Debian's Chromium driven by playwright-core, the real server (a child
 * process, see server.ts) serving the webchat page, and a page per test that records uncaught script
 * errors. Everything started here is closed by `closeAll()`.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from "playwright-core";
import { expect } from "vitest";
import { PROJECT_ROOT, startServer, type ServerHandle, type StartOptions } from "./server.js";

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const CHROMIUM_INSTALL_COMMAND = "apt-get update && apt-get install -y chromium";

const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export const DESKTOP_VIEWPORT = { width: 1100, height: 820 };
export const PHONE_VIEWPORT = { width: 375, height: 740 };
/** The sizes the chat page is tested and photographed at (docs/chat-desktop.png, docs/chat-phone.png). */
export const CHAT_DESKTOP_VIEWPORT = { width: 1280, height: 800 };
export const CHAT_PHONE_VIEWPORT = { width: 390, height: 844 };

/** Launches Chromium; fails (never skips) with the install command when it is missing. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `The browser tests need Chromium at ${CHROMIUM_PATH} (or set CHROMIUM_PATH). ` +
        `Install it with: ${CHROMIUM_INSTALL_COMMAND}`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}

export type OpenedPage = {
  page: Page;
  context: BrowserContext;
  /** Uncaught exceptions thrown by the page's scripts. */
  pageErrors: string[];
};

/** Where screenshots and the logs of failed tests go. */
export const SCREENSHOT_DIR = join(PROJECT_ROOT, "test-results");

/**
 * After a test with its opened pages: when it failed, each page's screenshot and its server's log go to
 * SCREENSHOT_DIR; an exception thrown by a page's own script fails the test whatever it looked at.
 */
export async function checkOpenedPages(
  testName: string,
  failed: boolean,
  pages: readonly (OpenedPage & { server: ServerHandle })[],
): Promise<void> {
  if (failed) {
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    const name = testName.replace(/[^a-z0-9]+/gi, "-").slice(0, 60);
    await Promise.allSettled(
      pages.map((entry, index) =>
        entry.page.screenshot({ path: join(SCREENSHOT_DIR, `failed-${name}-${index}.png`), fullPage: true }),
      ),
    );
    for (const [index, entry] of pages.entries()) {
      writeFileSync(join(SCREENSHOT_DIR, `failed-${name}-${index}.log`), entry.server.logs().join("\n"));
    }
  }
  expect(pages.flatMap((entry) => entry.pageErrors)).toEqual([]);
}

/** Owns the browser, the servers and the pages of one test file. */
export class BrowserHarness {
  private browser: Browser | undefined;
  private readonly servers: ServerHandle[] = [];
  private readonly contexts: BrowserContext[] = [];

  async launch(): Promise<void> {
    this.browser = await launchBrowser();
  }

  /**
   * Starts the real server and checks that it serves the webchat page at `/`; fails with a clear
   * message when it does not.
   */
  async startServer(options: StartOptions = {}): Promise<ServerHandle> {
    const server = await startServer(options);
    this.servers.push(server);
    const response = await fetch(`${server.baseUrl}/`);
    const body = await response.text();
    if (response.status !== 200 || !body.includes('data-testid="message-input"')) {
      throw new Error(
        `GET ${server.baseUrl}/ answered ${response.status} without the webchat page; ` +
          `the server must serve src/web/ at / (commit "Serve the web page").`,
      );
    }
    return server;
  }

  /** Opens the page of `server` in a fresh browser context (its own storage). */
  async open(server: ServerHandle, viewport = DESKTOP_VIEWPORT): Promise<OpenedPage> {
    if (!this.browser) throw new Error("launch() the browser first");
    const context = await this.browser.newContext({ viewport });
    this.contexts.push(context);
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on("pageerror", (error) => pageErrors.push(error.message));
    await page.goto(`${server.baseUrl}/`);
    await page.getByTestId("message-input").waitFor();
    return { page, context, pageErrors };
  }

  async closeAll(): Promise<void> {
    await Promise.allSettled(this.contexts.map((context) => context.close()));
    await this.browser?.close().catch(() => {});
    await Promise.allSettled(
      this.servers.map(async (server) => {
        await server.stop();
        server.cleanup();
      }),
    );
  }
}

/** Types `message` into the message box and presses Send. */
export async function sendMessage(page: Page, message: string): Promise<void> {
  await page.getByTestId("message-input").fill(message);
  await page.getByTestId("send").click();
}

/** The status line of the tool call whose input summary contains `inputText`. */
export function toolLine(page: Page, inputText: string): Locator {
  return page.getByTestId("tool-line").filter({
    has: page.getByTestId("tool-input").filter({ hasText: inputText }),
  });
}

/** The page's line for the one call of tool `toolName`. */
export function toolLineNamed(page: Page, toolName: string): Locator {
  return page.getByTestId("tool-line").filter({
    has: page.getByTestId("tool-name").filter({ hasText: new RegExp(`^${toolName}$`) }),
  });
}

/** Waits until `locator`'s attribute `name` equals `value`. */
export async function expectAttribute(
  locator: Locator,
  name: string,
  value: string,
  timeoutMs = 10_000,
): Promise<void> {
  await expect
    .poll(() => locator.getAttribute(name, { timeout: 1_000 }).catch(() => null), {
      timeout: timeoutMs,
      interval: 100,
    })
    .toBe(value);
}

/** Waits until `locator`'s text matches `pattern`. */
export async function expectText(locator: Locator, pattern: RegExp, timeoutMs = 10_000): Promise<void> {
  await expect
    .poll(() => locator.textContent({ timeout: 1_000 }).catch(() => ""), {
      timeout: timeoutMs,
      interval: 100,
    })
    .toMatch(pattern);
}

/** Seconds shown by a tool line's elapsed counter ("12.3 s" → 12.3; "1 m 05 s" → 65). */
export async function elapsedSeconds(line: Locator): Promise<number> {
  const text = (await line.getByTestId("tool-elapsed").textContent()) ?? "";
  const minutes = /^(\d+) m (\d+) s$/.exec(text);
  if (minutes) return Number(minutes[1]) * 60 + Number(minutes[2]);
  const seconds = /^([\d.]+) s$/.exec(text);
  if (!seconds) throw new Error(`unexpected elapsed text: "${text}"`);
  return Number(seconds[1]);
}
