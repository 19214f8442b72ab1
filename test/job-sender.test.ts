// The web's JobSender enqueues inside the request's transaction. pg-boss may
// have to look the queue up first (first use, or after createQueue evicted its
// cache); that lookup must never wait for a connection of the request pool,
// which every waiting transaction may be holding (a deadlock until the pool's
// connect timeout, seen as 500s under a burst of writes to a fresh web).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createPool, transaction, type Pool } from '../db/pool.ts';
import { WEBHOOK_DELIVERY } from '../db/queues.ts';
import { createJobSender, JOBS_PARAMETER, type JobSender } from '../db/job-sender.ts';
import { createTestDatabase } from './helpers/db.ts';

describe('JobSender (web)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let pool: Pool;
  let jobs: JobSender;
  before(async () => {
    db = await createTestDatabase();
    // One connection: the transaction below holds it for its whole life.
    pool = createPool(db.url, 1);
    jobs = await createJobSender(db.url);
  });
  after(async () => {
    await jobs.stop();
    await pool.end();
    await db.drop();
  });

  test('an insert inside a transaction that holds the only request-pool connection completes, and commits with it', async () => {
    const ids = await transaction(pool, async (client) => {
      await jobs.insert(client, WEBHOOK_DELIVERY, [{ data: { delivery_id: 'a'.repeat(24), attempt: 1 } }]);
      await jobs.send(client, WEBHOOK_DELIVERY, { delivery_id: 'b'.repeat(24), attempt: 1 });
      const { rows } = await client.query(`SELECT data->>'delivery_id' AS id FROM pgboss.job WHERE name = $1 ORDER BY 1`, [WEBHOOK_DELIVERY.name]);
      return rows.map((r) => r.id);
    });
    assert.deepEqual(ids, ['a'.repeat(24), 'b'.repeat(24)]);
  });

  test('a rolled-back transaction leaves no job', async () => {
    await assert.rejects(
      transaction(pool, async (client) => {
        await jobs.insert(client, WEBHOOK_DELIVERY, [{ data: { delivery_id: 'c'.repeat(24), attempt: 1 } }]);
        throw new Error('the write failed');
      }),
      /the write failed/,
    );
    const { rows } = await pool.query(`SELECT 1 FROM pgboss.job WHERE data->>'delivery_id' = $1`, ['c'.repeat(24)]);
    assert.equal(rows.length, 0);
  });

  test('insertStatement: pg-boss\'s own insert for the queue, fed from the caller\'s statement (with the queue\'s defaults), obtained while the transaction holds the only request-pool connection', async () => {
    const ids = ['d'.repeat(24), 'e'.repeat(24)];
    await transaction(pool, async (client) => {
      const insertJobs = await jobs.insertStatement(WEBHOOK_DELIVERY);
      const fromCaller = `(SELECT json_agg(json_build_object('data', json_build_object('delivery_id', x, 'attempt', 1), 'groupId', 'ep_' || x)) FROM unnest($1::text[]) x)`;
      await client.query(`WITH jobs AS (${insertJobs.replace(JOBS_PARAMETER, () => fromCaller)}) SELECT 1`, [ids]);
    });
    const { rows } = await pool.query(
      `SELECT data, group_id, state, retry_limit, expire_seconds FROM pgboss.job WHERE name = $1 AND data->>'delivery_id' = ANY($2) ORDER BY 1`,
      [WEBHOOK_DELIVERY.name, ids],
    );
    assert.deepEqual(
      rows.map((r) => ({ ...r })),
      ids.map((id) => ({ data: { delivery_id: id, attempt: 1 }, group_id: `ep_${id}`, state: 'created', retry_limit: WEBHOOK_DELIVERY.options.retryLimit, expire_seconds: WEBHOOK_DELIVERY.options.expireInSeconds })),
    );
  });
});
