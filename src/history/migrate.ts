/**
 * Numbered SQL migrations (`migrations/NNN_name.sql`), applied in order at start-up inside one
 * transaction each and recorded in `schema_migrations`, so a database only ever moves forward.
 *
 * A migration runs with foreign-key enforcement off, so it can rebuild a table other tables refer to
 * (create the new table, copy, drop the old one, rename: SQLite's own recipe for a change ALTER TABLE
 * cannot make), and every foreign key is checked before it commits: one that points nowhere rolls the
 * migration back.
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
  const pending = migrations.filter((migration) => migration.version > current);
  if (pending.length === 0) return [];
  // the pragma cannot change inside a transaction, so it is switched around them
  const enforced = db.pragma("foreign_keys", { simple: true }) === 1;
  db.pragma("foreign_keys = OFF");
  try {
    for (const migration of pending) {
      db.transaction(() => {
        db.exec(migration.sql);
        const broken = db.pragma("foreign_key_check") as { table: string; parent: string }[];
        if (broken.length > 0) {
          const first = broken[0] as { table: string; parent: string };
          throw new Error(
            `Migration ${migration.name} leaves ${broken.length} rows whose foreign key points nowhere ` +
              `(the first in ${first.table}, to ${first.parent})`,
          );
        }
        record.run(migration.version, migration.name, Date.now());
      })();
    }
  } finally {
    if (enforced) db.pragma("foreign_keys = ON");
  }
  return pending.map((migration) => migration.name);
}
