// @ts-check
/**
 * The operator page (`/operator.html`), its entry module: the token field and the panel of every
 * active turn the token may see — agent, age, calls, pause, running tools, zombies — with Abort. It is
 * a page of its own so the chat shows only its own conversation.
 */
import { pollActive, refreshActive } from "./active-turns.js";
import { setUpTokenForm } from "./api-token.js";
import { setUpRetry } from "./connection-banner.js";

function start() {
  setUpTokenForm(() => void refreshActive());
  setUpRetry(() => void refreshActive());
  void pollActive();
}

start();
