// pg-boss over the same PostgreSQL; it owns its own schema (`pgboss`). Its
// connections are one pg.Pool of `max` (LISTEN/NOTIFY, which would add one,
// is left off), so the worker's budget gives it `max` and counts nothing more.
import { PgBoss, type ConstructorOptions } from 'pg-boss';

export type BossOptions = Pick<ConstructorOptions, 'supervise' | 'schedule' | 'max' | 'monitorIntervalSeconds' | 'superviseIntervalSeconds' | 'application_name'>;

export function createBoss(connectionString: string, options: BossOptions = {}): PgBoss {
  const boss = new PgBoss({
    connectionString,
    max: 4,
    supervise: true,
    schedule: true,
    useListenNotify: false,
    ...options,
  });
  boss.on('error', (error) => process.stderr.write(`pg-boss: ${error instanceof Error ? error.message : String(error)}\n`));
  return boss;
}

export type { PgBoss };
