// Form emails are sent with no database transaction open (issue 13): the
// action is claimed (`sending`, attempts + 1, a lease) and committed before
// the SMTP conversation, and marked done after it. A real SMTP server holds
// the DATA phase while the test looks at pg_stat_activity; the lease is
// driven by hand through processSubmission.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { createPool, type Pool } from '../db/pool.ts';
import { processSubmission, SEND_LEASE_SECONDS } from '../worker/jobs/form-post-actions.ts';
import { startWorker, type Worker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { createFormViaAdmin, sampleFormFile } from './helpers/forms.ts';
import { waitFor } from './helpers/wait.ts';

/** An SMTP server whose DATA phase waits, while `held`, until `release()`. */
async function startHoldingSmtp() {
  const received: ParsedMail[] = [];
  let open: () => void = () => {};
  let gate: Promise<void> | null = null;
  const state = { held: false, waiting: 0 };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        if (gate) {
          state.waiting++;
          await gate;
          state.waiting--;
        }
        received.push(await simpleParser(Buffer.concat(chunks)));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    state,
    hold: () => {
      gate = new Promise<void>((resolve) => (open = resolve));
    },
    release: () => {
      gate = null;
      open();
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const WORKER = 'workspace:lease-test-worker';

async function actionRow(pool: Pool, submissionId: string) {
  const { rows } = await pool.query(
    `SELECT status, attempts, lease_until > now() AS leased FROM form_submission_actions WHERE submission_id = $1 AND action = 'email'`,
    [submissionId],
  );
  return rows[0] as { status: string; attempts: number; leased: boolean | null };
}

describe('form emails: no transaction is held open while the SMTP server takes the message', () => {
  let app: TestApp;
  let tenant: Tenant;
  let smtp: Awaited<ReturnType<typeof startHoldingSmtp>>;
  let form: { id: string };
  let api: ReturnType<typeof client>;

  before(async () => {
    smtp = await startHoldingSmtp();
    app = await startTestApp();
    tenant = await seedTenant(app.pool);
    api = client(app.baseUrl, tenant.key);
    form = await createFormViaAdmin(app.url, tenant.companyId, sampleFormFile({ slug: 'correo-lento', post_actions: { lead: false, email: { to: ['ventas@empresa.example'] } } }));
  });
  after(async () => {
    smtp?.release();
    await app?.close();
    await smtp?.close();
  });

  const submit = async (name: string): Promise<string> => {
    const res = await api.post(`/forms/${form.id}/submissions`, { data: { answers: { email: `${name.toLowerCase()}@example.com`, name } } });
    assert.equal(res.status, 201, res.text);
    return res.body.data.id;
  };

  test('while DATA is held, no backend of the worker is idle in transaction and the claim is already committed', async () => {
    // The worker on pools of its own, named, so its backends can be told from the test's.
    const pool = createPool(app.databaseUrl, 4, `${WORKER}:jobs`);
    let worker: Worker | undefined;
    smtp.hold();
    try {
      worker = await startWorker({ ...app.config, smtpUrl: smtp.url }, pool, app.databaseUrl, {
        boss: { supervise: false, schedule: false, application_name: `${WORKER}:pg-boss` },
      });
      const id = await submit('Lenta');
      await waitFor(() => smtp.state.waiting === 1 || null, 30_000, 'the SMTP server to hold the DATA phase');

      const { rows } = await app.pool.query<{ application_name: string; state: string; query: string }>(
        `SELECT application_name, state, query FROM pg_stat_activity
          WHERE datname = current_database() AND application_name LIKE $1 AND state LIKE 'idle in transaction%'`,
        [`${WORKER}:%`],
      );
      assert.deepEqual(rows, [], 'no transaction of the worker stays open during the send');
      const { rows: anywhere } = await app.pool.query(
        `SELECT application_name, query FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
      );
      assert.deepEqual(anywhere, [], 'nor any other backend of this database');
      // The claim was committed before the conversation: another connection sees it.
      const claimed = await actionRow(app.pool, id);
      assert.deepEqual(claimed, { status: 'sending', attempts: 1, leased: true });
      assert.equal((await api.get(`/forms/${form.id}/submissions/${id}`)).body.data.status, 'received');

      smtp.release();
      const done = await waitFor(async () => {
        const row = await actionRow(app.pool, id);
        return row.status === 'done' && row;
      }, 30_000, 'the email action to be done');
      assert.deepEqual(done, { status: 'done', attempts: 1, leased: null });
      const s = await waitFor(async () => {
        const r = (await api.get(`/forms/${form.id}/submissions/${id}`)).body.data;
        return r.status !== 'received' && r;
      }, 30_000, 'the submission to settle');
      assert.equal(s.status, 'processed');
      assert.equal(smtp.received.filter((m) => m.messageId === `<form-${id}-email@${new URL(app.config.siteUrl).hostname}>`).length, 1);
    } finally {
      smtp.release();
      await worker?.stop();
      await pool.end();
    }
  });

  test('an action being sent under a live lease is left alone: the job asks to be retried and nothing is sent', async () => {
    const id = await submit('Ocupada');
    await app.pool.query(
      `UPDATE form_submission_actions SET status = 'sending', attempts = 1, lease_until = now() + make_interval(secs => $2) WHERE submission_id = $1`,
      [id, SEND_LEASE_SECONDS],
    );
    const before = smtp.received.length;
    const deps = { pool: app.pool, config: { ...app.config, smtpUrl: smtp.url }, blobs: app.deps.blobs };
    await assert.rejects(processSubmission(deps, { submissionId: id, companyId: tenant.companyId }), /se está enviando en otra ejecución/);
    assert.equal(smtp.received.length, before, 'nothing sent');
    assert.deepEqual(await actionRow(app.pool, id), { status: 'sending', attempts: 1, leased: true });
    assert.equal((await api.get(`/forms/${form.id}/submissions/${id}`)).body.data.status, 'received', 'not settled while sending');
  });

  test('a send whose run died (lease passed) is claimed again and sent with the same Message-ID', async () => {
    const id = await submit('Caida');
    // The state a run leaves when it dies after the claim: sending, attempt 1, lease run out.
    await app.pool.query(`UPDATE form_submission_actions SET status = 'sending', attempts = 1, lease_until = now() - interval '1 second' WHERE submission_id = $1`, [id]);
    const deps = { pool: app.pool, config: { ...app.config, smtpUrl: smtp.url }, blobs: app.deps.blobs };
    await processSubmission(deps, { submissionId: id, companyId: tenant.companyId });
    assert.deepEqual(await actionRow(app.pool, id), { status: 'done', attempts: 2, leased: null });
    const sent = smtp.received.filter((m) => m.messageId === `<form-${id}-email@${new URL(app.config.siteUrl).hostname}>`);
    assert.equal(sent.length, 1, 'sent once by the retry, under the fixed Message-ID');
    assert.equal((await api.get(`/forms/${form.id}/submissions/${id}`)).body.data.status, 'processed');
    // A later run of the same job finds nothing open and sends nothing more.
    await processSubmission(deps, { submissionId: id, companyId: tenant.companyId });
    assert.equal(smtp.received.filter((m) => m.messageId === `<form-${id}-email@${new URL(app.config.siteUrl).hostname}>`).length, 1);
  });
});
