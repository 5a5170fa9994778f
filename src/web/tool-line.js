// @ts-check
/**
 * A tool call's status line in a turn: name, input summary, limits, state badge and Cancel button
 * (`POST /api/turns/:id/tools/:toolId/abort`). The elapsed counter ticks in the browser from the call's
 * start, is re-based by `tool_progress` and by the active-turns poll, and is coloured green under 10 s,
 * yellow from 10 to 30 s, red above (`data-level`). Retries, timeouts and the final result are shown
 * as they arrive.
 */
import { api, describeError } from "./api-client.js";
import { element } from "./dom.js";
import { RESULT_EXCERPT_MAX_CHARS, formatDuration, formatLimit, summarizeInput, truncate } from "./format.js";
import { serverNow } from "./server-clock.js";

/** Elapsed-time colours of a tool line: green below, yellow from here… */
const YELLOW_AFTER_MS = 10_000;
/** …red above this. */
const RED_AFTER_MS = 30_000;

/** What each elapsed-time colour means (a tooltip, so the colour is not the only cue). */
const LEVEL_TITLES = { green: "under 10 s", yellow: "10–30 s", red: "over 30 s" };

/**
 * The colour band of an elapsed time: green under 10 s, yellow 10–30 s, red over 30 s.
 * @param {number} ms
 * @returns {"green" | "yellow" | "red"}
 */
function elapsedLevel(ms) {
  if (ms < YELLOW_AFTER_MS) return "green";
  if (ms <= RED_AFTER_MS) return "yellow";
  return "red";
}

export class ToolLine {
  /**
   * @param {import("./turn-view.js").TurnView} turn
   * @param {{toolId: string, toolName: string, input: unknown, timeoutMs: number, idleTimeoutMs: number, at: number}} start
   */
  constructor(turn, start) {
    this.turn = turn;
    this.toolId = start.toolId;
    this.toolName = start.toolName;
    this.running = true;
    this.retries = 0;
    /** Elapsed ms at server time `referenceAt`; the counter ticks on from there in the browser. */
    this.referenceElapsedMs = 0;
    this.referenceAt = start.at;
    /** The duration once the call has a result. */
    this.finalElapsedMs = 0;

    this.elapsed = element("span", { className: "tool-elapsed", testId: "tool-elapsed" });
    this.state = element("span", { className: "tool-state", testId: "tool-state", text: "running" });
    this.cancelButton = element("button", {
      className: "small danger",
      testId: "tool-cancel",
      text: "Cancel",
      attributes: {
        type: "button",
        "aria-label": `Cancel tool ${start.toolName} ${truncate(summarizeInput(start.input), 40)}`.trim(),
      },
    });
    this.cancelButton.addEventListener("click", () => void this.cancel());
    this.retriesText = element("span", { className: "tool-retries", testId: "tool-retries" });
    this.retriesText.hidden = true;
    this.message = element("span", { className: "tool-message", testId: "tool-message" });
    this.message.hidden = true;
    this.result = element("div", { className: "tool-result", testId: "tool-result" });
    this.result.hidden = true;

    // timeoutMs < 0: the call never started, so it has no limits to show
    const limits =
      start.timeoutMs < 0
        ? "never started"
        : [
            start.timeoutMs > 0 ? `timeout ${formatLimit(start.timeoutMs)}` : "no timeout",
            ...(start.idleTimeoutMs > 0 ? [`idle ${formatLimit(start.idleTimeoutMs)}`] : []),
          ].join(" · ");

    this.element = element(
      "li",
      { className: "tool-line", testId: "tool-line", attributes: { "data-tool-id": start.toolId } },
      element(
        "div",
        { className: "tool-head" },
        element("span", { className: "tool-name", testId: "tool-name", text: start.toolName }),
        element("code", { className: "tool-input", testId: "tool-input", text: summarizeInput(start.input) }),
      ),
      element(
        "div",
        { className: "tool-meta" },
        this.state,
        this.elapsed,
        element("span", { className: "tool-limits", testId: "tool-limits", text: limits }),
        this.retriesText,
        this.cancelButton,
      ),
      this.message,
      this.result,
    );
    this.element.dataset.state = "running";
    this.render();
  }

