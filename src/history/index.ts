export { SqliteHistoryStore, createMemoryHistoryStore, type SqliteStoreOptions } from "./sqlite-store.js";
export { migrate, readMigrations, MIGRATIONS_DIR, type Migration } from "./migrate.js";
export type { HistoryStore, NewTurn, OpenCall, TurnOutcome } from "./store.js";
export type * from "./model.js";
export * from "./render/index.js";
