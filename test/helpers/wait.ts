// The one way tests wait: poll an observable state until it holds, within a
// bound, and fail naming what was awaited and the last value seen. Tests never
// sleep and then assert; they wait for the state they expect.

export type WaitOptions = { timeoutMs?: number; what?: string; intervalMs?: number };

/**
 * Resolves with the first truthy value `check` returns. `options` may also be
 * given positionally as (timeoutMs, what), the shape most tests use.
 */
export async function waitFor<T>(
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  options: WaitOptions | number = {},
  what?: string,
): Promise<T> {
  const { timeoutMs = 30_000, intervalMs = 50, what: label = what ?? 'the condition' } =
    typeof options === 'number' ? { timeoutMs: options, what } : options;
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const value = await check();
    if (value) return value;
    last = value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${label} (last value: ${JSON.stringify(last)})`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

type Queryable = { query: (text: string, values?: unknown[]) => Promise<{ rows: Array<{ n: number }> }> };

/**
 * Waits until at least `atLeast` sessions of this database wait on a lock, those running a statement
 * LIKE `query` when it is given: the moment a race's second side is parked behind the first, which a
 * test then releases. The way races are staged here rather than with sleeps.
 */
export async function waitForLockWaits(pool: Queryable, options: { query?: string; atLeast?: number; what?: string; timeoutMs?: number } = {}): Promise<void> {
  const { query = null, atLeast = 1, what = query ? `a session running ${query} to wait on a lock` : 'a session to wait on a lock', timeoutMs = 10_000 } = options;
  await waitFor(
    async () => {
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND ($1::text IS NULL OR query LIKE $1)`,
        [query],
      );
      return rows[0].n >= atLeast;
    },
    timeoutMs,
    what,
  );
}
