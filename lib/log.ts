// One structured JSON line per event on stdout; the platform's log router
// collects it. Kept tiny on purpose: a logging library buys nothing here.
// LOG_LEVEL is read here as lib/config.ts reads it (info or silent; config validates it): not
// through loadConfig, whose errors are for the entry point to print (loadConfigOrExit).
const silent = process.env.LOG_LEVEL === 'silent';

export function log(event: string, fields: Record<string, unknown> = {}): void {
  if (silent) return;
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), event, ...fields }) + '\n');
}

export function logError(event: string, error: unknown, fields: Record<string, unknown> = {}): void {
  const err = error instanceof Error ? error : new Error(String(error));
  process.stderr.write(
    JSON.stringify({ time: new Date().toISOString(), event, ...fields, error: err.message, stack: err.stack }) + '\n',
  );
}
