/**
 * Why a turn cannot start: errors with stable codes that the HTTP layer maps to 404 / 409 / 400 / 503
 * (an unknown session, a busy one, an unknown provider or agent, a session of another agent, a message
 * of white space only, a store that cannot take writes, a server shutting down).
 */
import { ReinsError } from "../errors.js";

export class SessionNotFoundError extends ReinsError {
  constructor(sessionId: string) {
    super("session_not_found", `Session not found: ${sessionId}`, { data: { sessionId } });
  }
}
export class SessionBusyError extends ReinsError {
  constructor(sessionId: string, turnId: string) {
    super("session_busy", `Session ${sessionId} already has a running turn (${turnId}).`, {
      data: { sessionId, turnId },
    });
  }
}
export class UnknownProviderError extends ReinsError {
  constructor(provider: string, known: string[]) {
    super("unknown_provider", `Unknown provider "${provider}"; configured: ${known.join(", ")}.`, {
      data: { provider, known },
    });
  }
}
export class AgentNotFoundError extends ReinsError {
  constructor(agentId: string, known: string[]) {
    super("agent_not_found", `Unknown agent "${agentId}"; configured: ${known.join(", ")}.`, {
      data: { agentId, known },
    });
  }
}
export class AgentMismatchError extends ReinsError {
  constructor(sessionId: string, sessionAgentId: string, requestedAgentId: string) {
    super(
      "agent_mismatch",
      `Session ${sessionId} belongs to agent "${sessionAgentId}"; a turn cannot run it as "${requestedAgentId}". ` +
        "Start a new session for another agent.",
      { data: { sessionId, agentId: sessionAgentId, requestedAgentId } },
    );
  }
}
/**
 * A user message with nothing in it: no provider takes a blank text, so the renderer would leave it out,
 * and the turns before and after it would join into one assistant message (a transcript providers refuse).
 */
export class BlankMessageError extends ReinsError {
  constructor() {
    super("blank_message", "The message must not be empty or only white space.");
  }
}
/** The history store cannot take writes now (a full disk, an I/O error): what a turn wrote would be lost. */
export class StoreUnavailableError extends ReinsError {
  constructor() {
    super(
      "store_unavailable",
      "The server cannot store history right now (its database refuses writes: a full disk or an I/O " +
        "error) and starts no turn or session; retry later.",
    );
  }
}
export class ShuttingDownError extends ReinsError {
  constructor() {
    super(
      "shutting_down",
      "The server is shutting down and starts no new turn; retry once it is back (or on another instance).",
    );
  }
}
