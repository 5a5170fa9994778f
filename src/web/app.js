// @ts-check
/**
 * The built-in webchat page of reins (docs/http-api.md, docs/events.md), its entry module: wires the token
 * field, the composer and the turn controls, ticks the live counters, polls the active turns and reattaches
 * to the turn this tab was following before a reload. The page only uses the public HTTP API; every piece of
 * text reaches the DOM through `textContent` or `append(string)`, never as HTML (docs/web-page.md maps the
 * modules).
 */
import { pollActive, refreshActive } from "./active-turns.js";
import { setUpTokenForm } from "./api-token.js";
import { focusMessageInput, setUpComposer } from "./composer.js";
import { restoreSession, setUpTurnControls, turnViews, updateControls } from "./conversation.js";
import { reattach } from "./turn-follower.js";

/** How often elapsed counters and pause countdowns are redrawn. */
const TICK_INTERVAL_MS = 200;

function start() {
  setUpTokenForm(() => void refreshActive());
  restoreSession();
  setUpComposer();
  setUpTurnControls(focusMessageInput);

  setInterval(() => {
    for (const view of turnViews()) if (!view.finished) view.tick();
  }, TICK_INTERVAL_MS);
  void pollActive();
  reattach();
  updateControls();
}

start();
