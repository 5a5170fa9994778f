// @ts-check
/**
 * The built-in webchat page of reins (DESIGN.md §3, §4): sends a message with
 * `POST /api/sessions/stream`, reads the SSE answer with `fetch` and a stream parser (so it can send
 * `Authorization: Bearer …`), and renders every turn event — text, thinking, one live status line per
 * tool call, step-mode pauses, errors and the terminal event. It reattaches to a running turn after a
 * reload (`GET /api/turns/:id/events`), polls `/api/turns/active` for the panel of running turns, and
 * keeps the API token in localStorage. Plain ES module, no build step; every piece of text reaches the
 * DOM through `textContent` or `append(string)`, never as HTML.
 */

const STORAGE_KEYS = {
  token: "reins.token",
  stepMode: "reins.stepMode",
  sessionId: "reins.sessionId",
  /** The turn this tab is following: `{turnId, sessionId, lastSeq, message}` (sessionStorage). */
  turn: "reins.turn",
};

const ACTIVE_POLL_INTERVAL_MS = 2_000;
const TICK_INTERVAL_MS = 200;
/** Elapsed-time colours of a tool line: green below, yellow from here… */
const YELLOW_AFTER_MS = 10_000;
/** …red above this. */
const RED_AFTER_MS = 30_000;
const RECONNECT_DELAY_MS = 1_000;
const MAX_RECONNECT_ATTEMPTS = 5;
const INPUT_SUMMARY_MAX_CHARS = 120;
const RESULT_EXCERPT_MAX_CHARS = 160;
const PAUSE_SUMMARY_MAX_CHARS = 2_000;
/** A `deadlineMs` above this is an epoch time; below, a duration from the pause event. */
const EPOCH_THRESHOLD_MS = 1e11;

/** What each elapsed-time colour means (a tooltip, so the colour is not the only cue). */
const LEVEL_TITLES = { green: "under 10 s", yellow: "10–30 s", red: "over 30 s" };

/** Plain words for each `turn_abort` reason. */
const ABORT_REASON_TEXT = {
  user: "stopped by a user",
  timeout: "the turn ran past its time limit",
  error: "an error ended the turn",
  disconnect: "its client disconnected",
  shutdown: "the server is shutting down",
  parent: "its parent turn was aborted",
  loop: "the loop detector stopped a repeating tool call",
  interrupted: "the server restarted while it ran",
};

// ---------------------------------------------------------------------------------------------------
// DOM helpers

/**
 * @param {string} selector
 * @returns {HTMLElement}
 */
function byTestId(selector) {
  const element = document.querySelector(`[data-testid="${selector}"]`);
  if (!(element instanceof HTMLElement)) throw new Error(`page is missing [data-testid="${selector}"]`);
  return element;
}

/**
 * Creates an element. Text is always set through `textContent`/`append`, so it is never parsed as HTML.
 * @param {string} tag
 * @param {{className?: string, testId?: string, text?: string, attributes?: Record<string, string>}} [options]
 * @param {(Node | string)[]} children
 * @returns {HTMLElement}
 */
