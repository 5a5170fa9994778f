/**
 * Why a turn cannot start: errors with stable codes that the HTTP layer maps to 404 / 409 / 400.
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
