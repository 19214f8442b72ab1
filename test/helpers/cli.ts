// Running the real wsctl as a child process against a test app, as an
// operator would (DESIGN.md, CLI contract: --json prints exactly one JSON
// document; errors are one stderr line and a non-zero exit).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ADMIN_TOKEN, type TestApp } from './app.ts';

const WSCTL = fileURLToPath(new URL('../../cli/wsctl.ts', import.meta.url));

export type Run = { code: number; stdout: string; stderr: string };

export function wsctl(app: TestApp, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [WSCTL, ...args],
      { env: { PATH: process.env.PATH ?? '', ADMIN_URL: app.url, ADMIN_TOKEN, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** --json: stdout is one JSON document and stderr is empty. */
export async function json(app: TestApp, args: string[]): Promise<any> {
  const run = await wsctl(app, [...args, '--json']);
  assert.equal(run.code, 0, `wsctl ${args.join(' ')}: ${run.stderr}`);
  assert.equal(run.stderr, '');
  return JSON.parse(run.stdout);
}

/** A failure: non-zero exit, nothing on stdout, exactly one line on stderr. */
export function assertOneLineError(run: Run, pattern: RegExp): void {
  assert.notEqual(run.code, 0);
  assert.equal(run.stdout, '');
  assert.match(run.stderr, /^error: [^\n]+\n$/);
  assert.match(run.stderr, pattern);
}
