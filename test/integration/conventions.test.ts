/**
 * Conventions a new user meets first, on the real server: `.env` in the working directory is read at
 * start-up and the real environment wins over it (and `.env.example` copied as `.env` starts a
 * server); a 401 over a real socket carries `WWW-Authenticate`; and a model retry reaches the web page
 * as a quiet note, not as an error, while the turn goes on to succeed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BrowserHarness, expectText, sendMessage } from "../helpers/browser.js";
import { PROJECT_ROOT, SERVER_NODE_FLAGS } from "../helpers/server.js";
import { FakeProvider } from "../support/fake-providers.js";

const TSX_LOADER = pathToFileURL(join(PROJECT_ROOT, "node_modules/tsx/dist/loader.mjs")).href;
const MAIN = join(PROJECT_ROOT, "src/main.ts");
const START_TIMEOUT_MS = 20_000;

type Started = { child: ChildProcess; port: number; baseUrl: string; output: () => string };

const children: ChildProcess[] = [];
const directories: string[] = [];

afterEach(async () => {
  await Promise.all(
    children.splice(0).map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once("exit", () => resolve());
          child.kill("SIGKILL");
        }),
    ),
  );
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function temporaryDirectory(): string {
  const directory = mkdtempSync(join(tmpdir(), "reins-conventions-"));
  directories.push(directory);
  return directory;
}

/** A port nobody listens on right now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** Starts `src/main.ts` with `cwd` as its working directory and only `env` as its environment. */
async function startIn(cwd: string, env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, "--import", TSX_LOADER, MAIN], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), START_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      for (const line of output.split("\n")) {
        if (!line.includes('"msg":"listening"')) continue;
        clearTimeout(timer);
        resolve((JSON.parse(line) as { port: number }).port);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${output}`));
    });
  });
  return { child, port, baseUrl: `http://127.0.0.1:${port}`, output: () => output };
}

const activeTurns = (baseUrl: string, token?: string) =>
  fetch(`${baseUrl}/api/turns/active`, token ? { headers: { Authorization: `Bearer ${token}` } } : {});

describe(".env in the working directory", () => {
  const FILE_TOKEN = "file-token-1234";
  const REAL_TOKEN = "real-token-5678";

  it("is read at start-up: PORT, AUTH_TOKENS and DATA_DIR come from the file", async () => {
    const directory = temporaryDirectory();
    const port = await freePort();
    writeFileSync(
      join(directory, ".env"),
      `# written by a user\nPORT=${port}\nAUTH_TOKENS=alice:${FILE_TOKEN}\nDATA_DIR=./data-from-env-file\n`,
    );
    const server = await startIn(directory, { HOST: "127.0.0.1", LOG_LEVEL: "info" });
    expect(server.port).toBe(port);
    expect(existsSync(join(directory, "data-from-env-file", "reins.db"))).toBe(true);

    // auth is on, from the file: over a real socket, 401 with its RFC 6750 challenge
    const refused = await activeTurns(server.baseUrl);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="reins"');
    expect((await activeTurns(server.baseUrl, FILE_TOKEN)).status).toBe(200);
  });

  it("loses to the real environment: a variable set there keeps its value", async () => {
    const directory = temporaryDirectory();
    const [filePort, realPort] = [await freePort(), await freePort()];
    writeFileSync(
      join(directory, ".env"),
      `PORT=${filePort}\nAUTH_TOKENS=alice:${FILE_TOKEN}\nDATA_DIR=./data-from-env-file\n`,
    );
    const server = await startIn(directory, {
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      PORT: String(realPort),
      AUTH_TOKENS: `bob:${REAL_TOKEN}`,
    });
    expect(server.port).toBe(realPort);
    expect((await activeTurns(server.baseUrl, REAL_TOKEN)).status).toBe(200);
    const fileToken = await activeTurns(server.baseUrl, FILE_TOKEN);
    expect(fileToken.status).toBe(401);
    expect(fileToken.headers.get("www-authenticate")).toBe('Bearer realm="reins", error="invalid_token"');
    // a key only the file sets still comes from the file
    expect(existsSync(join(directory, "data-from-env-file", "reins.db"))).toBe(true);
  });

  it("can be .env.example as it is: copied as .env, it starts a server", async () => {
    const directory = temporaryDirectory();
    copyFileSync(join(PROJECT_ROOT, ".env.example"), join(directory, ".env"));
    const server = await startIn(directory, {
      PORT: "0",
      CONFIG_FILE: join(PROJECT_ROOT, "config/default.json"),
      DATA_DIR: join(directory, "data"),
    });
    expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
    expect((await activeTurns(server.baseUrl)).status).toBe(200);
  });
});

describe("a model retry on the web page", () => {
  const harness = new BrowserHarness();
  let openai: FakeProvider;

  beforeAll(async () => {
    openai = await FakeProvider.start("openai");
    await harness.launch();
  }, 60_000);
  afterAll(async () => {
    await harness.closeAll();
    await openai.close();
  });

  it("is a quiet note, not an error, and the turn completes", async () => {
    const server = await harness.startServer({
      env: { OPENAI_API_KEY: "sk-openai-test", OPENAI_BASE_URL: openai.baseUrl, DEFAULT_PROVIDER: "openai" },
    });
    openai.enqueue(
      { kind: "error", status: 429, message: "Rate limit reached for requests" },
      { kind: "text", text: "Second time lucky." },
    );
    const { page, pageErrors } = await harness.open(server);
    await sendMessage(page, "hello");
    await expectText(page.getByTestId("assistant-text").last(), /Second time lucky\./, 20_000);
    await expectText(page.getByTestId("turn-status").last(), /Turn complete/, 20_000);
    const note = page.getByTestId("model-retry");
    expect(await note.count()).toBe(1);
    expect(await note.textContent()).toMatch(
      /^openai failed \(.*Rate limit reached for requests.*\); retrying in .*, attempt 2$/,
    );
    expect(await note.getAttribute("role")).toBeNull();
    expect(await page.getByTestId("turn-error").count()).toBe(0);
    expect(await page.getByRole("alert").count()).toBe(0);
    expect(pageErrors).toEqual([]);
    expect(openai.requests).toHaveLength(2);
  }, 60_000);
});
