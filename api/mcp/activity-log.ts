// The MCP activity log (`wsctl mcp activity`): one row per tools/call,
// written in batches. A call appends to this process's buffer and answers at
// once; the buffer is flushed with one multi-row INSERT every FLUSH_MS (or at
// MAX_BATCH rows), and on a graceful stop. Writing a row per call cost two
// round trips and a commit per call, more than the tool's own read (the MCP
// benchmark, docs/bench.md). What this gives up: the rows of the last
// FLUSH_MS if the process is killed. The quota counter (api/mcp/quota.ts) is
// batched the same way far from the limit and exact near it.
import type { Pool, Queryable } from '../../db/pool.ts';
import { logError } from '../../lib/log.ts';

export type CallRecord = { companyId: string; credential: string; tool: string; ok: boolean; errorCode: number | null; durationMs: number; at: Date };

const FLUSH_MS = 200;
const MAX_BATCH = 500;

export class ActivityLog {
  private buffer: CallRecord[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private readonly pool: Pool;

  constructor(pool: Pool) {
    this.pool = pool;
  }

  record(call: Omit<CallRecord, 'at'>): void {
    this.buffer.push({ ...call, at: new Date() });
    if (this.buffer.length >= MAX_BATCH) void this.flush();
    else if (!this.timer) this.timer = setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Writes what is buffered; resolves once every row recorded so far is in the database. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.buffer;
    this.buffer = [];
    this.flushing = this.flushing.then(() => (batch.length ? this.write(batch) : undefined));
    return this.flushing;
  }

  private async write(batch: CallRecord[]): Promise<void> {
    try {
      await this.insert(batch);
    } catch (error) {
      // The batch holds every company's calls: one row the database refuses (a data or constraint error,
      // SQLSTATE classes 22 and 23) must not take the others with it, so those are written one by one.
      // Anything else (the database out of reach, the pool exhausted) fails the batch once.
      const sqlState = String((error as { code?: unknown }).code ?? '');
      if (batch.length === 1 || !/^2[23]/.test(sqlState)) return logError('mcp.activity_write_failed', error, { rows: batch.length });
      for (const call of batch) await this.write([call]);
    }
  }

  private async insert(batch: CallRecord[]): Promise<void> {
    const values: unknown[] = [];
    const rows = batch.map((c, i) => {
      values.push(c.companyId, c.credential, c.tool, c.ok, c.errorCode, Math.round(c.durationMs), c.at);
      const n = i * 7;
      return `($${n + 1}, $${n + 2}, $${n + 3}, $${n + 4}, $${n + 5}, $${n + 6}, $${n + 7})`;
    });
    await this.pool.query(`INSERT INTO mcp_calls (company_id, credential, tool, ok, error_code, duration_ms, created_at) VALUES ${rows.join(', ')}`, values);
  }
}

/** The last 25 invocations and the 24-hour success rate (`wsctl mcp activity`). */
export async function activity(db: Queryable, companyId: string) {
  const { rows: recent } = await db.query<{ tool: string; credential: string; ok: boolean; error_code: number | null; duration_ms: number; created_at: Date }>(
    'SELECT tool, credential, ok, error_code, duration_ms, created_at FROM mcp_calls WHERE company_id = $1 ORDER BY created_at DESC, id DESC LIMIT 25',
    [companyId],
  );
  const { rows: day } = await db.query<{ total: number; ok: number }>(
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE ok)::int AS ok FROM mcp_calls WHERE company_id = $1 AND created_at > now() - interval '24 hours'`,
    [companyId],
  );
  const { total, ok } = day[0];
  return {
    recent: recent.map((r) => ({ ...r, created_at: r.created_at.toISOString() })),
    last_24h: { calls: total, succeeded: ok, success_rate: total ? ok / total : null },
  };
}
