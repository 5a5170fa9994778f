// @ts-check
/**
 * One turn in the conversation, an `<article>`: the user's message, the turn's id and model, and every
 * turn event in order — text deltas into a text block, thinking into a collapsible block, tool calls
 * into lists of status lines, pauses, approval cards, model retries (a quiet note), errors — and the terminal event in
 * its status line, with the turn's token usage. Assistant text is rendered as sanitised markdown
 * (markdown.js); a finished turn can also be rebuilt from the session's stored history (`showHistory`).
 */
import { element, scrollToEndIfFollowing } from "./dom.js";
import { formatDuration, formatUsage } from "./format.js";
import { renderMarkdown } from "./markdown.js";
import { ApprovalCard } from "./approval-card.js";
import { PauseCard } from "./pause-card.js";
import { observeServerTime } from "./server-clock.js";
import { ToolLine } from "./tool-line.js";

/** Plain words for each `turn_abort` reason. */
const ABORT_REASON_TEXT = {
  user: "stopped by a user",
  timeout: "the turn ran past its time limit",
  error: "an error ended the turn",
  disconnect: "its client disconnected",
  shutdown: "the server is shutting down",
  parent: "its parent turn stopped waiting for it",
  loop: "the loop detector stopped a repeating tool call",
  interrupted: "the server restarted while it ran",
  limit: "it wrote as many events as one turn may",
};

/**
 * Whether an event shows the turn went on past its pauses: not another pause, and not the closing
 * of a turn stopped in one (an abort's cancelled results, its end), after which the card says
 * "ended", not "continued".
 * @param {{ type: string, status?: string }} event
 */
function movesOn(event) {
  if (event.type === "debugger.pause" || event.type === "turn_abort") return false;
  return !(event.type === "tool_result" && event.status === "cancelled");
}

/** Shown for a redacted thinking block, whose content only its provider can read. */
const REDACTED_THINKING_TEXT = "[redacted thinking]";

