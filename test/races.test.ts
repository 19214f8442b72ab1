// Writes that race a change of what they rely on (a concurrency review): each
// test holds a write at a chosen point with a table lock of its own, starts
// the racing change, waits until PostgreSQL shows who waits on whom, then
// lets go and checks what a client can read. Waits are observed in
// pg_stat_activity, never slept on.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { PoolClient } from 'pg';
import sharp from 'sharp';
import { toApiError } from '../api/middleware/request.ts';
import { generateDue } from '../db/money/recurring.ts';
import { transaction } from '../db/pool.ts';
import { client, seedTenant, startTestApp, uploadFile, type TestApp, type Tenant } from './helpers/app.ts';
import { adminMutation } from './helpers/admin.ts';
import { waitFor } from './helpers/wait.ts';
import { processThumbnail } from '../worker/jobs/thumbnail.ts';

describe('races between a write and a change of what it relies on', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  /** Sessions of this database waiting on a lock of this type (`relation`, `advisory`, `transactionid`, `tuple`). */
  const waiting = async (lockType: string) => {
    const { rows } = await app.pool.query(
      `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE NOT l.granted AND l.locktype = $1 AND a.datname = current_database()`,
      [lockType],
    );
    return rows[0].n as number;
  };
  /** Holds `table` against inserts and updates until the returned release is called. */
  const hold = async (table: string) => {
    const blocker: PoolClient = await app.pool.connect();
    await blocker.query('BEGIN');
    await blocker.query(`LOCK TABLE ${table} IN SHARE ROW EXCLUSIVE MODE`);
    return async () => {
      await blocker.query('COMMIT');
      blocker.release();
    };
  };
  const newTenant = async (): Promise<{ t: Tenant; api: ReturnType<typeof client> }> => {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    return { t, api: client(app.baseUrl, t.key) };
  };

  test('two writes committing together whose tables come in opposite orders do not deadlock on the cache versions', async () => {
    const { t, api } = await newTenant();
    const made = async (path: string) => (await api.post(path, { data: { name: 'X' } })).body.data.id as string;
    const [customer1, customer2, lead1, lead2] = [await made('/customers'), await made('/customers'), await made('/leads'), await made('/leads')];
    const begin = async () => {
      const c: PoolClient = await app.pool.connect();
      await c.query('BEGIN');
      return c;
    };
    // Rows of their own; `one` writes customers then leads, `two` leads then customers: their version
    // bumps (deferred triggers) run at COMMIT in those orders.
    const one = await begin();
    await one.query(`UPDATE customers SET name = 'uno' WHERE company_id = $1 AND id = $2`, [t.companyId, customer1]);
    await one.query(`UPDATE leads SET name = 'uno' WHERE company_id = $1 AND id = $2`, [t.companyId, lead1]);
    const two = await begin();
    await two.query(`UPDATE leads SET name = 'dos' WHERE company_id = $1 AND id = $2`, [t.companyId, lead2]);
    await two.query(`UPDATE customers SET name = 'dos' WHERE company_id = $1 AND id = $2`, [t.companyId, customer2]);
    // A third session holds the customers version row, so both commits queue: `one` first, then `two`
    // (leads bumped first). Released, `one` takes customers and wants leads, which `two` would hold:
    // the deadlock a lock per company, taken before any version row, prevents.
    const blocker = await begin();
    await blocker.query(`UPDATE collection_versions SET version = version WHERE company_id = $1 AND collection = 'customers'`, [t.companyId]);
    const blocked = async () => (await waiting('transactionid')) + (await waiting('advisory'));
    const idle = await blocked();
    const outcome = (commit: Promise<unknown>) => commit.then(() => 'committed', (e: { code?: string }) => e.code ?? 'failed');
    const first = outcome(one.query('COMMIT'));
    await waitFor(async () => (await blocked()) > idle, 10_000, 'the first commit to wait');
    const second = outcome(two.query('COMMIT'));
    await waitFor(async () => (await blocked()) > idle + 1, 10_000, 'the second commit to wait');
    await blocker.query('COMMIT');
    const outcomes = await Promise.all([first, second]);
    for (const c of [one, two, blocker]) c.release();
    assert.deepEqual(outcomes, ['committed', 'committed'], 'no 40P01 deadlock');
  });

  test('closing a month waits for a write into it already past its check: what the close answers is what stays', async () => {
    const { t, api } = await newTenant();
    const account = (await api.post('/accounts', { data: { name: 'Banco', kind: 'bank', currency: 'mxn', opening_on: '2026-01-01' } })).body.data;
    const release = await hold('movements');
    let write: Promise<{ status: number }> | undefined;
    let released = false;
    try {
      // The write checks March (open), then waits at its insert.
      write = api.post('/incomes', { data: { account_id: account.id, amount_cents: 100, occurred_at: '2026-03-15T18:00:00Z' } });
      await waitFor(async () => (await waiting('relation')) >= 1, 10_000, 'the write to wait at its insert');
      const close = adminMutation(app.url, 'period.close', { companyId: t.companyId, year: 2026, month: 3 }).then(async (res) => {
        // What a client reads the moment the close answers.
        const incomes = await api.get('/incomes?limit=100');
        return { res, seen: incomes.body.data.length };
      });
      // With the month's lock, the close waits for the write; without it, it would answer now.
      await Promise.race([waitFor(async () => (await waiting('advisory')) >= 1, 10_000, 'the close to wait for the write'), close]);
      await release();
      released = true;
      const [written, closed] = await Promise.all([write, close]);
      assert.equal(written.status, 201);
      assert.equal(closed.res.status, 200, JSON.stringify(closed.res.body));
      assert.equal(closed.seen, 1, 'the write committed before the close answered');
      const late = await api.post('/incomes', { data: { account_id: account.id, amount_cents: 100, occurred_at: '2026-03-16T18:00:00Z' } });
      assert.equal(late.status, 422);
      assert.equal((late as any).body.error, 'period_locked');
    } finally {
      if (!released) await release();
      await write?.catch(() => {});
    }
  });

  test('a change of the time zone waits for a money write that read the old one: no money lands in a month closed in the new zone', async () => {
    const { t, api } = await newTenant();
    // In Kiritimati (UTC+14) 2026-10-31T12:00Z is 1 November (open); in Mexico City it is 31 October (closed).
    assert.equal((await adminMutation(app.url, 'company.update', { id: t.companyId, timezone: 'Pacific/Kiritimati' })).status, 200);
    const account = (await api.post('/accounts', { data: { name: 'Banco', kind: 'bank', currency: 'mxn', opening_on: '2026-01-01' } })).body.data;
    assert.equal((await adminMutation(app.url, 'period.close', { companyId: t.companyId, year: 2026, month: 10 })).status, 200);
    const release = await hold('movements');
    let write: Promise<{ status: number; body: any }> | undefined;
    let released = false;
    try {
      // The write reads Kiritimati, checks November (open), then waits at its insert.
      write = api.post('/incomes', { data: { account_id: account.id, amount_cents: 300, occurred_at: '2026-10-31T12:00:00Z' } });
      await waitFor(async () => (await waiting('relation')) >= 1, 10_000, 'the write to wait at its insert');
      const change = adminMutation(app.url, 'company.update', { id: t.companyId, timezone: 'America/Mexico_City' });
      // With the zone's lock the change waits for the write; without it, it would answer now.
      await Promise.race([waitFor(async () => (await waiting('advisory')) >= 1, 10_000, 'the change to wait for the write'), change]);
      await release();
      released = true;
      const [written, changed] = await Promise.all([write, change]);
      assert.equal(written.status, 201, JSON.stringify(written.body));
      // The write went in first, in Kiritimati's November: the change would move it into closed October.
      assert.equal(changed.status, 400, JSON.stringify(changed.body));
      assert.match(JSON.stringify(changed.body), /closed month/);
      const { rows } = await app.pool.query('SELECT timezone FROM companies WHERE id = $1', [t.companyId]);
      assert.equal(rows[0].timezone, 'Pacific/Kiritimati', 'the refused change applied nothing');
      const november = await api.get('/reports/income-statement?start_on=2026-11-01&end_on=2026-11-01');
      assert.equal(november.status, 200);
      assert.deepEqual(
        november.body.data.currencies.map((c: any) => [c.currency, c.income.total_cents]),
        [['mxn', 300]],
        'the income is in the day the zone gives it',
      );
    } finally {
      if (!released) await release();
      await write?.catch(() => {});
    }
  });

  test('archiving an account waits for a payment into it already past its check; later ones are refused', async () => {
    const { api } = await newTenant();
    const account = (await api.post('/accounts', { data: { name: 'Caja', kind: 'cash', currency: 'mxn' } })).body.data;
    const release = await hold('movements');
    let released = false;
    let write: Promise<{ status: number }> | undefined;
    try {
      write = api.post('/incomes', { data: { account_id: account.id, amount_cents: 250, occurred_at: new Date().toISOString() } });
      await waitFor(async () => (await waiting('relation')) >= 1, 10_000, 'the write to wait at its insert');
      const archive = api.patch(`/accounts/${account.id}`, { data: { archived: true } }).then(async (res) => ({ res, balance: (await api.get(`/accounts/${account.id}`)).body.data.balance_cents }));
      await Promise.race([waitFor(async () => (await waiting('transactionid')) + (await waiting('tuple')) >= 1, 10_000, 'the archive to wait for the write'), archive]);
      await release();
      released = true;
      const [written, archived] = await Promise.all([write, archive]);
      assert.equal(written.status, 201);
      assert.equal(archived.res.status, 200);
      assert.equal(archived.balance, 250, 'the payment was in before the archive answered');
      const late = await api.post('/incomes', { data: { account_id: account.id, amount_cents: 1, occurred_at: new Date().toISOString() } });
      assert.equal(late.status, 422);
    } finally {
      if (!released) await release();
      await write?.catch(() => {});
    }
  });

  test('a product written while its brand is renamed ends with the new name in its snapshot, and the new slug finds it', async () => {
    const { api } = await newTenant();
    const brand = (await api.post('/brands', { data: { name: 'Marca Vieja' } })).body.data;
    assert.ok(brand?.id);
    const release = await hold('products');
    let released = false;
    let create: Promise<{ status: number; body: any }> | undefined;
    try {
      create = api.post('/products', { data: { name: 'Taza de carrera', brand_id: brand.id, prices_cents: { mxn: 1000 } } });
      await waitFor(async () => (await waiting('relation')) >= 1, 10_000, 'the create to wait at its insert');
      const rename = api.patch(`/brands/${brand.id}`, { data: { name: 'Marca Nueva', slug: 'marca-nueva' } });
      await Promise.race([waitFor(async () => (await waiting('transactionid')) + (await waiting('tuple')) + (await waiting('relation')) >= 2, 10_000, 'the rename to wait'), rename]);
      await release();
      released = true;
      const [created, renamed] = await Promise.all([create, rename]);
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
      const product = (await api.get(`/products/${created.body.data.id}`)).body.data;
      assert.deepEqual(product.brand, { id: brand.id, name: 'Marca Nueva', slug: 'marca-nueva' });
      const bySlug = (await api.get('/products?brand=marca-nueva')).body.data;
      assert.deepEqual(bySlug.map((p: any) => p.id), [created.body.data.id]);
    } finally {
      if (!released) await release();
      await create?.catch(() => {});
    }
  });

  test('a booking link created while its host is removed ends switched off, as the host\'s other links', async () => {
    const { t, api } = await newTenant();
    const member = (await api.post('/users', { data: { email: `anfitrion-${Date.now()}@example.com`, first_name: 'Host', last_name: 'Uno' } })).body.data;
    assert.ok(member?.id, 'a member to remove');
    const link = (slug: string) => ({ user_id: member.id, slug, title: 'Cita', duration_minutes: 30 });
    const before = await api.post('/booking-links', { data: link('antes') });
    assert.equal(before.status, 201, JSON.stringify(before.body));
    const release = await hold('booking_links');
    let released = false;
    let create: Promise<{ status: number; body: any }> | undefined;
    try {
      create = api.post('/booking-links', { data: link('durante') });
      await waitFor(async () => (await waiting('relation')) >= 1, 10_000, 'the create to wait at its insert');
      const removal = api.delete(`/users/${member.id}`);
      await Promise.race([waitFor(async () => (await waiting('transactionid')) + (await waiting('tuple')) + (await waiting('relation')) >= 2, 10_000, 'the removal to wait'), removal]);
      await release();
      released = true;
      const [created, removed] = await Promise.all([create, removal]);
      assert.equal(removed.status, 204);
      if (created.status === 201) {
        const read = await api.get(`/booking-links/${created.body.data.id}`);
        assert.equal(read.body.data.active, false, 'the link made during the removal is off');
      } else {
        assert.equal(created.body.error, 'invalid_user');
      }
      assert.equal((await api.get(`/booking-links/${before.body.data.id}`)).body.data.active, false);
    } finally {
      if (!released) await release();
      await create?.catch(() => {});
    }
    void t;
  });

  test('a membership added (wsctl user add-membership) while the person\'s last one is removed: refused, never a membership of a deleted person', async () => {
    const { t, api } = await newTenant();
    const other = await newTenant();
    const member = (await api.post('/users', { data: { email: `se-va-${Date.now()}@example.com`, first_name: 'Se', last_name: 'Va' } })).body.data;
    assert.ok(member?.id, 'a member to remove');
    // The removal is held after it has locked the person and decided they leave the service (at its update of their links).
    const release = await hold('booking_links');
    let released = false;
    let removal: Promise<{ status: number }> | undefined;
    try {
      removal = api.delete(`/users/${member.id}`);
      await waitFor(async () => (await waiting('relation')) >= 1, 10_000, 'the removal to wait at its links');
      const add = adminMutation(app.url, 'user.addMembership', { id: member.id, companyId: other.t.companyId });
      await Promise.race([waitFor(async () => (await waiting('transactionid')) + (await waiting('tuple')) >= 1, 10_000, 'the add to wait for the removal'), add]);
      await release();
      released = true;
      const [removed, added] = await Promise.all([removal, add]);
      assert.equal(removed.status, 204);
      assert.equal(added.status, 404, JSON.stringify(added.body));
      assert.match(added.error.message, /not found/);
      const { rows } = await app.pool.query('SELECT company_id FROM memberships WHERE user_id = $1', [member.id]);
      assert.deepEqual(rows, [], 'no membership is left on a person who left the service');
    } finally {
      if (!released) await release();
      await removal?.catch(() => {});
    }
    void t;
  });

  test('deleting a booking link while one of its bookings is rescheduled: both finish, no deadlock', async () => {
    const { t, api } = await newTenant();
    const made = await api.post('/booking-links', {
      data: { user_id: t.ownerId, slug: 'cita', title: 'Cita', duration_minutes: 30, timezone: 'UTC', minimum_notice_minutes: 0, weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' }] },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const slots = (await api.get(`/booking-links/${made.body.data.id}/slots`)).body.data.days.flatMap((d: any) => d.slots);
    const booking = (await api.post('/bookings', { data: { booking_link_id: made.body.data.id, starts_at: slots[0].starts_at, booker: { name: 'Ana', email: 'ana@example.com' } } })).body.data;
    // The booking's row held, so the reschedule and the delete both queue on it: the reschedule first.
    const holder: PoolClient = await app.pool.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM bookings WHERE id = $1 FOR UPDATE', [booking.id]);
    let released = false;
    try {
      const reschedule = api.post(`/bookings/${booking.id}/reschedule`, { data: { starts_at: slots[1].starts_at } });
      await waitFor(async () => (await waiting('transactionid')) + (await waiting('tuple')) >= 1, 10_000, 'the reschedule to wait for the booking');
      const removal = api.delete(`/booking-links/${made.body.data.id}`);
      await waitFor(async () => (await waiting('transactionid')) + (await waiting('tuple')) >= 2, 10_000, 'the delete to wait too');
      await holder.query('COMMIT');
      released = true;
      const [rescheduled, removed] = await Promise.all([reschedule, removal]);
      assert.equal(rescheduled.status, 201, JSON.stringify((rescheduled as any).body));
      assert.equal(removed.status, 204, JSON.stringify((removed as any).body));
      const moved = (await api.get(`/bookings/${(rescheduled as any).body.data.id}`)).body.data;
      assert.equal(moved.booking_link_id, null, 'the booking outlives its link');
    } finally {
      if (!released) await holder.query('COMMIT');
      holder.release();
    }
  });

  test('a thumbnail finished while its image is being replaced: the replacement wins, no deadlock, no stray thumbnail', async () => {
    const { t, api } = await newTenant();
    const product = (await api.post('/products', { data: { name: 'Silla', prices_cents: { mxn: 100 } } })).body.data;
    const upload = async (color: string) => {
      const bytes = await sharp({ create: { width: 64, height: 48, channels: 3, background: color } }).png().toBuffer();
      return uploadFile(app.baseUrl, t.key, `/products/${product.id}/image`, { bytes, filename: 'foto.png' });
    };
    assert.equal((await upload('#a00')).status, 200);
    const mediaOf = async () => (await app.pool.query('SELECT image_media_id AS id, image_url, thumbnail_url FROM products WHERE id = $1', [product.id])).rows[0];
    const first = (await mediaOf()).id;
    // The replacement locks the product, then waits at its media insert; the thumbnail of the first image then
    // queues behind it. Taking the media row before the product would deadlock here (the replacement deletes it).
    const release = await hold('media');
    let released = false;
    try {
      const replacement = upload('#00a');
      await waitFor(async () => (await waiting('relation')) >= 1, 10_000, 'the replacement to wait at its media insert');
      const thumbnail = processThumbnail({ pool: app.pool, config: app.config, blobs: app.deps.blobs }, first);
      await waitFor(async () => (await waiting('relation')) >= 2, 10_000, 'the thumbnail to wait too');
      await release();
      released = true;
      const [replaced, outcome] = await Promise.all([replacement, thumbnail]);
      assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
      assert.equal(outcome, 'gone');
      const now = await mediaOf();
      assert.notEqual(now.id, first);
      assert.equal(now.image_url, replaced.body.data.image_url);
      assert.equal(now.thumbnail_url, null, 'the old image\'s thumbnail is not shown on the new one');
      const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM blobs WHERE company_id = $1', [t.companyId]);
      assert.equal(rows[0].n, 1, 'only the new original is stored: the first image and its late thumbnail are gone');
      assert.equal(await processThumbnail({ pool: app.pool, config: app.config, blobs: app.deps.blobs }, now.id), 'done');
      assert.match((await mediaOf()).thumbnail_url, /-thumb\.webp$/);
    } finally {
      if (!released) await release();
    }
  });

  test('money writes that touch one day\'s ledger rows in different orders do not deadlock: a payment of a pending income while a paid one is created, deleted or moved', async () => {
    const { api } = await newTenant();
    const account = (await api.post('/accounts', { data: { name: 'Banco', kind: 'bank', currency: 'mxn' } })).body.data;
    const now = new Date().toISOString();
    const income = async (status: 'paid' | 'pending', amount = 100) => {
      const res = await api.post('/incomes', { data: { account_id: account.id, amount_cents: amount, occurred_at: now, status } });
      assert.equal(res.status, 201, res.text);
      return res.body.data.id as string;
    };
    // Each round pays one pending income (cash_in, then receivable) while another write takes the
    // same rows in its own order: a paid income created (income and receivable, then cash_in and
    // receivable), one deleted (all its lines undone), one moved to another category.
    const statuses: number[] = [];
    let expected = 0;
    for (let round = 0; round < 24; round++) {
      const pending = await income('pending');
      const other = round % 3 === 0 ? null : await income('paid', 7);
      const [pay, race] = await Promise.all([
        api.post(`/incomes/${pending}/payments`, { data: { amount_cents: 100, paid_at: now } }),
        other === null ? api.post('/incomes', { data: { account_id: account.id, amount_cents: 1, occurred_at: now } })
        : round % 3 === 1 ? api.delete(`/incomes/${other}`)
        : api.patch(`/incomes/${other}`, { data: { category: 'otra' } }),
      ]);
      statuses.push(pay.status, race.status);
      expected += 100 + (other === null ? 1 : round % 3 === 1 ? 0 : 7);
    }
    assert.deepEqual([...new Set(statuses)].sort(), [200, 201, 204], `statuses: ${statuses.join(' ')}`);
    assert.equal((await api.get(`/accounts/${account.id}`)).body.data.balance_cents, expected);
  });

  test('a recurring series catching up several days and a paid income spanning two of them do not deadlock', async () => {
    const { t, api } = await newTenant();
    const account = (await api.post('/accounts', { data: { name: 'Banco', kind: 'bank', currency: 'mxn', opening_on: '2026-01-01' } })).body.data;
    // Occurrences are dated at noon in Mexico City (18:00Z): March 1, 2 and 3, category renta.
    const series = await api.post('/recurring-transactions', { data: { type: 'income', account_id: account.id, amount_cents: 100, category: 'renta', frequency: 'daily', starts_on: '2026-03-01', ends_count: 3 } });
    assert.equal(series.status, 201, series.text);
    // March 2's renta row exists, and a third session holds it.
    await api.post('/incomes', { data: { account_id: account.id, amount_cents: 5, category: 'renta', occurred_at: '2026-03-02T18:00:00Z' } });
    const blocker: PoolClient = await app.pool.connect();
    await blocker.query('BEGIN');
    await blocker.query(`UPDATE ledger_daily SET amount_cents = amount_cents WHERE company_id = $1 AND line = 'income' AND key = 'renta' AND day = '2026-03-02'`, [t.companyId]);
    const idle = await waiting('transactionid');
    // The catch-up gets as far as March 2 and waits; then a paid income dated March 1 and paid March 3
    // takes March 3's cash row and waits for March 1's renta row, which the catch-up would hold had it
    // written March 1 already (it would then want March 3's cash row: a cycle, one of them a 40P01).
    const catchUp = transaction(app.pool, (c) => generateDue(c, series.body.data.id, '2026-03-03')).then((r) => r, (e: { code?: string }) => e.code ?? 'failed');
    await waitFor(async () => (await waiting('transactionid')) > idle, 10_000, 'the catch-up to wait');
    const paid = api.post('/incomes', { data: { account_id: account.id, amount_cents: 1_000, category: 'renta', occurred_at: '2026-03-01T18:00:00Z', paid_at: '2026-03-03T18:00:00Z' } });
    await waitFor(async () => (await waiting('transactionid')) > idle + 1, 10_000, 'the paid income to wait');
    await blocker.query('COMMIT');
    blocker.release();
    const [made, answer] = await Promise.all([catchUp, paid]);
    assert.deepEqual(made, { made: 3, more: false }, 'no 40P01 in the catch-up');
    assert.equal(answer.status, 201, answer.text);
    assert.equal((await api.get(`/accounts/${account.id}`)).body.data.balance_cents, 3 * 100 + 5 + 1_000);
  });

  test('a record a write names, deleted between its check and its insert, is 422 naming the field, not a 500', async () => {
    const { t } = await newTenant();
    const error = await app.pool
      .query("INSERT INTO movements (id, company_id, account_id, direction, amount_cents, currency, occurred_at, status) VALUES ('0123456789abcdef01234567', $1, 'ffffffffffffffffffffffff', 'income', 1, 'mxn', now(), 'paid')", [t.companyId])
      .then(() => null, (e: unknown) => e);
    assert.equal((error as { code?: string })?.code, '23503', String(error));
    const answer = toApiError(error);
    assert.equal(answer?.code, 'validation_failed');
    assert.deepEqual(answer?.extra.errors, { account_id: ['no existe en la empresa'] });
  });
});
