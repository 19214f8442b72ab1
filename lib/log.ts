// One structured JSON line per event on stdout; the platform's log router
// collects it. Kept tiny on purpose: a logging library buys nothing here.
// LOG_LEVEL is read here as lib/config.ts reads it (info or silent; config validates it): not
// through loadConfig, whose errors are for the entry point to print (loadConfigOrExit).
const silent = process.env.LOG_LEVEL === 'silent';

export function log(event: string, fields: Record<string, unknown> = {}): void {
  if (silent) return;
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), event, ...fields }) + '\n');
}

/** An event on stderr without a stack (LOG_LEVEL=silent keeps it): a problem the process met, not a fault of its code. */
export function logProblem(event: string, fields: Record<string, unknown> = {}): void {
  process.stderr.write(JSON.stringify({ time: new Date().toISOString(), event, ...fields }) + '\n');
}

export function logError(event: string, error: unknown, fields: Record<string, unknown> = {}): void {
  const err = error instanceof Error ? error : new Error(String(error));
  process.stderr.write(
    JSON.stringify({ time: new Date().toISOString(), event, ...fields, error: err.message, stack: err.stack }) + '\n',
  );
}

/** How long a repeating error (same event, same message) stays one line: its repeats are counted, not written. */
export const REPEAT_WINDOW_MS = 60_000;
const written = new Map<string, { at: number; skipped: number }>();

/**
 * Whether a repeating error is written now, and how many of it were left out since it last was. The
 * key is the event and the message without its parenthesised tail and numbers (pg-boss names the
 * queue and worker there; addresses and ports vary), so an outage in which every poller of every queue
 * fails each second is a line per minute per kind of failure, not tens of thousands.
 */
export function repeatDecision(event: string, message: string, now = Date.now()): { write: boolean; repeated: number } {
  const key = `${event}|${message.replace(/\s*\([^()]*\)\s*$/, '').replace(/\d+/g, '#')}`;
  const seen = written.get(key);
  if (seen && now - seen.at < REPEAT_WINDOW_MS) {
    seen.skipped++;
    return { write: false, repeated: 0 };
  }
  if (written.size >= 1_000) written.clear();
  written.set(key, { at: now, skipped: 0 });
  return { write: true, repeated: seen?.skipped ?? 0 };
}

/**
 * `logError` for failures that repeat while something is away (the database in an outage): the first
 * is written whole, then one a minute with `repeated`, the number left out since the last one written.
 */
export function logRepeatedError(event: string, error: unknown, fields: Record<string, unknown> = {}): void {
  const { write, repeated } = repeatDecision(event, error instanceof Error ? error.message : String(error));
  if (write) logError(event, error, repeated ? { ...fields, repeated } : fields);
}
