/**
 * The types of the typed client, inferred from the very zod schemas that validate the server's input
 * and describe its output in `/openapi.json`: a change to a schema changes these, so the two cannot
 * drift. Type-only imports: nothing of zod or the server is loaded at run time.
 */
import type { z } from "zod";
import type { TurnEvent } from "../events.js";
import type {
  activeTurnsSchema,
  agentSchema,
  approvalBodySchema,
  approvalDecidedSchema,
  createdSessionSchema,
  createSessionBodySchema,
  deletedSessionSchema,
  sessionHistorySchema,
  sessionListSchema,
  sessionSchema,
  startTurnBodySchema,
  toolCancelledSchema,
  turnAbortedSchema,
} from "../http/schemas.js";

export type { TurnEvent };
export type StartTurnBody = z.input<typeof startTurnBodySchema>;
export type CreateSessionBody = z.input<typeof createSessionBodySchema>;
export type ApprovalBody = z.input<typeof approvalBodySchema>;

export type Session = z.infer<typeof sessionSchema>;
export type CreatedSession = z.infer<typeof createdSessionSchema>;
export type SessionList = z.infer<typeof sessionListSchema>;
export type DeletedSession = z.infer<typeof deletedSessionSchema>;
export type SessionHistory = z.infer<typeof sessionHistorySchema>;
export type Agent = z.infer<typeof agentSchema>;
export type ActiveTurns = z.infer<typeof activeTurnsSchema>;
export type TurnAborted = z.infer<typeof turnAbortedSchema>;
export type ToolCancelled = z.infer<typeof toolCancelledSchema>;
export type ApprovalDecided = z.infer<typeof approvalDecidedSchema>;

/** What every call accepts: a signal that cancels it (the request, or the stream and its reconnects). */
export type CallOptions = { signal?: AbortSignal };
