import { readdirSync, readFileSync } from 'node:fs';
import { sql } from 'kysely';
import type { Backend } from './sql-store.ts';

const DIR = new URL('./migrations/', import.meta.url);

/**
 * The migration files, in the order they apply; each file's name is its version. `NNN_name.sql` applies to both
 * databases, `NNN_name.postgres.sql` or `NNN_name.sqlite.sql` to that one only (what one of them cannot express,
 * such as PostgreSQL's notification triggers). Without `kind`, every file.
 */
export function migrationFiles(kind?: 'sqlite' | 'postgres'): string[] {
  const other = kind === 'sqlite' ? '.postgres.sql' : kind === 'postgres' ? '.sqlite.sql' : undefined;
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.sql') && !(other && f.endsWith(other)))
    .sort();
}

/**
 * Applies the migrations not yet recorded in `schema_migrations`, each in its own transaction together with
 * its record. The table and the versions (file names) are those of the earlier per-database migration trees,
 * so a database created by them is recognised as it is and only later files are applied to it.
 */
export async function migrate(backend: Backend): Promise<void> {
  await backend.migrationScope(async (db) => {
    await sql`CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`.execute(
      db,
    );
    const applied = new Set(
      (await db.selectFrom('schema_migrations').select('version').execute()).map((r) => r.version),
    );
    // Nothing to apply, nothing locked: a process starting next to a running service does not hold its writes.
    for (const file of migrationFiles(backend.kind).filter((f) => !applied.has(f))) {
      await db.transaction().execute(async (tx) => {
        // Read inside the transaction: another process may have applied it since the list was made.
        const done = await tx
          .selectFrom('schema_migrations')
          .select('version')
          .where('version', '=', file)
          .executeTakeFirst();
        if (done) return;
        await backend.execScript(tx, readFileSync(new URL(file, DIR), 'utf8'));
        await tx.insertInto('schema_migrations').values({ version: file, applied_at: Date.now() }).execute();
      });
    }
  });
}
