// The queues the service sends to (db/queues.ts, ALL_QUEUES: created at start, reported by /metrics) and
// the worker's job definitions (worker/jobs/index.ts) name the same queues, each once: a queue with no
// handler would fill up with nobody to work it, and only an alert on its oldest job's age would say so.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ALL_QUEUES } from '../db/queues.ts';
import { jobs } from '../worker/jobs/index.ts';

test('every queue has exactly one job definition, and every job definition a queue', () => {
  const handled = jobs.map((job) => job.queue.name);
  assert.equal(new Set(handled).size, handled.length, `a queue handled twice: ${handled.join(', ')}`);
  assert.deepEqual([...handled].sort(), ALL_QUEUES.map((queue) => queue.name).sort());
});
