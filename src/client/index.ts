/**
 * `reins/client`: a small typed client for the reins HTTP API, with no dependencies beyond `fetch`.
 * Its types are inferred from the server's zod schemas, the same ones `/openapi.json` is built from.
 */
export { ReinsClient } from "./reins-client.js";
export type { FollowOptions, HistoryOptions, PageOptions, ReinsClientOptions } from "./reins-client.js";
export { ReinsApiError } from "./api-error.js";
export { TurnStreamLostError } from "./turn-event-stream.js";
export type * from "./types.js";
