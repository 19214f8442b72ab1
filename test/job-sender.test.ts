// The web's JobSender enqueues inside the request's transaction. pg-boss may
// have to look the queue up first (first use, or after createQueue evicted its
// cache); that lookup must never wait for a connection of the request pool,
// which every waiting transaction may be holding (a deadlock until the pool's
// connect timeout, seen as 500s under a burst of writes to a fresh web).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createPool, transaction, type Pool } from '../db/pool.ts';
import { FORM_POST_ACTIONS } from '../db/queues.ts';
import { createJobSender, type JobSender } from '../db/job-sender.ts';
import { createBoss } from '../db/boss.ts';
import { recordEvent } from '../db/events.ts';
import { createCompany } from '../api/admin/companies.ts';
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

  test('a send inside a transaction that holds the only request-pool connection completes, and commits with it', async () => {
    const ids = await transaction(pool, async (client) => {
      await jobs.send(client, FORM_POST_ACTIONS, { submissionId: 'a'.repeat(24), companyId: 'c' });
      await jobs.send(client, FORM_POST_ACTIONS, { submissionId: 'b'.repeat(24), companyId: 'c' });
      const { rows } = await client.query(`SELECT data->>'submissionId' AS id FROM pgboss.job WHERE name = $1 ORDER BY 1`, [FORM_POST_ACTIONS.name]);
      return rows.map((r) => r.id);
    });
    assert.deepEqual(ids, ['a'.repeat(24), 'b'.repeat(24)]);
  });

  test('a rolled-back transaction leaves no job', async () => {
    await assert.rejects(
      transaction(pool, async (client) => {
        await jobs.send(client, FORM_POST_ACTIONS, { submissionId: 'c'.repeat(24), companyId: 'c' });
        throw new Error('the write failed');
      }),
      /the write failed/,
    );
    const { rows } = await pool.query(`SELECT 1 FROM pgboss.job WHERE data->>'submissionId' = $1`, ['c'.repeat(24)]);
    assert.equal(rows.length, 0);
  });

  test('recordEvent: the event and a delivery per matching active endpoint, due at once, in one statement; no job (the deliveries are the queue)', async () => {
    const { company } = await createCompany(pool, { name: 'Fan-out' });
    const endpoint = (n: number) => String(n).padStart(24, 'e');
    await pool.query(
      `INSERT INTO webhook_endpoints (id, company_id, url, enabled_events, secret, active) VALUES
         ($2, $1, 'https://a.example/h', ARRAY['*'], 's', true),
         ($3, $1, 'https://b.example/h', ARRAY['customer.*'], 's', true),
         ($4, $1, 'https://c.example/h', ARRAY['lead.created'], 's', true),
         ($5, $1, 'https://d.example/h', ARRAY['*'], 's', false)`,
      [company.id, endpoint(1), endpoint(2), endpoint(3), endpoint(4)],
    );
    const jobsBefore = (await pool.query('SELECT count(*)::int AS n FROM pgboss.job')).rows[0].n;
    const eventId = await transaction(pool, (db) => recordEvent(db, company.id, 'customer.created', { object: 'customer', id: 'cus_1' }));
    const { rows } = await pool.query(
      `SELECT d.endpoint_id, d.status, d.attempts, d.next_attempt_at = d.created_at AS due_at_once, d.leased_until, ev.created_at = d.created_at AS same_time
         FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_id WHERE d.event_id = $1 ORDER BY d.endpoint_id`,
      [eventId],
    );
    assert.deepEqual(
      rows.map((r) => ({ ...r })),
      [endpoint(1), endpoint(2)].map((e) => ({ endpoint_id: e, status: 'pending', attempts: 0, due_at_once: true, leased_until: null, same_time: true })),
    );
    assert.equal((await pool.query('SELECT count(*)::int AS n FROM pgboss.job')).rows[0].n, jobsBefore, 'no job was queued');
  });

  test('a retired queue (webhook-delivery, before migration 101) is deleted with its jobs when a process starts', async () => {
    const boss = createBoss(db.url, { supervise: false, schedule: false });
    await boss.start();
    try {
      await boss.createQueue('webhook-delivery');
      await boss.send('webhook-delivery', { delivery_id: 'x'.repeat(24), attempt: 1 });
      const sender = await createJobSender(db.url);
      await sender.stop();
      assert.equal(await boss.getQueue('webhook-delivery'), null);
      assert.equal((await pool.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'webhook-delivery'`)).rows[0].n, 0);
    } finally {
      await boss.stop({ graceful: false });
    }
  });
});
