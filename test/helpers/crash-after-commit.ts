// Preloaded (`node --import`) into a web process by test/idempotency.crash.test.ts:
// the process kills itself with SIGKILL the moment PostgreSQL acknowledges the
// first COMMIT of a transaction that ran a statement matching
// CRASH_AFTER_COMMIT_OF, i.e. after the write is durable and before any answer
// reaches the client. Test-only fault injection; nothing in the service loads it.
import pg from 'pg';

const pattern = new RegExp(process.env.CRASH_AFTER_COMMIT_OF ?? '^$', 'i');
const original = pg.Client.prototype.query;
const armed = new WeakSet<object>();

pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const config = args[0] as string | { text?: string } | undefined;
  const text = typeof config === 'string' ? config : config?.text;
  if (typeof text === 'string' && pattern.test(text)) armed.add(this);
  const result = (original as (...a: unknown[]) => unknown).apply(this, args);
  if (text === 'COMMIT' && armed.has(this) && result instanceof Promise) {
    return result.then((value) => {
      process.kill(process.pid, 'SIGKILL');
      return value;
    });
  }
  return result;
} as typeof original;
