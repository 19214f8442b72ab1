// pg-boss's own errors (a worker's poll on a dropped connection, a failed
// maintenance run) reach the log as the processes' other lines do: one JSON
// object per line, on stderr (docs/operations.md, Logs).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createBoss } from '../db/boss.ts';

test('a pg-boss error is one JSON line on stderr: event boss.error, with its message (an Error or a plain object)', () => {
  // Never started: no connection is made, the handler is what is tested.
  const boss = createBoss('postgres://127.0.0.1:1/none');
  const lines: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string) => lines.push(chunk) > 0) as typeof process.stderr.write;
  try {
    boss.emit('error', new Error('terminating connection due to administrator command'));
    // What pg-boss emits is typed as an Error; a failed maintenance run emits a plain object.
    boss.emit('error', { message: 'maintenance failed', queue: 'x' } as unknown as Error);
    boss.emit('error', { code: 'E1' } as unknown as Error);
    // The same failure again, from every poller (a database outage): counted, written once a minute (lib/log.ts).
    for (let i = 0; i < 20; i++) boss.emit('error', new Error('terminating connection due to administrator command'));
  } finally {
    process.stderr.write = write;
  }
  assert.equal(lines.length, 3);
  const parsed = lines.map((line) => {
    assert.match(line, /^\{.*\}\n$/);
    return JSON.parse(line);
  });
  assert.deepEqual(parsed.map((p) => [p.event, p.error]), [
    ['boss.error', 'terminating connection due to administrator command'],
    ['boss.error', 'maintenance failed'],
    ['boss.error', '{"code":"E1"}'],
  ]);
  assert.match(parsed[0].time, /^\d{4}-\d{2}-\d{2}T/);
});
