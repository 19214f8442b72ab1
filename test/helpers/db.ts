// A database of its own for one test file, cloned from the migrated template
// that scripts/test.ts prepared.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export async function createTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const server = process.env.TEST_SERVER_URL;
  const template = process.env.TEST_TEMPLATE_DB;
  if (!server || !template) throw new Error('Run the tests with `npm test` (scripts/test.ts prepares the database).');
  const name = `ws_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  // CREATE DATABASE ... TEMPLATE fails if another session is connected to the
  // template; files start in parallel, so retry briefly.
  for (let attempt = 0; ; attempt++) {
    try {
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
      break;
    } catch (error) {
      if (attempt >= 50) throw error;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
    }
  }
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: server });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await c.end();
    },
  };
}
