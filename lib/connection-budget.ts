// One number bounds the PostgreSQL connections of a process
// (PG_MAX_CONNECTIONS, lib/config.ts); this splits it among the pools the
// process opens, so their sum is the number and nothing opens a connection
// outside it. Each pool is a pg.Pool with `max` set (or one pg.Client), so
// the sum is a hard bound, not an estimate:
//   web:    request pool + rate-limit pool + key-cache LISTEN client + the
//           job sender's pg-boss (its own lookups; inserts use the request's
//           transaction);
//   worker: the worker's pool (job handlers, webhook dispatcher) + pg-boss
//           (fetch, complete, supervision, cron);
//   dev:    `npm start`, web and worker in one process: one pool for both,
//           the rate limiter on it too.
// Every connection carries application_name `workspace:<process>:<part>`, so
// pg_stat_activity shows who holds what (and the budget test counts it).

export type ProcessRole = 'web' | 'worker' | 'dev';

export type ConnectionBudget = {
  role: ProcessRole;
  total: number;
  /** web: the request pool; worker: the job handlers' pool; dev: both. */
  pool: number;
  /** web only: the rate limiter's own pool (0: it uses `pool`). */
  rateLimit: number;
  /** The key cache's LISTEN client (web, dev). */
  listen: number;
  /** The web's pg-boss sender (web, dev). */
  jobSender: number;
  /** The worker's pg-boss (worker, dev). */
  boss: number;
};

/**
 * The smallest budget each role can run with: one connection per side part
 * and two for the main pool, since code holding a transaction may still run
 * a short query on the pool beside it, and with one connection that waits on
 * itself until the connect timeout.
 */
export const MIN_CONNECTIONS: Record<ProcessRole, number> = { web: 5, worker: 4, dev: 6 };

function clamp(n: number, low: number, high: number): number {
  return Math.max(low, Math.min(high, n));
}

/**
 * The split. The side pools stay small (they serve short lookups) and the
 * rest goes to the pool that serves requests or jobs. pg-boss gets at least
 * 2 in the worker: its supervision and cron run beside the fetches, and with
 * one connection a slow maintenance pass would stall every fetch.
 */
export function splitConnections(total: number, role: ProcessRole, variable = 'PG_MAX_CONNECTIONS'): ConnectionBudget {
  if (!Number.isInteger(total) || total < MIN_CONNECTIONS[role]) {
    throw new Error(
      `${variable}=${total} is too small for the ${role} process: it needs at least ${MIN_CONNECTIONS[role]} ` +
        '(one connection for each pool it opens; see README, Configuration)',
    );
  }
  if (role === 'web') {
    const jobSender = total >= 12 ? 2 : 1;
    const rateLimit = clamp(Math.floor(total / 5), 1, 4);
    return { role, total, pool: total - 1 - jobSender - rateLimit, rateLimit, listen: 1, jobSender, boss: 0 };
  }
  if (role === 'worker') {
    const boss = clamp(Math.floor(total / 3), 2, 4);
    return { role, total, pool: total - boss, rateLimit: 0, listen: 0, jobSender: 0, boss };
  }
  return { role, total, pool: total - 4, rateLimit: 0, listen: 1, jobSender: 1, boss: 2 };
}

/** The split, for a process starting: a budget too small is one line on stderr and exit 1, as every bad setting (README, Configuration). */
/** The split, or one `error:` line naming the variable the operator set (PG_POOL_MAX, the old name, too) and exit 1. */
export function splitConnectionsOrExit(config: { pgMaxConnections: number; pgMaxConnectionsVariable: string }, role: ProcessRole): ConnectionBudget {
  try {
    return splitConnections(config.pgMaxConnections, role, config.pgMaxConnectionsVariable);
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

/** `workspace:<process>:<part>`, at most 63 bytes (PostgreSQL truncates longer names). */
export function applicationName(processName: string, part: string): string {
  return `workspace:${processName}:${part}`.slice(0, 63);
}

/** The process's name in application_name: the platform's (DYNO=web.1) or role and pid. */
export function processName(role: ProcessRole, dyno: string | undefined): string {
  return dyno ?? `${role}-${process.pid}`;
}

/** The start-up log line's fields: total and the split, parts the role does not open left out. */
export function budgetFields(budget: ConnectionBudget): Record<string, number | string> {
  const fields: Record<string, number | string> = { role: budget.role, total: budget.total, pool: budget.pool };
  if (budget.rateLimit) fields.rate_limit = budget.rateLimit;
  if (budget.listen) fields.key_cache_listen = budget.listen;
  if (budget.jobSender) fields.job_sender = budget.jobSender;
  if (budget.boss) fields.pg_boss = budget.boss;
  return fields;
}
