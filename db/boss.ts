// pg-boss over the same PostgreSQL; it owns its own schema (`pgboss`).
import { PgBoss, type ConstructorOptions } from 'pg-boss';

export type BossOptions = Pick<ConstructorOptions, 'supervise' | 'schedule' | 'max' | 'monitorIntervalSeconds' | 'superviseIntervalSeconds'>;

export function createBoss(connectionString: string, options: BossOptions = {}): PgBoss {
  const boss = new PgBoss({
    connectionString,
    max: 4,
    supervise: true,
    schedule: true,
    ...options,
  });
  boss.on('error', (error) => process.stderr.write(`pg-boss: ${error instanceof Error ? error.message : String(error)}\n`));
  return boss;
}

export type { PgBoss };
