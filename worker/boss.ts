// pg-boss over the same PostgreSQL; it owns its own schema (`pgboss`).
import { PgBoss } from 'pg-boss';

export function createBoss(connectionString: string, options: { supervise?: boolean; schedule?: boolean; max?: number } = {}): PgBoss {
  const boss = new PgBoss({
    connectionString,
    max: options.max ?? 4,
    supervise: options.supervise ?? true,
    schedule: options.schedule ?? true,
  });
  boss.on('error', (error) => process.stderr.write(`pg-boss: ${error instanceof Error ? error.message : String(error)}\n`));
  return boss;
}

export type { PgBoss };
