// @ts-check
/**
 * The built-in chat page of reins (docs/http-api.md, docs/events.md), its entry module: wires the token
 * field, the sessions sidebar, the composer and the turn controls, ticks the live counters, and reopens the
 * session this tab had before a reload (its history restored, its running turn reattached). The page only
 * uses the public HTTP API; text reaches the DOM through `textContent`, except assistant markdown, which is
 * sanitised by DOMPurify first (docs/web-page.md maps the modules). The operator view of everyone's active
 * turns is a page of its own, `/operator.html`.
 */
import { setUpTokenForm } from "./api-token.js";
import { focusMessageInput, setUpComposer } from "./composer.js";
import { setUpRetry } from "./connection-banner.js";
import { savedSessionId, setUpTurnControls, turnViews, updateControls } from "./conversation.js";
import { reloadAll, setUpSessions } from "./sessions.js";

/** How often elapsed counters and pause countdowns are redrawn. */
const TICK_INTERVAL_MS = 200;

function start() {
  setUpTokenForm(reloadAll);
  setUpRetry(reloadAll);
  setUpComposer();
  setUpTurnControls();
  setUpSessions(savedSessionId());
  focusMessageInput();

  setInterval(() => {
    for (const view of turnViews()) if (!view.finished) view.tick();
  }, TICK_INTERVAL_MS);
  updateControls();
}

start();
