// Where the database is: DATABASE_URL, or (development) an embedded
// PostgreSQL started under DATA_DIR.
import pg from 'pg';
import type { Config } from '../lib/config.ts';
import { StartRefused, startEmbedded } from './embedded.ts';

export type Database = { url: string; embedded: boolean; stop: () => Promise<void> };

export async function connectDatabase(config: Config, options: { ownProcessGroup?: boolean } = {}): Promise<Database> {
  if (config.databaseUrl) return { url: config.databaseUrl, embedded: false, stop: async () => {} };
  const embedded = await startEmbedded(config.dataDir, options);
  return { url: embedded.url, embedded: true, stop: embedded.stop };
}

/**
 * `connectDatabase` for a process's entry point (web, worker, migrate, `npm start`): a data
 * directory another start holds, or a database that cannot be reached (refused, unknown name,
 * wrong password), is one line on stderr and exit 1, as a bad setting is (README), not a stack trace.
 */
export async function connectDatabaseOrExit(config: Config, options: { ownProcessGroup?: boolean } = {}): Promise<Database> {
  const fail = (message: string): never => {
    process.stderr.write(`error: ${message}\n`);
    process.exit(1);
  };
  let database: Database;
  try {
    database = await connectDatabase(config, options);
  } catch (error) {
    if (!(error instanceof StartRefused)) throw error;
    return fail(error.message);
  }
  const probe = new pg.Client({ connectionString: database.url, connectionTimeoutMillis: 10_000 });
  try {
    await probe.connect();
  } catch (error) {
    await database.stop();
    // pg's messages name the host, database or user, never the password.
    return fail(`cannot reach the database${database.embedded ? '' : ' (DATABASE_URL)'}: ${(error as Error).message || (error as { code?: string }).code}`);
  } finally {
    await probe.end().catch(() => {});
  }
  return database;
}