export class TurnView {
  /**
   * @param {string} message the user's message
   * @param {(view: TurnView) => void} onStarted called when `turn_start` gives the turn its id and session
   * @param {{turnId?: string, sessionId?: string, reattached?: boolean}} [known]
   */
  constructor(message, onStarted, known = {}) {
    this.onStarted = onStarted;
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
    /** @type {Map<string, ApprovalCard>} by toolId */
    this.approvals = new Map();
    /** @type {HTMLElement | null} the segment text/thinking deltas append to */
    this.openSegment = null;
    /** @type {"text" | "thinking" | "tools" | null} */
    this.openKind = null;
    /** The markdown source of the open text segment (re-rendered on each delta). */
    this.openText = "";
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
    const parts = [this.turnId, this.provider, this.reattached ? "reattached" : ""].filter(Boolean);
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
    if (movesOn(event)) for (const pause of this.pauses.values()) pause.passed();

    switch (event.type) {
      case "turn_start":
        this.turnId = event.turnId;
        this.sessionId = event.sessionId;
        this.provider = `${event.provider}/${event.model}`;
        this.element.dataset.turnId = event.turnId;
        this.renderMeta();
        this.setStatus("running", "Running…");
        this.onStarted(this);
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
        // a delegated turn's call whose approval request this turn showed ended undecided: its card closes
        if (event.childTurnId !== undefined) {
          this.approvals.get(event.toolId)?.resolve(event.status);
          break;
        }
        // a call closed before it started (abort in a pause, loop stop, skipped dependency) has no line yet
        let line = this.tools.get(event.toolId);
        if (!line) {
          line = new ToolLine(this, { ...event, input: undefined, timeoutMs: -1, idleTimeoutMs: 0 });
          this.tools.set(event.toolId, line);
          this.toolList().append(line.element);
        }
        line.finish(event);
        // a waiting call closed without a decision (abort, cancel, deadline)
        this.approvals.get(event.toolId)?.resolve(event.status);
        break;
      }
      case "tool_approval_request": {
        const card = new ApprovalCard(this, event);
        this.approvals.set(event.toolId, card);
        this.body.append(card.element);
        this.openSegment = null;
        this.openKind = null;
        scrollToEndIfFollowing();
        break;
      }
      case "tool_approval":
        this.approvals.get(event.toolId)?.decided(event);
        break;
      case "debugger.pause": {
        const card = new PauseCard(this, event);
        this.pauses.set(event.pauseId, card);
        this.body.append(card.element);
        this.openSegment = null;
        this.openKind = null;
        break;
      }
      case "model_retry":
        // the turn goes on and usually succeeds: a quiet line, not an alert
        this.body.append(
          element("p", {
            className: "turn-note",
            testId: "model-retry",
            text: `${event.provider} failed (${event.error}); retrying in ${formatDuration(event.delayMs)}, attempt ${event.attempt}`,
          }),
        );
        this.openSegment = null;
        this.openKind = null;
        break;
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
        const usage = formatUsage(event.usage);
        this.end(
          "complete",
          `Turn complete${reason} · ${formatDuration(event.durationMs)} · ${calls}${usage ? ` · ${usage}` : ""}`,
        );
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
      this.openText = "";
    }
    if (kind === "text") {
      this.openText += text;
      renderMarkdown(this.openSegment, this.openText);
    } else {
      this.openSegment.append(text);
    }
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
    for (const approval of this.approvals.values()) approval.resolve("ended");
    scrollToEndIfFollowing();
  }

  /**
   * Rebuilds a finished turn from the session's canonical history: its blocks (user text is the
   * article's message; assistant text, thinking, and tool calls with their responses) and its record
   * (status, stop or abort reason, token usage).
   * @param {any} record a turn of `GET /api/sessions/:id/history`
   * @param {any[]} blocks that turn's blocks, in order
   */
  showHistory(record, blocks) {
    this.provider = `${record.provider}/${record.model}`;
    this.renderMeta();
    for (const block of blocks) {
      if (block.kind === "text" && block.role === "assistant") this.appendText("text", block.text);
      else if (block.kind === "thinking") {
        // each stored block on lines of its own; a redacted one has no text to show
        if (this.openKind === "thinking") this.appendText("thinking", "\n\n");
        this.appendText("thinking", block.redacted === undefined ? block.text : REDACTED_THINKING_TEXT);
      } else if (block.kind === "tool_call") {
        const line = new ToolLine(this, {
          toolId: block.callId,
          toolName: block.name,
          input: block.input,
          timeoutMs: 0,
          idleTimeoutMs: 0,
          at: block.createdAt,
        });
        line.element.querySelector('[data-testid="tool-limits"]')?.replaceChildren("from history");
        this.tools.set(block.callId, line);
        this.toolList().append(line.element);
      } else if (block.kind === "tool_response") {
        const line = this.tools.get(block.callId);
        const started = blocks.find((other) => other.kind === "tool_call" && other.callId === block.callId);
        line?.finish({
          status: block.status,
          result: block.result,
          durationMs: started ? block.createdAt - started.createdAt : 0,
          attempts: 1,
          isError: block.isError,
        });
      }
    }
    const usage = formatUsage(record.usage);
    const duration = record.endedAt ? ` · ${formatDuration(record.endedAt - record.startedAt)}` : "";
    const calls = `${record.toolCallCount} tool ${record.toolCallCount === 1 ? "call" : "calls"}`;
    if (record.status === "completed") {
      const reason =
        record.stopReason && record.stopReason !== "end_turn" ? ` · stop reason: ${record.stopReason}` : "";
      this.end("complete", `Turn complete${reason}${duration} · ${calls}${usage ? ` · ${usage}` : ""}`);
    } else {
      const reason = record.abortReason ?? record.status;
      const text = ABORT_REASON_TEXT[/** @type {keyof typeof ABORT_REASON_TEXT} */ (reason)];
      this.element.dataset.abortReason = reason;
      this.end("aborted", `Turn aborted (${reason}): ${text ?? "no reason given"}`);
    }
  }

  tick() {
    for (const tool of this.tools.values()) if (tool.running) tool.render();
    for (const pause of this.pauses.values()) pause.render();
    for (const approval of this.approvals.values()) approval.render();
  }
}
