// @ts-check
/**
 * A tool call waiting for a person's approval (`tool_approval_request`, docs/semantics.md#approval): the
 * tool, its input as JSON (editable after Edit), a countdown to its deadline, and Approve, Edit and Reject
 * (with an optional reason) — `POST /api/turns/:id/tools/:toolId/approval`. The card resolves when
 * `tool_approval` arrives (or the call ends some other way), so it also comes out right when the turn's
 * events are replayed after a reload.
 */
import { api, describeError } from "./api-client.js";
import { element } from "./dom.js";
import { serverNow } from "./server-clock.js";

export class ApprovalCard {
  /**
   * @param {import("./turn-view.js").TurnView} turn
   * @param {{toolId: string, toolName: string, input: unknown, deadlineMs: number}} request
   */
  constructor(turn, request) {
    this.turn = turn;
    this.toolId = request.toolId;
    this.open = true;
    this.editing = false;
    this.deadlineLocalMs = performance.now() + (request.deadlineMs - serverNow());

    this.stateText = element("span", {
      className: "approval-state",
      testId: "approval-state",
      text: "waiting",
    });
    this.countdown = element("span", { className: "approval-countdown", testId: "approval-countdown" });
    this.input = /** @type {HTMLTextAreaElement} */ (
      element("textarea", {
        className: "approval-input",
        testId: "approval-input",
        attributes: { "aria-label": `Input of ${request.toolName}`, rows: "4", spellcheck: "false" },
      })
    );
    this.input.value = JSON.stringify(request.input ?? {}, null, 2);
    this.input.readOnly = true;
    this.reason = /** @type {HTMLInputElement} */ (
      element("input", {
        className: "approval-reason",
        testId: "approval-reason",
        attributes: { type: "text", placeholder: "Reason (optional)", "aria-label": "Reason for rejecting" },
      })
    );
    this.error = element("p", { className: "approval-error", testId: "approval-error" });
    this.approveButton = this.button("Approve", "approval-approve", "primary", () => void this.approve());
    this.editButton = this.button("Edit", "approval-edit", "", () => this.edit());
    this.rejectButton = this.button("Reject", "approval-reject", "danger", () => void this.reject());
    this.actions = element(
      "div",
      { className: "approval-actions" },
      this.approveButton,
      this.editButton,
      this.reason,
      this.rejectButton,
    );

    this.element = element(
      "section",
      {
        className: "approval",
        testId: "approval",
        attributes: { "data-tool-id": request.toolId, "aria-label": `Approval of ${request.toolName}` },
      },
      element(
        "div",
        { className: "approval-head" },
        element("strong", { text: `Approve ${request.toolName}?` }),
        this.stateText,
        this.countdown,
      ),
      this.input,
      this.actions,
      this.error,
    );
    this.element.dataset.state = "waiting";
    this.render();
  }

  /**
   * @param {string} text
   * @param {string} testId
   * @param {string} kind
   * @param {() => void} onClick
   */
  button(text, testId, kind, onClick) {
    const button = element("button", {
      className: `small ${kind}`.trim(),
      testId,
      text,
      attributes: { type: "button" },
    });
    button.addEventListener("click", onClick);
    return /** @type {HTMLButtonElement} */ (button);
  }

  render() {
    if (!this.open) return;
    const remainingMs = this.deadlineLocalMs - performance.now();
    this.countdown.textContent =
      remainingMs > 0 ? `rejected in ${Math.ceil(remainingMs / 1000)} s without a decision` : "timing out…";
  }

  /** Edit mode: the input becomes editable; Approve then sends it. */
  edit() {
    if (!this.open) return;
    this.editing = true;
    this.input.readOnly = false;
    this.element.dataset.editing = "true";
    this.editButton.disabled = true;
    this.approveButton.textContent = "Approve edited input";
    this.input.focus();
  }

  async approve() {
    /** @type {{decision: "approve", input?: unknown}} */
    const body = { decision: "approve" };
    if (this.editing) {
      try {
        body.input = JSON.parse(this.input.value);
      } catch (error) {
        this.error.textContent = `The input is not valid JSON: ${describeError(error)}`;
        return;
      }
    }
    await this.send(body);
  }

  async reject() {
    const reason = this.reason.value.trim();
    await this.send(reason ? { decision: "reject", reason } : { decision: "reject" });
  }

  /** @param {Record<string, unknown>} body */
  async send(body) {
    if (!this.open || !this.turn.turnId) return;
    const buttons = [this.approveButton, this.editButton, this.rejectButton];
    const wasDisabled = buttons.map((button) => button.disabled);
    for (const button of buttons) button.disabled = true;
    this.error.textContent = "";
    try {
      await api(
        `/api/turns/${encodeURIComponent(this.turn.turnId)}/tools/${encodeURIComponent(this.toolId)}/approval`,
        { method: "POST", body },
      );
      // the card resolves when tool_approval arrives on the stream
    } catch (error) {
      buttons.forEach((button, index) => (button.disabled = wasDisabled[index] ?? false));
      this.error.textContent = `Could not send the decision: ${describeError(error)}`;
    }
  }

  /** @param {{decision: string, edited: boolean, reason?: string}} decision */
  decided(decision) {
    if (decision.decision === "approve") this.resolve(decision.edited ? "approved with edits" : "approved");
    else this.resolve(`rejected: ${decision.reason ?? "no reason given"}`, "rejected");
  }

  /**
   * @param {string} text
   * @param {string} [state]
   */
  resolve(text, state = text) {
    if (!this.open) return;
    this.open = false;
    this.element.dataset.state = state.startsWith("approved") ? "approved" : state;
    this.stateText.textContent = text;
    this.countdown.textContent = "";
    this.input.readOnly = true;
    this.actions.remove();
  }
}
