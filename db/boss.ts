// pg-boss over the same PostgreSQL; it owns its own schema (`pgboss`). Its
// connections are one pg.Pool of `max` (LISTEN/NOTIFY, which would add one,
// is left off), so the worker's budget gives it `max` and counts nothing more.
import { PgBoss, type ConstructorOptions } from 'pg-boss';
import { repeatDecision } from '../lib/log.ts';

export type BossOptions = Pick<ConstructorOptions, 'supervise' | 'schedule' | 'max' | 'monitorIntervalSeconds' | 'superviseIntervalSeconds' | 'application_name'>;

export function createBoss(connectionString: string, options: BossOptions = {}): PgBoss {
  const boss = new PgBoss({
    connectionString,
    max: 4,
    supervise: true,
    schedule: true,
    useListenNotify: false,
    // The monitor step of a supervise pass is what expires the jobs of a worker that died mid-job, so
    // they are fetched again: the queues with an expireInSeconds of 120-300 s (thumbnail, calendar-push,
    // calendar-revoke, invoices; db/queues.ts) are picked up within about 15 s of expiring, not pg-boss's
    // 60 s. (Webhook deliveries are not pg-boss jobs: their 40 s lease is the dispatcher's,
    // worker/webhooks/dispatcher.ts.) The monitor also counts each queue (backing off by itself when that is slow).
    superviseIntervalSeconds: 15,
    monitorIntervalSeconds: 15,
    ...options,
  });
  // One JSON line on stderr, as every other error the processes log (lib/log.ts). pg-boss also emits
  // plain objects (a failed maintenance run): their message, else their JSON, never "[object Object]".
  boss.on('error', (error: unknown) => logBossError(error));
  return boss;
}

/** A pg-boss `error` event as the log line `boss.error` (`fields` say which process's pg-boss). */
export function logBossError(error: unknown, fields: Record<string, unknown> = {}): void {
  // During a database outage every poller of every queue fails each second: one line a minute per kind
  // of failure, with how many were left out (lib/log.ts, repeatDecision).
  const message = describeError(error);
  const { write, repeated } = repeatDecision('boss.error', message);
  if (!write) return;
  process.stderr.write(JSON.stringify({ time: new Date().toISOString(), event: 'boss.error', ...fields, error: message, ...(repeated ? { repeated } : {}) }) + '\n');
}

function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  const message = (error as { message?: unknown } | null)?.message;
  if (typeof message === 'string') return message;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

export type { PgBoss };
