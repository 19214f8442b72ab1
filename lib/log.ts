// One structured JSON line per event on stdout; the platform's log router
// collects it. Kept tiny on purpose: a logging library buys nothing here.
import { loadConfig } from './config.ts';

const silent = loadConfig().logLevel === 'silent';

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
