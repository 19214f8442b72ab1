// A web process stopping (SIGTERM, as the platform sends it) finishes the
// requests in flight, an upload included, closes their connections after the
// answer, refuses new connections, and exits 0.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ADMIN_TOKEN, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import * as files from './helpers/forms.ts';
import { freezableRelay, type FreezableRelay } from './helpers/frozen-database.ts';
import { waitFor } from './helpers/wait.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

/** Sends the rest of the body once the server has begun to stop (it logs that before anything else). */
function endOnceStopping(req: http.ClientRequest, output: () => string, rest: Buffer, reject: (error: unknown) => void): void {
  waitFor(() => output().includes('"event":"web.stopping"'), 15_000, 'the server to begin to stop').then(
    () => req.end(rest),
    (error) => {
      req.destroy();
      reject(error);
    },
  );
}

/** A process of the Procfile (`api/server.ts`, `worker/main.ts`) on `databaseUrl`, logging at info; its stdout and stderr in `output()`. */
function spawnProcess(script: string, databaseUrl: string) {
  const child = spawn(process.execPath, [script], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: '0', LOG_LEVEL: 'info', NODE_ENV: 'test', ADMIN_TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return { child, exited, output: () => out };
}

describe('graceful stop of the web process', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  test('SIGTERM mid-upload: the upload completes with 201, new connections are refused, the process exits 0', async () => {
    const t = await seedTenant(app.pool);
    const form = await files.createFormViaAdmin(app.url, t.companyId);
    const { child, exited, output } = spawnProcess('api/server.ts', app.databaseUrl);
    try {
      const port = await new Promise<number>((resolve, reject) => {
        child.stdout.on('data', () => {
          const m = /"event":"web.listening","port":(\d+)/.exec(output());
          if (m) resolve(Number(m[1]));
        });
        child.once('exit', () => reject(new Error('web exited early')));
      });
      const pdf = files.pdf(200_000);
      const head = Buffer.from(
        '--zz\r\nContent-Disposition: form-data; name="answers[email]"\r\n\r\nana@example.com\r\n' +
          '--zz\r\nContent-Disposition: form-data; name="answers[name]"\r\n\r\nAna\r\n' +
          '--zz\r\nContent-Disposition: form-data; name="files[cv]"; filename="cv.pdf"\r\nContent-Type: application/pdf\r\n\r\n',
      );
      const tail = Buffer.from('\r\n--zz--\r\n');
      const body = Buffer.concat([head, pdf, tail]);
      const answer = new Promise<{ status: number; text: string; connection?: string }>((resolve, reject) => {
        const req = http.request(`http://127.0.0.1:${port}/api/v1/forms/${form.id}/submissions`, {
          method: 'POST',
          // The server's 100 Continue says it has the request's headers: the request is in flight.
          headers: { authorization: `Bearer ${t.key}`, 'content-type': 'multipart/form-data; boundary=zz', 'content-length': String(body.length), expect: '100-continue' },
        }, (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode!, text, connection: res.headers.connection }));
        });
        req.on('error', reject);
        req.once('continue', () => {
          // The first half is sent: the platform stops the process; once the stop has begun
          // (logged before anything else happens), the client sends the rest.
          req.write(body.subarray(0, 100_000), () => {
            child.kill('SIGTERM');
            endOnceStopping(req, output, body.subarray(100_000), reject);
          });
        });
        req.flushHeaders();
      });
      const res = await answer;
      assert.equal(res.status, 201, res.text);
      assert.equal(res.connection, 'close', 'the connection is not kept for another request');
      await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'no new connection after the stop began');
      assert.equal(await exited, 0);
    } finally {
      child.kill('SIGKILL');
    }
  });

  test('a body cut off while the process drains is answered and counted 503 (the stop), whatever route reads it: a form upload, a JSON write', async () => {
    const token = 'metrics-token-for-the-drain-test';
    const own = await startTestApp({ METRICS_TOKEN: token });
    try {
      const t = await seedTenant(own.pool);
      const form = await files.createFormViaAdmin(own.url, t.companyId);
      const cutCount = async (route: RegExp) => {
        const text = await (await fetch(`${own.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
        return text.split('\n').filter((line) => line.startsWith('http_requests_total{') && route.test(line) && line.includes('status="503"')).reduce((n, line) => n + Number(line.split(' ').at(-1)), 0);
      };
      /** Sends the headers and part of the body, then hangs up (as a process cut at the end of its drain sees it). */
      const cutShort = (path: string, type: string, part: Buffer, declared: number) =>
        new Promise<void>((resolve) => {
          const req = http.request(`${own.url}${path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${t.key}`, 'content-type': type, 'content-length': String(declared), expect: '100-continue' },
          });
          req.on('error', () => resolve());
          req.once('continue', () => req.write(part, () => req.destroy()));
          req.on('close', () => resolve());
          req.flushHeaders();
        });
      own.deps.lifecycle.draining = true;
      const head = Buffer.from('--zz\r\nContent-Disposition: form-data; name="answers[email]"\r\n\r\nana@example.com\r\n--zz\r\nContent-Disposition: form-data; name="files[cv]"; filename="cv.pdf"\r\nContent-Type: application/pdf\r\n\r\n');
      await cutShort(`/api/v1/forms/${form.id}/submissions`, 'multipart/form-data; boundary=zz', Buffer.concat([head, files.pdf(50_000)]), 700_000);
      await waitFor(async () => (await cutCount(/submissions/)) === 1, 10_000, 'the cut form upload counted 503');
      await cutShort('/api/v1/customers', 'application/json', Buffer.from('{"data":{"name":"Cor'), 5_000);
      await waitFor(async () => (await cutCount(/customers/)) === 1, 10_000, 'the cut JSON write counted 503');
    } finally {
      own.deps.lifecycle.draining = false;
      await own.close();
    }
  });

  // The Procfile runs `npm run web`: npm forwards the signal and the platform signals the whole group,
  // so the process gets it twice; the drain must survive the second, and npm must wait and exit 0.
  for (const target of ['the process group (Heroku)', 'npm alone (a container runtime)'] as const) {
    test(`npm run web, SIGTERM to ${target}: the request in flight completes, npm exits 0 with the server stopped`, async () => {
      const t = await seedTenant(app.pool);
      const npm = spawn('npm', ['run', '--silent', 'web'], {
        cwd: ROOT,
        detached: true, // a process group of its own, as a dyno's
        env: { ...process.env, DATABASE_URL: app.databaseUrl, PORT: '0', NODE_ENV: 'test', ADMIN_TOKEN, LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
      let out = '';
      try {
        const port = await new Promise<number>((resolve, reject) => {
          npm.stdout.on('data', (d) => {
            out += d;
            const m = /"event":"web.listening","port":(\d+)/.exec(out);
            if (m) resolve(Number(m[1]));
          });
          npm.once('exit', () => reject(new Error(`npm run web exited early: ${out}`)));
        });
        const body = Buffer.from(JSON.stringify({ data: { name: 'En vuelo' } }));
        const answer = new Promise<{ status: number; text: string; connection?: string }>((resolve, reject) => {
          const req = http.request(`http://127.0.0.1:${port}/api/v1/customers`, {
            method: 'POST',
            // The server's 100 Continue says it has the request's headers: the request is in flight.
            headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json', 'content-length': String(body.length), expect: '100-continue' },
          }, (res) => {
            let text = '';
            res.on('data', (d) => (text += d));
            res.on('end', () => resolve({ status: res.statusCode!, text, connection: res.headers.connection }));
          });
          req.on('error', reject);
          req.once('continue', () => {
            req.write(body.subarray(0, 5), () => {
              if (target === 'the process group (Heroku)') process.kill(-npm.pid!, 'SIGTERM');
              else npm.kill('SIGTERM');
              endOnceStopping(req, () => out, body.subarray(5), reject);
            });
          });
          req.flushHeaders();
        });
        const res = await answer;
        assert.equal(res.status, 201, res.text);
        assert.equal(res.connection, 'close', 'the connection is not kept for another request');
        assert.equal(await exited, 0, out);
        assert.equal((out.match(/"event":"web.stopping"/g) ?? []).length, 1, 'one stop, whatever the number of signals');
      } finally {
        try {
          process.kill(-npm.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    });
  }
});

