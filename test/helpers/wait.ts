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
