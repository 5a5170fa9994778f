/**
 * Tool approval end to end (docs/semantics.md#approval): the real server on a real socket, configured with an
 * agent whose `echo` calls need approval, driven over HTTP and followed with a real SSE parser —
 * approve, edit (an invalid edit is a 400 naming the field and the call keeps waiting), reject with a
 * reason, another principal's 404, 409 when nothing waits, the pending list of `/api/turns/active`,
 * and the APPROVAL_TIMEOUT_MS rejection on the real clock.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnEvent } from "../../src/events.js";
import { startServer, type ServerHandle } from "../helpers/server.js";
import { SseStream, sessionIdOf, turnIdOf } from "../helpers/sse.js";

const ALICE = "alice-token-0001";
const BOB = "bob-token-000002";
/**
 * The approval timeout of the server whose test lets a request run out; the other tests' server waits
 * a minute, so that no decision they make, however slowly a busy machine sends it, comes too late.
 */
const APPROVAL_TIMEOUT_MS = 1_500;
const PATIENT_APPROVAL_TIMEOUT_MS = 60_000;

const headersOf = (token: string) => ({
  "content-type": "application/json",
  authorization: `Bearer ${token}`,
});

describe("POST /api/turns/:id/tools/:toolId/approval", () => {
  let server: ServerHandle;
  let impatient: ServerHandle;
  let configDir: string;

  beforeAll(async () => {
    configDir = mkdtempSync(join(tmpdir(), "reins-approval-"));
    const configFile = join(configDir, "config.json");
    writeFileSync(
      configFile,
      JSON.stringify({
        agents: { careful: { tools: ["*"], approval: { echo: "always", sleep: "always", "*": "never" } } },
        defaultAgent: "careful",
        // flaky's fallback is echo, a tool whose calls need approval
        tools: { overrides: { flaky: { fallback: "echo" } } },
      }),
    );
    const start = (approvalTimeoutMs: number) =>
      startServer({
        env: {
          CONFIG_FILE: configFile,
          AUTH_TOKENS: `alice:${ALICE},bob:${BOB}`,
          APPROVAL_TIMEOUT_MS: String(approvalTimeoutMs),
        },
      });
    [server, impatient] = await Promise.all([start(PATIENT_APPROVAL_TIMEOUT_MS), start(APPROVAL_TIMEOUT_MS)]);
  });
  afterAll(async () => {
    await Promise.all([server?.stop(), impatient?.stop()]);
    server?.cleanup();
    impatient?.cleanup();
    rmSync(configDir, { recursive: true, force: true });
  });

  /**
   * Starts a turn as `token` on `on` (default: the patient server) and waits for its echo call's
   * approval request.
   */
  async function waitingTurn(message: string, token = ALICE, on = server) {
    const stream = await SseStream.open(`${on.baseUrl}/api/sessions/stream`, {
      method: "POST",
      headers: headersOf(token),
      body: JSON.stringify({ message, agentId: "careful" }),
    });
    const request = await stream.next((event) => event.type === "tool_approval_request");
    if (request.type !== "tool_approval_request") throw new Error("no approval request");
    return { stream, turnId: turnIdOf(stream), request };
  }

  /** Decides on the patient server (the impatient one's only test lets its request run out). */
  function decide(turnId: string, toolId: string, body: unknown, token = ALICE) {
    return fetch(`${server.baseUrl}/api/turns/${turnId}/tools/${toolId}/approval`, {
      method: "POST",
      headers: headersOf(token),
      body: JSON.stringify(body),
    });
  }

  /** POSTs an abort as alice: `path` is a turn's, or one of its calls' (`…/tools/:toolId`). */
  const abort = (path: string) =>
    fetch(`${server.baseUrl}/api/turns/${path}/abort`, { method: "POST", headers: headersOf(ALICE) });

  const ofTool = (events: TurnEvent[], toolId: string) =>
    events.filter((event) => "toolId" in event && event.toolId === toolId);

  /** The request a parent's stream showed, then the result that closed it undecided. */
  const closedUndecided = (request: TurnEvent & { childTurnId?: string }) => [
    request,
    expect.objectContaining({ type: "tool_result", status: "cancelled", childTurnId: request.childTurnId }),
  ];

  it("approve: the call runs, and /api/turns/active listed it while it waited", async () => {
    const { stream, turnId, request } = await waitingTurn('/tool echo {"text":"hello"}');
    expect(request).toMatchObject({ toolName: "echo", input: { text: "hello" } });

    const active = (await (
      await fetch(`${server.baseUrl}/api/turns/active`, { headers: headersOf(ALICE) })
    ).json()) as { turns: { turnId: string; pendingApprovals: unknown[] }[] };
    expect(active.turns.find((turn) => turn.turnId === turnId)?.pendingApprovals).toEqual([
      {
        toolId: request.toolId,
        toolName: "echo",
        input: { text: "hello" },
        requestedAt: expect.any(Number),
        deadlineMs: request.deadlineMs,
      },
    ]);
    // bob sees none of alice's turns
    const bobs = (await (
      await fetch(`${server.baseUrl}/api/turns/active`, { headers: headersOf(BOB) })
    ).json()) as { turns: unknown[] };
    expect(bobs.turns).toEqual([]);

    const response = await decide(turnId, request.toolId, { decision: "approve" });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ ok: true, toolId: request.toolId, decision: "approve" });
    const events = await stream.untilEnd();
    expect(ofTool(events, request.toolId).map((event) => event.type)).toEqual([
      "tool_approval_request",
      "tool_approval",
      "tool_start",
      "tool_result",
    ]);
    expect(ofTool(events, request.toolId).at(-1)).toMatchObject({ status: "complete", result: "hello" });

    // decided already: 409, for the same lookups as any call that is not waiting
    const again = await decide(turnId, request.toolId, { decision: "approve" });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ code: "not_waiting" });
  });

  it("edit: an invalid input is a 400 naming the field and the call keeps waiting; a valid one runs", async () => {
    const { stream, turnId, request } = await waitingTurn('/tool echo {"text":"from the model"}');
    const invalid = await decide(turnId, request.toolId, { decision: "approve", input: { text: 7 } });
    expect(invalid.status).toBe(400);
    const problem = (await invalid.json()) as { code: string; error: string };
    expect(problem.code).toBe("invalid_input");
    expect(problem.error).toContain("input.text");
    expect(ofTool(stream.events, request.toolId).map((event) => event.type)).toEqual([
      "tool_approval_request",
    ]);

    const body = { decision: "approve", input: { text: "from a person" } };
    expect((await decide(turnId, request.toolId, body)).status).toBe(200);
    const events = await stream.untilEnd();
    expect(ofTool(events, request.toolId).find((event) => event.type === "tool_approval")).toMatchObject({
      decision: "approve",
      edited: true,
    });
    expect(ofTool(events, request.toolId).find((event) => event.type === "tool_start")).toMatchObject({
      input: { text: "from a person" },
    });
    expect(ofTool(events, request.toolId).at(-1)).toMatchObject({
      status: "complete",
      result: expect.stringMatching(/^\[EDITED\] .*"from a person".*\n\nfrom a person$/s),
    });
  });

  it("edit: a call that ran with an edited input says so even when an abort closes it", async () => {
    const { stream, turnId, request } = await waitingTurn('/tool sleep {"ms":10}');
    const body = { decision: "approve", input: { ms: 60_000 } };
    expect((await decide(turnId, request.toolId, body)).status).toBe(200);
    await stream.next((event) => event.type === "tool_start");
    expect((await abort(turnId)).status).toBe(200);
    const events = await stream.untilEnd();
    const closing = ofTool(events, request.toolId).at(-1);
    expect(closing).toMatchObject({
      type: "tool_result",
      status: "cancelled",
      result: expect.stringMatching(/^\[EDITED\] .*"ms":60000.*\n\n\[CANCELLED\] /s),
    });
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "user" });
    // history holds the same result the stream sent
    const history = (await (
      await fetch(`${server.baseUrl}/api/sessions/${sessionIdOf(stream)}/history`, {
        headers: headersOf(ALICE),
      })
    ).json()) as { blocks: { kind: string; callId?: string; result?: string }[] };
    const stored = history.blocks.find(
      (block) => block.kind === "tool_response" && block.callId === request.toolId,
    );
    expect(stored?.result).toBe(closing?.type === "tool_result" ? closing.result : undefined);
  });

  it("a delegated turn's call that waits for approval shows on the parent's stream and is decided there", async () => {
    const delegation = { agentId: "careful", message: '/tool echo {"text":"from the child"}' };
    const { stream, turnId, request } = await waitingTurn(`/tool delegate ${JSON.stringify(delegation)}`);
    expect(request).toMatchObject({ toolName: "echo", input: { text: "from the child" } });
    expect(request.childTurnId).toMatch(/^turn_/);
    expect(request.childTurnId).not.toBe(turnId);
    expect((await decide(turnId, request.toolId, { decision: "approve" })).status).toBe(200);

    const events = await stream.untilEnd();
    expect(ofTool(events, request.toolId)).toEqual([
      request,
      expect.objectContaining({
        type: "tool_approval",
        decision: "approve",
        childTurnId: request.childTurnId,
      }),
    ]);
    const delegated = events.find((event) => event.type === "tool_result");
    expect(delegated).toMatchObject({ toolName: "delegate", status: "complete" });
    expect(delegated?.type === "tool_result" && delegated.result).toContain("from the child");
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
  });

  it("a delegated turn's request that ends undecided is closed on the parent's stream too", async () => {
    const delegation = { agentId: "careful", message: '/tool echo {"text":"never decided"}' };
    const { stream, turnId, request } = await waitingTurn(`/tool delegate ${JSON.stringify(delegation)}`);
    const delegateCall = stream.events.find((event) => event.type === "tool_start");
    expect(delegateCall).toMatchObject({ toolName: "delegate" });
    // cancelling the delegate call ends the child turn, and with it the call waiting there
    expect((await abort(`${turnId}/tools/${delegateCall?.toolId}`)).status).toBe(200);
    const events = await stream.untilEnd();
    expect(ofTool(events, request.toolId)).toEqual(closedUndecided(request));
    expect(ofTool(events, delegateCall?.toolId ?? "").at(-1)).toMatchObject({
      type: "tool_result",
      status: "cancelled",
    });
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
  });

  it("a grandchild's request shows on the root's stream and is closed there when the middle turn is aborted", async () => {
    const leaf = { agentId: "careful", message: '/tool echo {"text":"two levels down"}' };
    const middle = { agentId: "careful", message: `/tool delegate ${JSON.stringify(leaf)}` };
    const { stream, turnId, request } = await waitingTurn(`/tool delegate ${JSON.stringify(middle)}`);
    expect(request).toMatchObject({ toolName: "echo", input: { text: "two levels down" } });
    const active = (await (
      await fetch(`${server.baseUrl}/api/turns/active`, { headers: headersOf(ALICE) })
    ).json()) as {
      turns: { turnId: string; parentTurnId: string | null }[];
    };
    const middleTurn = active.turns.find((turn) => turn.parentTurnId === turnId);
    expect(middleTurn).toBeDefined();
    expect(request.childTurnId).not.toBe(middleTurn?.turnId);
    expect((await abort(`${middleTurn?.turnId}`)).status).toBe(200);
    const events = await stream.untilEnd();
    expect(ofTool(events, request.toolId)).toEqual(closedUndecided(request));
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
  });

  it("a child's request is closed on the parent's stream, before its turn_abort, when the parent itself is aborted", async () => {
    const child = { agentId: "careful", message: '/tool echo {"text":"from the child"}' };
    const { stream, turnId, request } = await waitingTurn(`/tool delegate ${JSON.stringify(child)}`);
    expect(request.childTurnId).toMatch(/^turn_/);
    expect((await abort(turnId)).status).toBe(200);
    const events = await stream.untilEnd();
    expect(ofTool(events, request.toolId)).toEqual(closedUndecided(request));
    expect(events.at(-1)).toMatchObject({ type: "turn_abort", reason: "user" });
  });

  it("reject with a reason: [REJECTED] result, status rejected, and the model answers with it", async () => {
    const { stream, turnId, request } = await waitingTurn('/tool echo {"text":"x"}');
    const response = await decide(turnId, request.toolId, { decision: "reject", reason: "not on a Friday" });
    expect(response.status).toBe(200);
    const events = await stream.untilEnd();
    expect(ofTool(events, request.toolId).at(-1)).toMatchObject({
      type: "tool_result",
      status: "rejected",
      result: "[REJECTED] not on a Friday",
    });
    const text = events.flatMap((event) => (event.type === "text_delta" ? [event.text] : [])).join("");
    expect(text).toContain("[REJECTED] not on a Friday");
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
  });

  it("another principal gets 404 like an unknown turn; the call keeps waiting", async () => {
    const { stream, turnId, request } = await waitingTurn('/tool echo {"text":"x"}');
    const bobs = await decide(turnId, request.toolId, { decision: "approve" }, BOB);
    const unknown = await decide("turn_unknown", request.toolId, { decision: "approve" }, BOB);
    expect(bobs.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(await bobs.json()).toEqual(await unknown.json());
    expect(ofTool(stream.events, request.toolId).map((event) => event.type)).toEqual([
      "tool_approval_request",
    ]);

    // an unknown call of alice's own turn is not waiting: 409
    const notWaiting = await decide(turnId, "call_unknown", { decision: "approve" });
    expect(notWaiting.status).toBe(409);
    // and a body that is not a decision is a 400 naming the field
    const badBody = await decide(turnId, request.toolId, { decision: "maybe" });
    expect(badBody.status).toBe(400);
    expect(((await badBody.json()) as { error: string }).error).toContain("body.decision");

    expect((await decide(turnId, request.toolId, { decision: "reject" })).status).toBe(200);
    await stream.untilEnd();
  });

  it("a tool whose calls need approval is never run as another tool's fallback", async () => {
    const stream = await SseStream.open(`${server.baseUrl}/api/sessions/stream`, {
      method: "POST",
      headers: headersOf(ALICE),
      body: JSON.stringify({
        message: '/tool flaky {"failures":1,"kind":"permanent","text":"ran without approval"}',
        agentId: "careful",
      }),
    });
    const events = await stream.untilEnd();
    expect(events.map((event) => event.type)).not.toContain("tool_approval_request");
    const result = events.find((event) => event.type === "tool_result");
    expect(result).toMatchObject({ toolName: "flaky", status: "error" });
    if (result?.type !== "tool_result") throw new Error("no tool_result");
    expect(result.result).not.toContain("ran without approval");
    expect(result.result).not.toContain("[FALLBACK]");
    expect(events.at(-1)).toMatchObject({ type: "turn_complete" });
  });

  it("no decision by APPROVAL_TIMEOUT_MS: rejected with `approval timed out`", async () => {
    const { stream, request } = await waitingTurn('/tool echo {"text":"x"}', ALICE, impatient);
    const events = await stream.untilEnd(APPROVAL_TIMEOUT_MS + 20_000);
    expect(ofTool(events, request.toolId).map((event) => event.type)).toEqual([
      "tool_approval_request",
      "tool_approval",
      "tool_result",
    ]);
    expect(ofTool(events, request.toolId).at(-1)).toMatchObject({
      status: "rejected",
      result: "[REJECTED] approval timed out",
    });
    // the deadline is set as the call starts waiting; the event is stamped just after (real clock)
    expect(request.deadlineMs - request.at).toBeLessThanOrEqual(APPROVAL_TIMEOUT_MS);
    expect(request.deadlineMs - request.at).toBeGreaterThan(APPROVAL_TIMEOUT_MS - 100);
  });
});
