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
      assert.ok(insertJobs, 'a plain INSERT for a queue without notify');
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

  test('recordEvent: the event, a delivery per matching active endpoint and its first-attempt job (grouped by endpoint), in one statement; with a notify-enabled queue, whose insert cannot be nested, in two', async () => {
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
    const fanOut = async (sender: JobSender) => {
      const eventId = await transaction(pool, (db) => recordEvent(db, sender, company.id, 'customer.created', { object: 'customer', id: 'cus_1' }));
      const { rows } = await pool.query(
        `SELECT d.endpoint_id, d.id AS delivery_id, j.data, j.group_id, j.state
           FROM webhook_deliveries d LEFT JOIN pgboss.job j ON j.name = $2 AND j.data->>'delivery_id' = d.id
          WHERE d.event_id = $1 ORDER BY d.endpoint_id`,
        [eventId, WEBHOOK_DELIVERY.name],
      );
      return rows.map((r) => ({ endpoint: r.endpoint_id, group: r.group_id, state: r.state, data: r.data, ownDelivery: r.data?.delivery_id === r.delivery_id }));
    };
    const expected = (data: unknown) => [endpoint(1), endpoint(2)].map((e) => ({ endpoint: e, group: e, state: 'created', data, ownDelivery: true }));
    const strip = (rows: Awaited<ReturnType<typeof fanOut>>) => rows.map((r) => ({ ...r, data: { attempt: r.data?.attempt } }));
    assert.ok(await jobs.insertStatement(WEBHOOK_DELIVERY), 'one statement');
    assert.deepEqual(strip(await fanOut(jobs)), expected({ attempt: 1 }));

    const boss = createBoss(db.url, { supervise: false, schedule: false });
    await boss.start();
    await boss.updateQueue(WEBHOOK_DELIVERY.name, { notify: true });
    const notifying = await createJobSender(db.url);
    try {
      assert.equal(await notifying.insertStatement(WEBHOOK_DELIVERY), null, 'a notify-enabled queue\'s insert is a WITH of its own');
      assert.deepEqual(strip(await fanOut(notifying)), expected({ attempt: 1 }));
    } finally {
      await boss.updateQueue(WEBHOOK_DELIVERY.name, { notify: false });
      await notifying.stop();
      await boss.stop({ graceful: false });
    }
  });
});
