/**
 * Numbered SQL migrations (`migrations/NNN_name.sql`), applied in order at start-up inside one
 * transaction each and recorded in `schema_migrations`, so a database only ever moves forward.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Database } from "better-sqlite3";

export const MIGRATIONS_DIR = fileURLToPath(new URL("../../migrations/", import.meta.url));

export type Migration = { version: number; name: string; sql: string };

export function readMigrations(directory = MIGRATIONS_DIR): Migration[] {
  return readdirSync(directory)
    .filter((file) => /^\d+_.+\.sql$/.test(file))
    .map((file) => ({
      version: Number.parseInt(file, 10),
      name: file,
      sql: readFileSync(`${directory}/${file}`, "utf8"),
    }))
    .sort((a, b) => a.version - b.version);
}

/** Applies every migration newer than the database's version; returns the names applied. */
export function migrate(db: Database, migrations = readMigrations()): string[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const row = db.prepare("SELECT MAX(version) AS version FROM schema_migrations").get() as {
    version: number | null;
  };
  const current = row.version ?? 0;
  const record = db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
  const applied: string[] = [];
  for (const migration of migrations) {
    if (migration.version <= current) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      record.run(migration.version, migration.name, Date.now());
    })();
    applied.push(migration.name);
  }
  return applied;
}
