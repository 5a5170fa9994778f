/**
 * The only thread between a running tool and the attempt that started it
 * (docs/semantics.md#isolation-and-limits). A tool that ignores its signal may never settle, and whatever its
 * pending promise and its context can reach stays in memory as long as it runs. So the tool's context and the
 * handlers on its promise reach the attempt only through a `ToolLink`. When the attempt ends without the
 * tool the link is cut: the zombie keeps the link and a few strings, not the call's input, the turn or its
 * buffers. When the tool settles the link is released the same way, for a tool may keep its context.
 *
 * The functions here are outside the attempt on purpose: a closure keeps its whole enclosing scope
 * alive, and these must keep nothing but the link.
 */
import type { ToolContext, ToolDefinition, ToolServices } from "./types.js";

/** What a running tool reaches of its attempt, through the link, until the link is cut or released. */
export interface LinkedAttempt {
  /** The attempt has not settled: its tool may still start. */
  readonly open: boolean;
  onValue(value: unknown): void;
  onError(error: unknown): void;
  heartbeat(message?: string): void;
}

export type ToolLink = {
  attempt?: LinkedAttempt;
  services?: ToolServices;
  /** The tool has been started and has not settled yet. */
  running: boolean;
  /** Counted as a zombie (still running a grace period after its call closed). */
  zombie: boolean;
  zombieTimer?: NodeJS.Timeout;
  /** A zombie's bookkeeping when it settles at last. */
  onZombieSettled?: () => void;
};

/**
 * The facts a context carries besides the link's live parts, and the attempt's controller, whose signal
 * the context gives out.
 */
export type ContextFacts = Omit<ToolContext, "heartbeat" | "services" | "signal"> & {
  controller: AbortController;
};

/** A tool's context whose heartbeat and services go through the link (and go quiet once it is cut). */
export function linkedContext(facts: ContextFacts, link: ToolLink): ToolContext {
  return new LinkedContext(facts, link);
}

/**
 * A class, not an object literal: V8 makes a literal with a getter in dictionary mode (about 1 KB per
 * call, and a hash lookup for every read a tool makes); an instance has fast fields and the getters
 * sit on the prototype. Destructuring reads them as before.
 */
class LinkedContext implements ToolContext {
  readonly turnId: string;
  readonly sessionId: string;
  readonly agentId: string;
  readonly callId: string;
  readonly toolName: string;
  readonly workspace: string | undefined;
  readonly allowedRoots: readonly string[];
  readonly depth: number;
  /** An own function (not a method), so that a tool may pass it on or destructure it. */
  readonly heartbeat: (message?: string) => void;
  readonly #controller: AbortController;
  readonly #link: ToolLink;

  constructor(facts: ContextFacts, link: ToolLink) {
    // field by field: nothing in `facts` can stand in for the live parts
    this.turnId = facts.turnId;
    this.sessionId = facts.sessionId;
    this.agentId = facts.agentId;
    this.callId = facts.callId;
    this.toolName = facts.toolName;
    this.workspace = facts.workspace;
    this.allowedRoots = facts.allowedRoots;
    this.depth = facts.depth;
    this.heartbeat = (message?: string) => link.attempt?.heartbeat(message);
    this.#controller = facts.controller;
    this.#link = link;
  }

  /**
   * Node makes a controller's signal when it is first read (or aborted), and making one costs a few µs:
   * a tool that finishes without looking at its signal never has one made.
   */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get services(): ToolServices | undefined {
    return this.#link.services;
  }
}

/**
 * Starts the tool in a microtask (a tool that throws synchronously is handled like one that rejects)
 * unless its attempt has settled by then; its outcome reaches the attempt through the link.
 */
export function startTool(tool: ToolDefinition, input: unknown, context: ToolContext, link: ToolLink): void {
  // This closure runs once and is dropped; the handlers that stay on the tool's promise for as long
  // as it runs are made by `followTool`, whose scope holds the link alone.
  const started = Promise.resolve().then(() =>
    link.attempt?.open === true ? invoke(tool, input, context, link) : undefined,
  );
  followTool(started, link);
}

function invoke(
  tool: ToolDefinition,
  input: unknown,
  context: ToolContext,
  link: ToolLink,
): Promise<unknown> {
  link.running = true;
  return tool.execute(input, context);
}

function followTool(running: Promise<unknown>, link: ToolLink): void {
  running
    .then(
      (value) => link.attempt?.onValue(value),
      (error: unknown) => link.attempt?.onError(error),
    )
    .finally(() => {
      link.running = false;
      clearTimeout(link.zombieTimer);
      if (link.zombie) link.onZombieSettled?.();
    });
}

/**
 * Cuts the link of a tool that runs on after its call ended: nothing of the attempt stays reachable.
 * If it still runs after `graceMs`, `onZombie("started")` is told, and `onZombie("settled")` when it
 * settles at last.
 */
export function cutLink(
  link: ToolLink,
  graceMs: number,
  onZombie: (state: "started" | "settled") => void,
): void {
  releaseLink(link);
  if (!link.running) return;
  link.onZombieSettled = () => onZombie("settled");
  link.zombieTimer = setTimeout(() => markZombie(link, onZombie), graceMs);
  link.zombieTimer.unref();
}

/**
 * Lets go of the attempt's end of the link once the call has ended: a context a tool keeps after its
 * call (a cache, a background job) then reaches neither the attempt nor the turn's services.
 */
export function releaseLink(link: ToolLink): void {
  link.attempt = undefined;
  link.services = undefined;
}

function markZombie(link: ToolLink, onZombie: (state: "started" | "settled") => void): void {
  link.zombie = true;
  onZombie("started");
}
