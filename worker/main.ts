// `npm run worker`: the worker process of the Procfile.
import { connectDatabase } from '../db/connect.ts';
import { createPool } from '../db/pool.ts';
import { loadConfig } from '../lib/config.ts';
import { startWorker } from './worker.ts';

const config = loadConfig();
const database = await connectDatabase(config);
const pool = createPool(database.url);
const worker = await startWorker(config, pool, database.url);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, async () => {
    await worker.stop();
    await pool.end();
    await database.stop();
    process.exit(0);
  });
}