describe('stopping while the database hangs (a relay in front of it stops moving bytes)', () => {
  let app: TestApp;
  let relay: FreezableRelay;
  before(async () => {
    app = await startTestApp();
    relay = await freezableRelay(app.databaseUrl);
  });
  after(async () => {
    relay.thaw();
    await relay.close();
    await app.close();
  });

  /** A process of the Procfile against the relay; resolves once `ready` is in its log. */
  async function start(script: string, ready: string) {
    const proc = spawnProcess(script, relay.url);
    await waitFor(() => proc.output().includes(ready) || proc.child.exitCode !== null, 60_000, `${script} ready`);
    assert.equal(proc.child.exitCode, null, proc.output());
    return proc;
  }

  // Before, the pools' end waited on connections the database never answered: the process outlived
  // the platform's 30 s and was SIGKILLed. Now each stops within its bound, and says so when it had to
  // cut the stop short (exit 1). The web process always holds a connection (the key cache's LISTEN), so
  // it always has to; the worker only when a query was on the wire at the freeze (pg-boss polls every
  // few seconds), else its stop completes (exit 0): either way, never past the bound.
  for (const [script, ready, forced] of [
    ['api/server.ts', '"event":"web.listening"', '"event":"web.stop_forced"'],
    ['worker/main.ts', '"event":"worker.started"', '"event":"worker.stop_forced"'],
  ] as const) {
    test(`${script}: SIGTERM exits within its bound (${forced.split(':')[1]} logged when it cut the stop short)`, async () => {
      const proc = await start(script, ready);
      try {
        relay.freeze();
        proc.child.kill('SIGTERM');
        // Bounded by the test only so that a hang fails it instead of stalling the suite (the bound is 30 s, the platform's).
        const code = await Promise.race([proc.exited, new Promise<'hung'>((resolve) => setTimeout(resolve, 45_000, 'hung').unref())]);
        assert.notEqual(code, 'hung', proc.output());
        if (script === 'api/server.ts') assert.equal(code, 1, proc.output());
        assert.equal(proc.output().includes(forced), code === 1, proc.output());
      } finally {
        proc.child.kill('SIGKILL');
        relay.thaw();
      }
    });
  }
});
