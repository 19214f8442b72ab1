// Where the database is: DATABASE_URL, or (development) an embedded
// PostgreSQL started under DATA_DIR.
import type { Config } from '../lib/config.ts';
import { startEmbedded } from './embedded.ts';

export type Database = { url: string; embedded: boolean; stop: () => Promise<void> };

export async function connectDatabase(config: Config, options: { ownProcessGroup?: boolean } = {}): Promise<Database> {
  if (config.databaseUrl) return { url: config.databaseUrl, embedded: false, stop: async () => {} };
  const embedded = await startEmbedded(config.dataDir, options);
  return { url: embedded.url, embedded: true, stop: embedded.stop };
}
