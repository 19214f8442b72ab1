// `npm run migrate` (the Procfile's release phase): our migrations, then
// pg-boss's own schema, so web and worker never race to create either.
import { loadConfig } from '../lib/config.ts';
import { createBoss } from './boss.ts';
import { connectDatabase } from './connect.ts';
import { migrate } from './migrate.ts';
import { createPool } from './pool.ts';

const config = loadConfig();
const database = await connectDatabase(config);
const pool = createPool(database.url, 2);
try {
  const applied = await migrate(pool);
  const boss = createBoss(database.url, { supervise: false, schedule: false });
  await boss.start();
  await boss.stop({ graceful: false });
  console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Database is up to date.');
} finally {
  await pool.end();
  await database.stop();
}
