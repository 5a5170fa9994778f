/** zod schemas of the HTTP API's inputs (DESIGN.md §3). */
import { z } from "zod";

export const idSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_-]+$/, "must contain only letters, digits, '_' and '-'");

export const MAX_MESSAGE_CHARS = 200_000;

export const startTurnBodySchema = z.strictObject({
  message: z.string().min(1, "must not be empty").max(MAX_MESSAGE_CHARS),
  sessionId: idSchema.optional(),
  agentId: idSchema.optional(),
  provider: z.string().min(1).max(64).optional(),
  model: z.string().min(1).max(128).optional(),
  stepMode: z.boolean().optional(),
});

export const turnParamsSchema = z.strictObject({ id: idSchema });
export const toolParamsSchema = z.strictObject({ id: idSchema, toolId: idSchema });
export const sessionParamsSchema = z.strictObject({ id: idSchema });

/** `Last-Event-ID` header or `?lastEventId=` (for clients that cannot set headers): a sequence number. */
export const lastEventIdSchema = z
  .string()
  .regex(/^\d{1,15}$/, "must be a non-negative whole number (the last seq received)")
  .transform(Number);

export const eventsQuerySchema = z.strictObject({ lastEventId: lastEventIdSchema.optional() });

export const emptyQuerySchema = z.strictObject({});