function element(tag, options = {}, ...children) {
  const node = document.createElement(tag);
  if (options.className) node.className = options.className;
  if (options.testId) node.dataset.testid = options.testId;
  if (options.text !== undefined) node.textContent = options.text;
  for (const [name, value] of Object.entries(options.attributes ?? {})) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

/**
 * @param {string} text
 * @param {number} maxChars
 */
function truncate(text, maxChars) {
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}

/** @param {number} ms */
function formatDuration(ms) {
  const safe = Math.max(0, ms);
  if (safe < 60_000) return `${(safe / 1000).toFixed(1)} s`;
  const totalSeconds = Math.floor(safe / 1000);
  const minutes = Math.floor(totalSeconds / 60);
  return `${minutes} m ${String(totalSeconds % 60).padStart(2, "0")} s`;
}

/** @param {number} ms */
function formatLimit(ms) {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

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

/** @param {unknown} input */
function summarizeInput(input) {
  if (input === undefined || input === null) return "";
  let text;
  try {
    text = typeof input === "string" ? input : JSON.stringify(input);
  } catch {
    text = String(input);
  }
  return truncate(text ?? "", INPUT_SUMMARY_MAX_CHARS);
}

// ---------------------------------------------------------------------------------------------------
// Server clock: event `at` values are the server's epoch ms. The smallest (local now − at) seen is the
// offset plus the shortest delivery delay, which is as close to the server's "now" as we can get.

let serverOffsetMs = Number.POSITIVE_INFINITY;

/** @param {number} at */
function observeServerTime(at) {
  if (Number.isFinite(at)) serverOffsetMs = Math.min(serverOffsetMs, Date.now() - at);
}

function serverNow() {
  return Date.now() - (Number.isFinite(serverOffsetMs) ? serverOffsetMs : 0);
}

// ---------------------------------------------------------------------------------------------------
// API access

class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

const tokenInput = /** @type {HTMLInputElement} */ (byTestId("token-input"));
const authError = byTestId("auth-error");
const settings = /** @type {HTMLDetailsElement} */ (byTestId("settings"));

function currentToken() {
  return tokenInput.value.trim();
}

/** @param {string} serverMessage */
function showAuthError(serverMessage) {
  const hasToken = currentToken() !== "";
  authError.textContent = hasToken
    ? `The server rejected the API token (401 unauthorized: ${serverMessage}). Check the token under “API token” and try again.`
    : `This server needs an API token (401 unauthorized: ${serverMessage}). Enter it under “API token” and try again.`;
  authError.hidden = false;
  settings.open = true;
}

function clearAuthError() {
  authError.hidden = true;
  authError.textContent = "";
}

/**
 * `fetch` against the API with the bearer token. Resolves with the response when it is 2xx; rejects
 * with an ApiError carrying the server's `{error, code}` otherwise. A 401 also shows the token banner.
 * @param {string} path
 * @param {{method?: string, body?: unknown, headers?: Record<string, string>, signal?: AbortSignal}} [options]
 * @returns {Promise<Response>}
 */
async function api(path, options = {}) {
  const headers = new Headers(options.headers);
  const token = currentToken();
  if (token) headers.set("Authorization", `Bearer ${token}`);
  /** @type {RequestInit} */
  const init = { method: options.method ?? "GET", headers, signal: options.signal, cache: "no-store" };
  if (options.body !== undefined) {
    headers.set("Content-Type", "application/json");
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch(path, init);
  if (response.ok) {
    clearAuthError();
    return response;
  }
  let code = `http_${response.status}`;
  let message = response.statusText || `HTTP ${response.status}`;
  try {
    const body = await response.json();
    if (body && typeof body.error === "string") message = body.error;
    if (body && typeof body.code === "string") code = body.code;
  } catch {
    // not JSON: keep the status text
  }
  if (response.status === 401) showAuthError(message);
  throw new ApiError(response.status, code, message);
}

/**
 * @typedef {{id: string | undefined, event: string, data: string}} SseMessage
 */

/**
 * Reads a `text/event-stream` body and calls `onMessage` for each complete message (spec parsing:
 * `data` lines joined with "\n", comments ignored, CR, LF and CRLF line ends). Resolves when the stream
 * ends; rejects when it fails or is aborted.
 * @param {ReadableStream<Uint8Array>} body
 * @param {(message: SseMessage) => void} onMessage
 */
async function readSse(body, onMessage) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  /** @type {string | undefined} */
  let id;
  let eventType = "";
  /** @type {string[]} */
  let dataLines = [];

  /** @param {string} line */
  const processLine = (line) => {
    if (line === "") {
      if (dataLines.length > 0) onMessage({ id, event: eventType || "message", data: dataLines.join("\n") });
      id = undefined;
      eventType = "";
      dataLines = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") dataLines.push(value);
    else if (field === "event") eventType = value;
    else if (field === "id" && !value.includes("\0")) id = value;
  };

  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (;;) {
        const match = /\r\n|\r|\n/.exec(buffer);
        if (!match) break;
        // a CR at the very end may be the first half of a CRLF split across chunks
        if (match[0] === "\r" && match.index === buffer.length - 1) break;
        processLine(buffer.slice(0, match.index));
        buffer = buffer.slice(match.index + match[0].length);
      }
    }
    buffer += decoder.decode();
    if (buffer !== "") processLine(buffer.replace(/\r$/, ""));
  } finally {
    reader.releaseLock();
  }
}

// ---------------------------------------------------------------------------------------------------
// Storage

/**
 * A setting from localStorage ("" when absent or when storage is unavailable).
 * @param {string} key
 */
function loadSetting(key) {
  try {
    return localStorage.getItem(key) ?? "";
  } catch {
    return "";
  }
}

/**
 * @param {string} key
 * @param {string} value
 */
function saveSetting(key, value) {
  try {
    localStorage.setItem(key, value);
  } catch {
    // storage disabled: the setting lasts until the page is closed
  }
}

/**
 * @param {Storage} storage
 * @param {string} key
 * @returns {any}
 */
function readJson(storage, key) {
  try {
    const text = storage.getItem(key);
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

/**
 * @param {Storage} storage
 * @param {string} key
 * @param {unknown} value
 */
function writeJson(storage, key, value) {
  try {
    if (value === null) storage.removeItem(key);
    else storage.setItem(key, JSON.stringify(value));
  } catch {
    // storage full or disabled: reattach after reload will not work, everything else does
  }
}

// ---------------------------------------------------------------------------------------------------
// A tool call's status line

class ToolLine {
  /**
   * @param {TurnView} turn
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

// ---------------------------------------------------------------------------------------------------
// A step-mode pause

class PauseCard {
  /**
   * @param {TurnView} turn
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

/** @param {unknown} error */
function describeError(error) {
  if (error instanceof ApiError) return `${error.message} (${error.status} ${error.code})`;
  if (error instanceof Error) return error.message;
  return String(error);
}

// ---------------------------------------------------------------------------------------------------
// One turn in the conversation

class TurnView {
  /**
   * @param {string} message the user's message
   * @param {{turnId?: string, sessionId?: string, reattached?: boolean}} [known]
   */
  constructor(message, known = {}) {
    /** @type {string | null} */
    this.turnId = known.turnId ?? null;
    /** @type {string | null} */
    this.sessionId = known.sessionId ?? null;
    this.message = message;
    /** @type {string | null} provider/model, from turn_start */
    this.provider = null;
    this.lastSeq = 0;
    this.finished = false;
    /** @type {Map<string, ToolLine>} */
    this.tools = new Map();
    /** @type {Map<string, PauseCard>} */
    this.pauses = new Map();
    /** @type {HTMLElement | null} the segment text/thinking deltas append to */
    this.openSegment = null;
    /** @type {"text" | "thinking" | "tools" | null} */
    this.openKind = null;
    this.controller = new AbortController();

    this.meta = element("div", { className: "turn-meta", testId: "turn-meta" });
    this.body = element("div", { className: "turn-body" });
    this.status = element("p", {
      className: "turn-status",
      testId: "turn-status",
      text: known.reattached ? "Reattaching…" : "Starting…",
      attributes: { role: "status" },
    });
    this.status.dataset.state = "running";
    this.element = element(
      "article",
      { className: "turn", testId: "turn" },
      element("div", { className: "user-message", testId: "user-message", text: message }),
      this.meta,
      this.body,
      this.status,
    );
    this.element.dataset.state = "running";
    if (known.turnId) this.element.dataset.turnId = known.turnId;
    this.reattached = Boolean(known.reattached);
    this.renderMeta();
  }

  renderMeta() {
    const parts = [this.turnId, this.provider, this.reattached ? "reattached after reload" : ""].filter(
      Boolean,
    );
    this.meta.textContent = parts.join(" · ");
  }

  /**
   * Applies one turn event. Events at or below the last seen seq are replays of what is already shown.
   * @param {any} event
   */
  apply(event) {
    if (typeof event.seq === "number") {
      if (event.seq <= this.lastSeq) return;
      this.lastSeq = event.seq;
    }
    if (typeof event.at === "number") observeServerTime(event.at);
    if (event.type !== "debugger.pause") for (const pause of this.pauses.values()) pause.passed();

    switch (event.type) {
      case "turn_start":
        this.turnId = event.turnId;
        this.sessionId = event.sessionId;
        this.provider = `${event.provider}/${event.model}`;
        this.element.dataset.turnId = event.turnId;
        this.renderMeta();
        this.setStatus("running", "Running…");
        onTurnStarted(this);
        break;
      case "text_delta":
        this.appendText("text", event.text);
        break;
      case "thinking_delta":
        this.appendText("thinking", event.text);
        break;
      case "tool_start": {
        const line = new ToolLine(this, event);
        this.tools.set(event.toolId, line);
        this.toolList().append(line.element);
        break;
      }
      case "tool_progress":
        this.tools.get(event.toolId)?.progress(event);
        break;
      case "tool_retry":
        this.tools.get(event.toolId)?.retry(event);
        break;
      case "tool_timeout":
        this.tools.get(event.toolId)?.timedOut(event);
        break;
      case "tool_result": {
        // a call closed before it started (abort in a pause, loop stop, skipped dependency) has no line yet
        let line = this.tools.get(event.toolId);
        if (!line) {
          line = new ToolLine(this, { ...event, input: undefined, timeoutMs: -1, idleTimeoutMs: 0 });
          this.tools.set(event.toolId, line);
          this.toolList().append(line.element);
        }
        line.finish(event);
        break;
      }
      case "debugger.pause": {
        const card = new PauseCard(this, event);
        this.pauses.set(event.pauseId, card);
        this.body.append(card.element);
        this.openSegment = null;
        this.openKind = null;
        break;
      }
      case "error":
        this.body.append(
          element("p", {
            className: "turn-error",
            testId: "turn-error",
            text: `Error (${event.code}): ${event.message}`,
            attributes: { role: "alert" },
          }),
        );
        this.openSegment = null;
        this.openKind = null;
        break;
      case "turn_complete": {
        const reason = event.stopReason === "end_turn" ? "" : ` · stop reason: ${event.stopReason}`;
        const calls = `${event.toolCallCount} tool ${event.toolCallCount === 1 ? "call" : "calls"}`;
        this.end("complete", `Turn complete${reason} · ${formatDuration(event.durationMs)} · ${calls}`);
        break;
      }
      case "turn_abort": {
        const text = ABORT_REASON_TEXT[/** @type {keyof typeof ABORT_REASON_TEXT} */ (event.reason)];
        this.element.dataset.abortReason = event.reason;
        this.end("aborted", `Turn aborted (${event.reason}): ${text ?? "no reason given"}`);
        break;
      }
      default:
        break; // an event type this page does not know yet
    }
  }

  /**
   * @param {"text" | "thinking"} kind
   * @param {string} text
   */
  appendText(kind, text) {
    if (this.openKind !== kind || !this.openSegment) {
      if (kind === "thinking") {
        const content = element("div", { className: "thinking-text" });
        const block = element(
          "details",
          { className: "thinking", testId: "thinking" },
          element("summary", { text: "Thinking" }),
          content,
        );
        /** @type {HTMLDetailsElement} */ (block).open = true;
        this.body.append(block);
        this.openSegment = content;
      } else {
        this.openSegment = element("div", { className: "assistant-text", testId: "assistant-text" });
        this.body.append(this.openSegment);
      }
      this.openKind = kind;
    }
    this.openSegment.append(text);
    scrollToEndIfFollowing();
  }

  /** The list tool lines go into: the open one, or a new one after the latest text. */
  toolList() {
    if (this.openKind !== "tools" || !this.openSegment) {
      this.openSegment = element("ol", { className: "tool-list", testId: "tool-list" });
      this.body.append(this.openSegment);
      this.openKind = "tools";
    }
    scrollToEndIfFollowing();
    return this.openSegment;
  }

  /** @param {string} text */
  note(text) {
    this.body.append(element("p", { className: "turn-note", testId: "turn-note", text }));
    this.openSegment = null;
    this.openKind = null;
  }

  /**
   * @param {string} state
   * @param {string} text
   */
  setStatus(state, text) {
    this.status.dataset.state = state;
    this.status.textContent = text;
  }

  /**
   * @param {"complete" | "aborted" | "failed"} state
   * @param {string} text
   */
  end(state, text) {
    this.finished = true;
    this.element.dataset.state = state;
    this.setStatus(state, text);
    for (const tool of this.tools.values()) tool.close();
    for (const pause of this.pauses.values()) pause.resolve("ended");
    scrollToEndIfFollowing();
  }

  tick() {
    for (const tool of this.tools.values()) if (tool.running) tool.render();
    for (const pause of this.pauses.values()) pause.render();
  }
}

// ---------------------------------------------------------------------------------------------------
// Page state and wiring

const log = byTestId("log");
const emptyHint = byTestId("empty-hint");
const composer = /** @type {HTMLFormElement} */ (byTestId("composer"));
const messageInput = /** @type {HTMLTextAreaElement} */ (byTestId("message-input"));
const sendButton = /** @type {HTMLButtonElement} */ (byTestId("send"));
const turnCancelButton = /** @type {HTMLButtonElement} */ (byTestId("turn-cancel"));
const stepModeInput = /** @type {HTMLInputElement} */ (byTestId("step-mode"));
const sessionLabel = byTestId("session-id");
const newSessionButton = /** @type {HTMLButtonElement} */ (byTestId("new-session"));
const connectionBanner = byTestId("connection");
const activeList = byTestId("active-list");
const activeCount = byTestId("active-count");
const activeEmpty = byTestId("active-empty");

/** @type {TurnView | null} the turn this page is streaming */
let current = null;
/** @type {TurnView[]} */
const views = [];
/** @type {string | null} */
let sessionId = null;

function scrollToEndIfFollowing() {
  const nearBottom = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 160;
  if (nearBottom) window.scrollTo({ top: document.documentElement.scrollHeight });
}

/** @param {string | null} id */
function setSession(id) {
  sessionId = id;
  writeJson(sessionStorage, STORAGE_KEYS.sessionId, id);
  sessionLabel.textContent = id ? `session ${id}` : "no session yet";
}

/** @param {string} text */
function showConnection(text) {
  connectionBanner.textContent = text;
  connectionBanner.hidden = text === "";
}

function updateControls() {
  const busy = current !== null && !current.finished;
  sendButton.disabled = busy;
  newSessionButton.disabled = busy;
  turnCancelButton.hidden = !busy;
  turnCancelButton.disabled = !busy || !current?.turnId;
  emptyHint.hidden = views.length > 0;
}

/** @param {TurnView} view */
function addView(view) {
  views.push(view);
  log.append(view.element);
  current = view;
  updateControls();
  scrollToEndIfFollowing();
}

/** @param {TurnView} view */
function onTurnStarted(view) {
  if (view.sessionId) setSession(view.sessionId);
  remember(view);
  updateControls();
  void refreshActive();
}

/**
 * Saves what a reload needs to reattach to `view`'s turn, or forgets it once the turn has ended.
 * @param {TurnView} view
 */
function remember(view) {
  if (!view.turnId) return;
  writeJson(
    sessionStorage,
    STORAGE_KEYS.turn,
    view.finished
      ? null
      : {
          turnId: view.turnId,
          sessionId: view.sessionId,
          lastSeq: view.lastSeq,
          message: view.message,
          // the replay after a reload is old news; the clock estimate from live events stays valid
          serverOffsetMs: Number.isFinite(serverOffsetMs) ? serverOffsetMs : null,
        },
  );
}

/**
 * Feeds an SSE response into a view until the stream ends.
 * @param {TurnView} view
 * @param {Response} response
 */
async function consume(view, response) {
  if (!response.body) throw new Error("the response has no body");
  await readSse(response.body, (message) => {
    if (message.event === "ping") return;
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    view.apply(event);
    remember(view);
    if (view.finished) {
      updateControls();
      void refreshActive();
    }
  });
}

/**
 * Follows `view`'s turn until it ends: after a dropped connection it reattaches with the last seq it
 * saw (`Last-Event-ID`), a few times, then gives up and says so.
 * @param {TurnView} view
 * @param {Response | null} firstResponse the POST's stream, or null to start from `/events`
 */
async function follow(view, firstResponse) {
  let response = firstResponse;
  let failures = 0;
  while (!view.finished) {
    const seqBefore = view.lastSeq;
    try {
      if (!response) {
        if (!view.turnId) throw new Error("the turn has no id yet");
        response = await api(`/api/turns/${encodeURIComponent(view.turnId)}/events`, {
          headers: { "Last-Event-ID": String(view.lastSeq), Accept: "text/event-stream" },
          signal: view.controller.signal,
        });
      }
      await consume(view, response);
    } catch (error) {
      if (view.controller.signal.aborted) return;
      if (error instanceof ApiError && error.status !== 503) {
        view.end("failed", `Lost the turn: ${describeError(error)}`);
        break;
      }
    }
    response = null;
    if (view.finished) break;
    // the stream broke or closed before the turn's terminal event
    failures = view.lastSeq > seqBefore ? 1 : failures + 1;
    if (failures > MAX_RECONNECT_ATTEMPTS || !view.turnId) {
      view.end("failed", "Lost the connection to the turn; it may still be running (see Active turns).");
      break;
    }
    showConnection("Connection to the turn lost; reattaching…");
    await new Promise((resolve) => setTimeout(resolve, RECONNECT_DELAY_MS));
  }
  showConnection("");
  remember(view);
  updateControls();
}

/** @param {string} message */
async function send(message) {
  const view = new TurnView(message);
  /** @type {{message: string, sessionId?: string, stepMode?: boolean}} */
  const body = { message };
  if (sessionId) body.sessionId = sessionId;
  // explicit either way: the box, not the session's last setting, decides for this turn
  body.stepMode = stepModeInput.checked;
  addView(view);
  let response;
  try {
    response = await api("/api/sessions/stream", {
      method: "POST",
      body,
      headers: { Accept: "text/event-stream" },
      signal: view.controller.signal,
    });
  } catch (error) {
    view.end("failed", `Not sent: ${describeError(error)}`);
    updateControls();
    return;
  }
  messageInput.value = "";
  await follow(view, response);
}

/** Rebuilds the view of the turn this tab was following before a reload, from its event log. */
function reattach() {
  const saved = readJson(sessionStorage, STORAGE_KEYS.turn);
  if (!saved || typeof saved.turnId !== "string") return;
  if (typeof saved.serverOffsetMs === "number") serverOffsetMs = saved.serverOffsetMs;
  const view = new TurnView(typeof saved.message === "string" ? saved.message : "", {
    turnId: saved.turnId,
    sessionId: typeof saved.sessionId === "string" ? saved.sessionId : undefined,
    reattached: true,
  });
  addView(view);
  // the DOM is gone, so replay from the start (lastSeq 0); later reconnects resume from lastSeq
  void follow(view, null);
}

async function cancelTurn() {
  if (!current?.turnId || current.finished) return;
  turnCancelButton.disabled = true;
  try {
    await api(`/api/turns/${encodeURIComponent(current.turnId)}/abort`, { method: "POST" });
  } catch (error) {
    current.note(`Could not stop the turn: ${describeError(error)}`);
    updateControls();
  }
}

/**
 * Remembers the step-mode box; during a turn also switches the session's step mode on the server
 * (switching it off releases a waiting pause at once).
 * @param {boolean} enabled
 */
async function switchStepMode(enabled) {
  saveSetting(STORAGE_KEYS.stepMode, String(enabled));
  const view = current;
  if (!view || view.finished || !view.sessionId) return;
  try {
    await api(`/api/sessions/${encodeURIComponent(view.sessionId)}/step-mode`, {
      method: "POST",
      body: { enabled },
    });
  } catch (error) {
    view.note(`Could not switch step mode: ${describeError(error)}`);
  }
}

// ---------------------------------------------------------------------------------------------------
// Active turns panel

/** @type {Map<string, {item: HTMLElement, text: HTMLElement, tools: HTMLElement, button: HTMLButtonElement}>} */
const activeItems = new Map();

/**
 * @param {string} turnId
 */
function activeItem(turnId) {
  const existing = activeItems.get(turnId);
  if (existing) return existing;
  const text = element("span", { className: "active-text", testId: "active-turn-text" });
  const tools = element("span", { className: "active-tools", testId: "active-turn-tools" });
  const button = /** @type {HTMLButtonElement} */ (
    element("button", {
      className: "small danger",
      testId: "active-turn-abort",
      text: "Abort",
      attributes: { type: "button", "aria-label": `Abort turn ${turnId}` },
    })
  );
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await api(`/api/turns/${encodeURIComponent(turnId)}/abort`, { method: "POST" });
      void refreshActive();
    } catch (error) {
      button.disabled = false;
      showConnection(`Could not abort ${turnId}: ${describeError(error)}`);
    }
  });
  const item = element(
    "li",
    { className: "active-turn", testId: "active-turn", attributes: { "data-turn-id": turnId } },
    element("code", { className: "active-id", text: turnId }),
    text,
    tools,
    button,
  );
  const entry = { item, text, tools, button };
  activeItems.set(turnId, entry);
  activeList.append(item);
  return entry;
}

/** @param {any} body the `/api/turns/active` response */
function renderActive(body) {
  const turns = Array.isArray(body?.turns) ? body.turns : [];
  const seen = new Set();
  for (const turn of turns) {
    seen.add(turn.turnId);
    const entry = activeItem(turn.turnId);
    const age = formatDuration(serverNow() - turn.startedAt);
    const paused = turn.pause || turn.paused ? " · paused" : "";
    const mine = current && current.turnId === turn.turnId ? " · this page" : "";
    const child = turn.parentTurnId ? ` · child of ${turn.parentTurnId}` : "";
    entry.text.textContent = `${turn.agentId} · ${age} · ${turn.toolCallCount} tool calls${paused}${mine}${child}`;
    const running = Array.isArray(turn.runningTools) ? turn.runningTools : [];
    entry.tools.textContent = running
      .map((/** @type {any} */ tool) => `${tool.toolName} ${formatDuration(tool.elapsedMs)}`)
      .join(", ");
    entry.item.dataset.paused = String(Boolean(turn.pause || turn.paused));
    // a fresh reading of the tools this page is showing
    if (current && current.turnId === turn.turnId) {
      for (const tool of running) current.tools.get(tool.toolId)?.correctNow(tool.elapsedMs);
    }
  }
  for (const [turnId, entry] of activeItems) {
    if (!seen.has(turnId)) {
      entry.item.remove();
      activeItems.delete(turnId);
    }
  }
  const zombies = Array.isArray(body?.zombies) ? body.zombies.length : 0;
  activeCount.textContent = String(turns.length);
  activeEmpty.textContent =
    zombies > 0 ? `No turn is running; ${zombies} zombie tool(s) still settling.` : "No turn is running.";
  activeEmpty.hidden = turns.length > 0;
}

let activeRequests = 0;
let activeRendered = 0;

/**
 * Fetches `/api/turns/active` once and renders it (unless a later request already rendered); a 401
 * shows its banner, other failures wait for the next poll.
 */
async function refreshActive() {
  const request = ++activeRequests;
  try {
    const response = await api("/api/turns/active");
    const body = await response.json();
    if (request < activeRendered) return;
    activeRendered = request;
    renderActive(body);
  } catch {
    // shown by the banner (401), or retried at the next poll
  }
}

/** Polls the active turns every ACTIVE_POLL_INTERVAL_MS, never two requests at once. */
async function pollActive() {
  await refreshActive();
  setTimeout(() => void pollActive(), ACTIVE_POLL_INTERVAL_MS);
}

// ---------------------------------------------------------------------------------------------------
// Start-up

function start() {
  tokenInput.value = loadSetting(STORAGE_KEYS.token);
  stepModeInput.checked = loadSetting(STORAGE_KEYS.stepMode) === "true";
  const savedSession = readJson(sessionStorage, STORAGE_KEYS.sessionId);
  setSession(typeof savedSession === "string" ? savedSession : null);

  tokenInput.addEventListener("input", () => saveSetting(STORAGE_KEYS.token, currentToken()));
  byTestId("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    saveSetting(STORAGE_KEYS.token, currentToken());
    clearAuthError();
    settings.open = false;
    void refreshActive();
  });
  stepModeInput.addEventListener("change", () => void switchStepMode(stepModeInput.checked));
  composer.addEventListener("submit", (event) => {
    event.preventDefault();
    const message = messageInput.value;
    if (message.trim() === "" || (current && !current.finished)) return;
    void send(message);
  });
  messageInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      composer.requestSubmit();
    }
  });
  turnCancelButton.addEventListener("click", () => void cancelTurn());
  newSessionButton.addEventListener("click", () => {
    setSession(null);
    messageInput.focus();
  });

  setInterval(() => {
    for (const view of views) if (!view.finished) view.tick();
  }, TICK_INTERVAL_MS);
  void pollActive();
  reattach();
  updateControls();
}

start();
