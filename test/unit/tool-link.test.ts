/**
 * A tool's context (src/tools/tool-link.ts): its live parts — services and heartbeat — go through the
 * link, so they go quiet once the link is cut, and nothing among the facts can stand in for them.
 */
import { describe, expect, it, vi } from "vitest";
import {
  linkedContext,
  type ContextFacts,
  type LinkedAttempt,
  type ToolLink,
} from "../../src/tools/tool-link.js";
import type { ToolServices } from "../../src/tools/types.js";

const facts: ContextFacts = {
  turnId: "turn_1",
  sessionId: "ses_1",
  agentId: "default",
  callId: "call_1",
  toolName: "echo",
  workspace: undefined,
  allowedRoots: ["/tmp"],
  depth: 0,
  controller: new AbortController(),
};

const services = { sessionStatus: () => ({}) } as unknown as ToolServices;

/** An attempt at the other end of a link, open, with `heartbeat` as its heartbeat. */
function attemptWith(heartbeat: (message?: string) => void): LinkedAttempt {
  return { open: true, onValue: () => {}, onError: () => {}, heartbeat };
}

describe("linkedContext", () => {
  it("carries the facts and reaches services and heartbeat through the link until it is cut", () => {
    const heartbeat = vi.fn();
    const link: ToolLink = { running: true, zombie: false, services, attempt: attemptWith(heartbeat) };
    const context = linkedContext(facts, link);
    const { controller, ...plain } = facts;
    expect(context).toMatchObject(plain);
    expect(context.signal).toBe(controller.signal);
    expect(context.services).toBe(services);
    context.heartbeat("half way");
    expect(heartbeat).toHaveBeenCalledWith("half way");
    // cutting the link: what a zombie's context reaches is gone
    delete link.services;
    delete link.attempt;
    expect(context.services).toBeUndefined();
    expect(() => context.heartbeat("still here")).not.toThrow();
    expect(heartbeat).toHaveBeenCalledTimes(1);
  });

  it("gives its signal, services and heartbeat to a tool that destructures its context", () => {
    const heartbeat = vi.fn();
    const link: ToolLink = { running: true, zombie: false, services, attempt: attemptWith(heartbeat) };
    const { signal, services: given, heartbeat: beat, callId } = linkedContext(facts, link);
    expect(signal).toBe(facts.controller.signal);
    expect(given).toBe(services);
    expect(callId).toBe("call_1");
    beat("detached");
    expect(heartbeat).toHaveBeenCalledWith("detached");
  });

  it("keeps its live parts when the facts it is given carry fields of the same names", () => {
    const link: ToolLink = { running: true, zombie: false, services };
    const stale = { services: { stale: true }, heartbeat: () => "stale" };
    const context = linkedContext({ ...facts, ...stale } as ContextFacts, link);
    expect(context.services).toBe(services);
    delete link.services;
    expect(context.services).toBeUndefined();
    expect(context.heartbeat()).toBeUndefined();
  });
});
