// Printing for people and for programs, and the one place that turns any
// failure into a single stderr line. With --json stdout carries exactly one
// JSON document; errors never go to stdout, so `wsctl ... --json | jq` never
// parses an error as data.
import { TRPCClientError } from '@trpc/client';

/** An expected failure with a message meant for the operator as it is. */
export class CliError extends Error {}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/**
 * Text a tenant, a visitor or a webhook receiver chose (a company name, an MCP tool name, a
 * receiver's answer) reaches the operator's terminal: its control characters (escape sequences that
 * clear or recolour the screen, a carriage return that overwrites a line, a bell, C1 codes) are
 * printed as visible `\u001b`-style escapes. Newlines and tabs are kept where `keepLines` says so.
 */
export function visible(text: string, keepLines = false): string {
  // Direction overrides and isolates (U+202A–U+202E, U+2066–U+2069) too: in a terminal that draws
  // bidirectional text they would reorder the rest of the line (an OAuth client's name before its company).
  const controls = keepLines
    ? /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g
    : /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
  return text.replace(controls, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function printLines(text: string): void {
  const safe = visible(text, true);
  process.stdout.write(safe.endsWith('\n') ? safe : safe + '\n');
}

/**
 * One cell of a table or a `label: value` line: one line, whatever the value holds. Every value
 * printed for people goes through it (or `table`/`details`): a newline in a tenant's text would
 * otherwise forge a line of the operator's output.
 */
export function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (Array.isArray(value)) return value.length ? value.map(cell).join(',') : '-';
  if (typeof value === 'object') return JSON.stringify(value);
  return visible(String(value));
}

/** Aligned columns with a header row; an empty list prints a short note instead. */
export function table(rows: Array<Record<string, unknown>>, columns: Array<[header: string, pick: (row: any) => unknown]>, empty = '(none)'): string {
  if (rows.length === 0) return empty;
  const cells = [columns.map(([header]) => header), ...rows.map((row) => columns.map(([, pick]) => cell(pick(row))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i].length)));
  return cells.map((line) => line.map((text, i) => (i === line.length - 1 ? text : text.padEnd(widths[i]))).join('  ')).join('\n');
}

/** `label: value` lines, labels aligned. */
export function details(pairs: Array<[label: string, value: unknown]>): string {
  const width = Math.max(...pairs.map(([label]) => label.length));
  return pairs.map(([label, value]) => `${(label + ':').padEnd(width + 1)} ${cell(value)}`).join('\n');
}

type ZodIssue = { path?: Array<string | number>; message?: string };

/** tRPC sends a zod failure as the JSON text of its issues; make it one readable line. */
function validationMessage(message: string): string {
  try {
    const issues = JSON.parse(message) as ZodIssue[];
    if (Array.isArray(issues) && issues.length > 0) {
      return issues.map((issue) => (issue.path?.length ? `${issue.path.join('.')}: ${issue.message}` : String(issue.message))).join('; ');
    }
  } catch {
    // Not JSON: an operator error message already meant for people.
  }
  return message;
}

/** Why a fetch failed: the innermost system error code (ECONNREFUSED, ENOTFOUND...) or cause message. */
/** Why a request never got an answer, from the error's causes (ECONNREFUSED, a DNS failure), or null. */
export function networkReason(error: unknown): string | null {
  let reason: string | null = null;
  for (let e: any = (error as any)?.cause, depth = 0; e && depth < 5; e = e.cause, depth++) {
    if (typeof e.code === 'string' && /^E[A-Z_]+$/.test(e.code)) return e.code;
    if (typeof e.message === 'string' && e.message) reason = e.message;
  }
  return reason;
}

function hasCause(error: unknown, type: new (...args: any[]) => Error): boolean {
  for (let e: any = error, depth = 0; e && depth < 5; e = e.cause, depth++) if (e instanceof type) return true;
  return false;
}

function hasName(error: unknown, name: string): boolean {
  for (let e: any = error, depth = 0; e && depth < 5; e = e.cause, depth++) if (e?.name === name) return true;
  return false;
}

export function describeError(error: unknown, url?: string): string {
  const where = url ?? 'the admin endpoint';
  if (error instanceof CliError) return error.message;
  if (error instanceof TRPCClientError) {
    const code: string | undefined = error.data?.code;
    const status: number | undefined = error.meta?.response instanceof Response ? error.meta.response.status : error.data?.httpStatus;
    if (code === 'BAD_REQUEST') return `invalid input: ${validationMessage(error.message)}`;
    if (code === 'NOT_FOUND' || code === 'CONFLICT') return error.message;
    if (code === 'INTERNAL_SERVER_ERROR') return `server error at ${where}: ${error.message}`;
    if (code === 'SERVICE_UNAVAILABLE') return `${where} is unavailable: ${error.message}`;
    if (code === 'PRECONDITION_FAILED') return `not available on ${where}: ${error.message}`;
    // The token check in front of tRPC (api/admin/koa.ts); an older server answered these without a tRPC envelope.
    if (code === 'UNAUTHORIZED' || (!code && status === 401)) return `admin token rejected by ${where} (401): check ADMIN_TOKEN`;
    if (code === 'TOO_MANY_REQUESTS' || (!code && status === 429)) {
      const wait = error.meta?.response instanceof Response ? error.meta.response.headers.get('retry-after') : null;
      return `too many rejected admin tokens from this address (429): retry in ${wait ?? 'a few'} s`;
    }
    if (code) return `${code}: ${error.message}`;
    // Not a tRPC envelope: some other server, or a proxy in front of ours.
    if (status === 426) return `${where} requires HTTPS (426 https_required, production): use the service's https:// URL`;
    if (status) return `unexpected answer from ${where} (HTTP ${status}): is this the workspace service?`;
    // A server answered, with something that is not the admin API's JSON (a web page, another app).
    if (hasCause(error, SyntaxError)) return `unexpected answer from ${where} (not JSON): is this the workspace service?`;
    // The server may have done it all the same: a create repeated blindly could make a second record.
    if (hasName(error, 'TimeoutError')) return `cannot reach ${where}: no answer in time (WSCTL_TIMEOUT_SECONDS); the call may still have completed, check before repeating it`;
    return `cannot reach ${where}: ${networkReason(error) ?? error.message}`;
  }
  if (error instanceof Error) return error.message;
  return String(error);
}

/** One line on stderr and a non-zero exit; WSCTL_DEBUG=1 adds the stack for developers. */
export function reportError(error: unknown, url?: string): void {
  const line = visible(describeError(error, url).replace(/\s*\n\s*/g, ' ').trim());
  process.stderr.write(`error: ${line}\n`);
  if (process.env.WSCTL_DEBUG) process.stderr.write(`${(error as Error)?.stack ?? ''}\n`);
  process.exitCode = 1;
}