  /**
   * Sets the counter to `elapsedMs` as of server time `at` (from `tool_progress`). The elapsed time is
   * recomputed from this reference on every tick, so a better estimate of the server clock (a later,
   * fresher event) corrects it too.
   * @param {number} elapsedMs
   * @param {number} at
   */
  correct(elapsedMs, at) {
    this.referenceElapsedMs = elapsedMs;
    this.referenceAt = at;
  }

  /** @param {number} elapsedMs a fresh reading (from `/api/turns/active`) */
  correctNow(elapsedMs) {
    if (this.running) this.correct(elapsedMs, serverNow());
  }

  elapsedMs() {
    if (!this.running) return this.finalElapsedMs;
    return this.referenceElapsedMs + Math.max(0, serverNow() - this.referenceAt);
  }

  render() {
    const ms = this.elapsedMs();
    const level = elapsedLevel(ms);
    this.elapsed.textContent = formatDuration(ms);
    if (this.elapsed.dataset.level !== level) {
      this.elapsed.dataset.level = level;
      this.elapsed.className = `tool-elapsed level-${level}`;
      this.elapsed.title = LEVEL_TITLES[level];
    }
  }

  /** @param {{elapsedMs: number, message: string | null, at: number}} progress */
  progress(progress) {
    this.correct(progress.elapsedMs, progress.at);
    if (progress.message) {
      this.message.textContent = progress.message;
      this.message.hidden = false;
    }
    this.render();
  }

  /** @param {{attempt: number, error: string, classification: string, delayMs: number}} retry */
  retry(retry) {
    this.retries = Math.max(this.retries + 1, retry.attempt - 1);
    this.retriesText.textContent = `${this.retries} ${this.retries === 1 ? "retry" : "retries"} · last error (${retry.classification}): ${retry.error}`;
    this.retriesText.title = retry.error;
    this.retriesText.dataset.count = String(this.retries);
    this.retriesText.hidden = false;
  }

  /** @param {{kind: string, timeoutMs: number}} timeout */
  timedOut(timeout) {
    this.message.textContent =
      timeout.kind === "idle"
        ? `No progress for ${formatLimit(timeout.timeoutMs)} (idle timeout)`
        : `Exceeded its wall-clock limit of ${formatLimit(timeout.timeoutMs)}`;
    this.message.hidden = false;
    this.setState("timeout");
  }

  /** @param {{status: string, result: string, durationMs: number, attempts: number, isError: boolean}} result */
  finish(result) {
    this.running = false;
    this.finalElapsedMs = result.durationMs;
    this.setState(result.status || (result.isError ? "error" : "complete"));
    const excerpt = truncate(result.result.replace(/\s+/g, " ").trim(), RESULT_EXCERPT_MAX_CHARS);
    const attempts = result.attempts > 1 ? ` (${result.attempts} attempts)` : "";
    this.result.replaceChildren();
    if (result.result.length > RESULT_EXCERPT_MAX_CHARS) {
      const details = element(
        "details",
        {},
        element("summary", { text: `${excerpt}${attempts}` }),
        element("pre", { text: result.result }),
      );
      this.result.append(details);
    } else {
      this.result.append(`${excerpt || "(empty result)"}${attempts}`);
    }
    this.result.hidden = false;
    this.cancelButton.remove();
    this.render();
  }

  /** Closes a line that the turn ended without a result (should not happen; the server sends one). */
  close() {
    if (!this.running) return;
    this.finalElapsedMs = this.elapsedMs();
    this.running = false;
    this.setState("cancelled");
    this.cancelButton.remove();
    this.render();
  }

  /** @param {string} state */
  setState(state) {
    this.element.dataset.state = state;
    this.state.textContent = state;
    this.state.className = `tool-state state-${state}`;
  }

  async cancel() {
    if (!this.turn.turnId || !this.running) return;
    const button = /** @type {HTMLButtonElement} */ (this.cancelButton);
    button.disabled = true;
    button.textContent = "Cancelling…";
    try {
      await api(
        `/api/turns/${encodeURIComponent(this.turn.turnId)}/tools/${encodeURIComponent(this.toolId)}/abort`,
        { method: "POST" },
      );
    } catch (error) {
      button.textContent = "Cancel";
      button.disabled = !this.running;
      this.turn.note(`Could not cancel ${this.toolName}: ${describeError(error)}`);
    }
  }
}
