// The queues the service sends to (db/queues.ts, ALL_QUEUES: created at start, reported by /metrics) and
// the worker's job definitions (worker/jobs/index.ts) name the same queues, each once: a queue with no
// handler would fill up with nobody to work it, and only an alert on its oldest job's age would say so.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { createQueues } from '../db/job-sender.ts';
import { ALL_QUEUES, CALENDAR_PUSH, CALENDAR_REVOKE } from '../db/queues.ts';
import { createTestDatabase } from './helpers/db.ts';
import { jobs } from '../worker/jobs/index.ts';

test('every queue has exactly one job definition, and every job definition a queue', () => {
  const handled = jobs.map((job) => job.queue.name);
  assert.equal(new Set(handled).size, handled.length, `a queue handled twice: ${handled.join(', ')}`);
  assert.deepEqual([...handled].sort(), ALL_QUEUES.map((queue) => queue.name).sort());
});

test('a database made by an earlier release gets each queue\'s current options at start (createQueue alone leaves an existing queue as it was)', async () => {
  const db = await createTestDatabase();
  const boss = new PgBoss({ connectionString: db.url, max: 2, supervise: false, schedule: false, useListenNotify: false });
  try {
    await boss.start();
    // As a release with the older options left them.
    await boss.createQueue(CALENDAR_PUSH.name, { retryLimit: 10, retryDelay: 10, retryBackoff: true, retryDelayMax: 1800 });
    await createQueues(boss);
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    try {
      const { rows } = await pool.query(`SELECT name, retry_limit, deletion_seconds FROM pgboss.queue WHERE name = ANY($1) ORDER BY name`, [[CALENDAR_PUSH.name, CALENDAR_REVOKE.name]]);
      assert.deepEqual(
        rows.map((r) => [r.name, r.retry_limit, r.deletion_seconds]),
        [
          [CALENDAR_PUSH.name, CALENDAR_PUSH.options.retryLimit, 604800],
          [CALENDAR_REVOKE.name, CALENDAR_REVOKE.options.retryLimit, 60],
        ],
      );
      // And the jobs sent from then on take them.
      const id = await boss.send(CALENDAR_PUSH.name, { company_id: 'c', event_id: 'e', user_id: 'u', action: 'upsert', google_event_id: null });
      const job = await pool.query(`SELECT retry_limit FROM pgboss.job WHERE id = $1`, [id]);
      assert.equal(job.rows[0].retry_limit, CALENDAR_PUSH.options.retryLimit);
    } finally {
      await pool.end();
    }
  } finally {
    await boss.stop({ graceful: false });
    await db.drop();
  }
});
