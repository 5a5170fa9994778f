// @ts-check
/**
 * A step-mode pause in a turn (`debugger.pause`): its phase, its summary (the calls about to run or
 * the results just in), a countdown to its deadline and a Continue button
 * (`POST /api/turns/:id/continue {pauseId}`).
 */
import { api, describeError } from "./api-client.js";
import { element } from "./dom.js";
import { RESULT_EXCERPT_MAX_CHARS, summarizeInput, truncate } from "./format.js";
import { serverNow } from "./server-clock.js";

const PAUSE_SUMMARY_MAX_CHARS = 2_000;
/** A `deadlineMs` above this is an epoch time; below, a duration from the pause event. */
const EPOCH_THRESHOLD_MS = 1e11;

export class PauseCard {
  /**
   * @param {import("./turn-view.js").TurnView} turn
   * @param {{pauseId: string, phase: string, deadlineMs: number, summary: unknown, at: number}} pause
   */
  constructor(turn, pause) {
    this.turn = turn;
    this.pauseId = pause.pauseId;
    this.open = true;
    // the deadline in local performance.now() terms, whichever way the server expressed it
    const deadlineServerMs =
      pause.deadlineMs > EPOCH_THRESHOLD_MS ? pause.deadlineMs : pause.at + pause.deadlineMs;
    this.deadlineLocalMs = performance.now() + (deadlineServerMs - serverNow());

    this.countdown = element("span", { className: "pause-countdown", testId: "pause-countdown" });
    this.continueButton = element("button", {
      className: "primary small",
      testId: "continue",
      text: "Continue",
      attributes: { type: "button", "aria-label": "Continue the paused turn" },
    });
    this.continueButton.addEventListener("click", () => void this.continue());
    this.stateText = element("span", { className: "pause-state", testId: "pause-state", text: "waiting" });

    const phase = pause.phase === "after_tools" ? "Paused after tools ran" : "Paused after inference";
    this.element = element(
      "section",
      {
        className: "pause",
        testId: "pause",
        attributes: { "data-pause-id": pause.pauseId, "aria-label": phase },
      },
      element(
        "div",
        { className: "pause-head" },
        element("strong", { text: phase }),
        this.stateText,
        this.countdown,
        this.continueButton,
      ),
      renderPauseSummary(pause.summary),
    );
    this.element.dataset.state = "waiting";
    this.render();
  }

  render() {
    if (!this.open) return;
    const remainingMs = this.deadlineLocalMs - performance.now();
    this.countdown.textContent =
      remainingMs > 0 ? `auto-continues in ${Math.ceil(remainingMs / 1000)} s` : "auto-continuing…";
  }

  async continue() {
    if (!this.open || !this.turn.turnId) return;
    const button = /** @type {HTMLButtonElement} */ (this.continueButton);
    button.disabled = true;
    try {
      await api(`/api/turns/${encodeURIComponent(this.turn.turnId)}/continue`, {
        method: "POST",
        body: { pauseId: this.pauseId },
      });
      this.resolve("continued");
    } catch (error) {
      button.disabled = false;
      this.turn.note(`Could not continue: ${describeError(error)}`);
    }
  }

  /** @param {string} state */
  resolve(state) {
    if (!this.open) return;
    this.open = false;
    this.element.dataset.state = state;
    this.stateText.textContent = state;
    this.countdown.textContent = "";
    this.continueButton.remove();
  }

  /** The turn moved on: continued by someone (or its deadline). */
  passed() {
    this.resolve(performance.now() >= this.deadlineLocalMs ? "auto-continued" : "continued");
  }
}

/**
 * A pause's summary: the calls about to run (`{calls}`) or the results just in (`{results}`) as a list,
 * anything else as JSON.
 * @param {any} summary
 * @returns {HTMLElement}
 */
function renderPauseSummary(summary) {
  const calls = Array.isArray(summary?.calls) ? summary.calls : null;
  const results = Array.isArray(summary?.results) ? summary.results : null;
  if (calls || results) {
    const heading = calls ? "Calls about to run:" : "Results:";
    const items = (calls ?? results).map((/** @type {any} */ entry) =>
      element(
        "li",
        {},
        element("span", { className: "tool-name", text: String(entry?.toolName ?? "?") }),
        " ",
        calls
          ? element("code", { text: summarizeInput(entry?.input) })
          : element("span", {
              text: `${entry?.status ?? ""}: ${truncate(String(entry?.result ?? ""), RESULT_EXCERPT_MAX_CHARS)}`,
            }),
      ),
    );
    return element(
      "div",
      { className: "pause-summary", testId: "pause-summary" },
      element("span", { className: "pause-summary-heading", text: heading }),
      element("ul", {}, ...items),
    );
  }
  const text =
    summary === undefined || summary === null
      ? ""
      : typeof summary === "string"
        ? summary
        : JSON.stringify(summary, null, 2);
  return element("pre", {
    className: "pause-summary",
    testId: "pause-summary",
    text: truncate(text ?? "", PAUSE_SUMMARY_MAX_CHARS),
  });
}
