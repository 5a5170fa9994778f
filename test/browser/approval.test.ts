/**
 * Tool approval on the webchat page (docs/semantics.md#approval) in real Chromium at desktop size against the
 * real server: a card per waiting call with its input, Approve, Edit (an invalid edit shows the server's 400
 * naming the field and the card keeps waiting; a valid one runs), and Reject with a reason; the cards come
 * back in the right state after a reload; a delegated turn's waiting call gets its card in the parent's turn.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BrowserHarness,
  DESKTOP_VIEWPORT,
  expectAttribute,
  expectText,
  sendMessage,
} from "../helpers/browser.js";

const harness = new BrowserHarness();
let configDir: string;

beforeAll(async () => {
  await harness.launch();
  configDir = mkdtempSync(join(tmpdir(), "reins-approval-page-"));
});

afterAll(async () => {
  await harness.closeAll();
  rmSync(configDir, { recursive: true, force: true });
});

describe("approval cards", () => {
  it("approve, edit (refused, then accepted) and reject with a reason, across a reload", async () => {
    const configFile = join(configDir, "config.json");
    // the built-in agent's id: turns started from the page use it
    writeFileSync(
      configFile,
      JSON.stringify({ agents: { default: { tools: ["*"], approval: { echo: "always" } } } }),
    );
    const server = await harness.startServer({
      env: { CONFIG_FILE: configFile, DISCONNECT_GRACE_MS: "10000" },
    });
    const { page, pageErrors } = await harness.open(server, DESKTOP_VIEWPORT);

    await sendMessage(
      page,
      ['/tool echo {"text":"first"}', '/tool echo {"text":"second"}', '/tool echo {"text":"third"}'].join(
        "\n",
      ),
    );
    const cards = page.getByTestId("approval");
    await expect.poll(() => cards.count(), { timeout: 15_000 }).toBe(3);
    const [first, second] = [cards.nth(0), cards.nth(1)];
    expect(JSON.parse((await first.getByTestId("approval-input").inputValue()) || "null")).toEqual({
      text: "first",
    });
    await expectText(first.getByTestId("approval-countdown"), /rejected in \d+ s/);

    // Approve
    await first.getByTestId("approval-approve").click();
    await expectAttribute(first, "data-state", "approved");
    await expect.poll(() => first.getByTestId("approval-approve").count()).toBe(0);

    // Edit: an invalid input is refused with the field named, and the card keeps waiting
    await second.getByTestId("approval-edit").click();
    const input = second.getByTestId("approval-input");
    await input.fill('{"text": 5}');
    await second.getByTestId("approval-approve").click();
    await expectText(second.getByTestId("approval-error"), /input\.text/);
    expect(await second.getAttribute("data-state")).toBe("waiting");
    await input.fill('{"text": "edited by a person"}');
    await second.getByTestId("approval-approve").click();
    await expectAttribute(second, "data-state", "approved");
    await expectText(second.getByTestId("approval-state"), /approved with edits/);

    // a reload: the cards come back as they were, the third still waiting
    await page.reload();
    await expect.poll(() => page.getByTestId("approval").count(), { timeout: 15_000 }).toBe(3);
    const again = page.getByTestId("approval");
    await expectAttribute(again.nth(0), "data-state", "approved");
    await expectAttribute(again.nth(1), "data-state", "approved");
    await expectAttribute(again.nth(2), "data-state", "waiting");

    // Reject with a reason
    const last = again.nth(2);
    await last.getByTestId("approval-reason").fill("not this one");
    await last.getByTestId("approval-reject").click();
    await expectAttribute(last, "data-state", "rejected");
    await expectText(last.getByTestId("approval-state"), /rejected: not this one/);

    const answer = page.getByTestId("assistant-text").last();
    await expectText(answer, /\[REJECTED\] not this one/, 15_000);
    await expectText(answer, /edited by a person/);
    await expectAttribute(page.getByTestId("turn").last(), "data-state", "complete", 15_000);
    expect(pageErrors).toEqual([]);
  });

  it("a delegated turn's call waiting for approval gets its card in the parent's turn, and approving it runs it", async () => {
    const configFile = join(configDir, "delegating.json");
    writeFileSync(
      configFile,
      JSON.stringify({ agents: { default: { tools: ["*"], approval: { echo: "always", "*": "never" } } } }),
    );
    const server = await harness.startServer({ env: { CONFIG_FILE: configFile } });
    const { page, pageErrors } = await harness.open(server, DESKTOP_VIEWPORT);

    const delegation = { agentId: "default", message: '/tool echo {"text":"asked by the child"}' };
    await sendMessage(page, `/tool delegate ${JSON.stringify(delegation)}`);
    const card = page.getByTestId("approval");
    await expect.poll(() => card.count(), { timeout: 15_000 }).toBe(1);
    expect(JSON.parse((await card.getByTestId("approval-input").inputValue()) || "null")).toEqual({
      text: "asked by the child",
    });
    await card.getByTestId("approval-approve").click();
    await expectAttribute(card, "data-state", "approved");
    await expectText(page.getByTestId("assistant-text").last(), /asked by the child/, 15_000);
    await expectAttribute(page.getByTestId("turn").last(), "data-state", "complete", 15_000);

    // a second one ends undecided (its delegate call is cancelled): its card closes
    await sendMessage(page, `/tool delegate ${JSON.stringify(delegation)}`);
    await expect.poll(() => card.count(), { timeout: 15_000 }).toBe(2);
    const active = (await (await fetch(`${server.baseUrl}/api/turns/active`)).json()) as {
      turns: { turnId: string; runningTools: { toolId: string; toolName: string }[] }[];
    };
    const parent = active.turns.find((turn) =>
      turn.runningTools.some((tool) => tool.toolName === "delegate"),
    );
    const delegateCall = parent?.runningTools.find((tool) => tool.toolName === "delegate");
    const cancel = await fetch(
      `${server.baseUrl}/api/turns/${parent?.turnId}/tools/${delegateCall?.toolId}/abort`,
      { method: "POST" },
    );
    expect(cancel.status).toBe(200);
    await expectAttribute(card.nth(1), "data-state", "cancelled");
    await expect.poll(() => card.nth(1).getByTestId("approval-approve").count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});
