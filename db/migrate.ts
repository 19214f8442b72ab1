// Numbered SQL migrations (db/migrations/NNN_name.sql), forward-only, each in
// its own transaction, all under one advisory lock so two processes starting
// at once (release phase and a dev runner, two test workers) cannot race.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pool } from './pool.ts';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
const LOCK_ID = 727_001; // arbitrary, constant: the advisory lock of the migrator

/**
 * The migration files in order. A migration is known by its number alone (schema_migrations.id), so
 * two files with one number (two branches that each added `096_…`) would leave one of them unapplied
 * for good on a database that ran the other: refused here, before anything runs, naming both.
 */
export async function migrationFiles(dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{3}_[\w-]+\.sql$/.test(f)).sort();
  for (let i = 1; i < files.length; i++) {
    if (files[i].slice(0, 3) === files[i - 1].slice(0, 3)) {
      throw new Error(`two migrations share the number ${files[i].slice(0, 3)} (${files[i - 1]}, ${files[i]}): renumber the newer one`);
    }
  }
  return files;
}

/**
 * The migrations this code needs that the database has not applied: the web
 * and worker processes refuse to start on such a database (the release phase,
 * `npm run migrate`, applies them), rather than start and fail on every request.
 */
export async function pendingMigrations(pool: Pool): Promise<string[]> {
  const files = await migrationFiles();
  const { rows: table } = await pool.query<{ exists: boolean }>(`SELECT to_regclass('schema_migrations') IS NOT NULL AS exists`);
  const done = new Set(table[0]?.exists ? (await pool.query<{ id: number }>('SELECT id FROM schema_migrations')).rows.map((r) => r.id) : []);
  return files.filter((file) => !done.has(Number(file.slice(0, 3))));
}

/**
 * Exits the process (code 1, a line on stderr) when the database lacks a
 * migration this code needs: what the web and worker processes check first.
 */
export async function exitUnlessMigrated(pool: Pool, processLabel: string): Promise<void> {
  const pending = await pendingMigrations(pool);
  if (!pending.length) return;
  const named = pending.length > 3 ? `${pending.slice(0, 3).join(', ')}, …` : pending.join(', ');
  process.stderr.write(
    `error: ${processLabel}: the database lacks ${pending.length} migration(s) this code needs (${named}); ` +
      'run `npm run migrate` first (the release phase of the Procfile does it on every deploy).\n',
  );
  process.exit(1);
}

/** A migration that failed and was rolled back: its file and PostgreSQL's error (`cause`). */
export class MigrationError extends Error {
  readonly file: string;
  constructor(file: string, cause: unknown) {
    super(`migration ${file} failed`, { cause });
    this.file = file;
  }
}

/** Applies every pending migration (or those numbered up to `upTo`, for tests of a data migration). */
export async function migrate(pool: Pool, options: { upTo?: number } = {}): Promise<string[]> {
  const files = await migrationFiles();
  const client = await pool.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_ID]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query<{ id: number }>('SELECT id FROM schema_migrations')).rows.map((r) => r.id));
    for (const file of files) {
      const id = Number(file.slice(0, 3));
      if (done.has(id) || (options.upTo !== undefined && id > options.upTo)) continue;
      const sql = await readFile(path.join(MIGRATIONS_DIR, file), 'utf8');
      await client.query('BEGIN');
      try {
        // The row goes in first: a second migrator that somehow got past the
        // lock clashes on the primary key instead of applying twice.
        await client.query('INSERT INTO schema_migrations (id, name) VALUES ($1, $2)', [id, file]);
        await client.query(sql);
        await client.query('COMMIT');
        applied.push(file);
      } catch (error) {
        await client.query('ROLLBACK');
        throw new MigrationError(file, error);
      }
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_ID]).catch(() => {});
    client.release();
  }
  return applied;
}
