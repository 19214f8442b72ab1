// Lists read timestamps as ISO strings straight from PostgreSQL's text
// (db/timestamps.ts ISO_TIMESTAMPS); single reads go through Date and iso(). Both
// must give the same string for every value, in any session time zone.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { iso, ISO_TIMESTAMPS, isoFromTimestamptz } from '../db/timestamps.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';

const VALUES = [
  '2026-11-24 02:21:48.123456+00',
  '2026-11-24 02:21:48.999999+00', // dropped, not rounded, as a Date does
  '2026-11-24 02:21:48.1+00',
  '2026-11-24 02:21:48.12+00',
  '2026-11-24 02:21:48+00',
  '2000-02-29 23:59:59.5+00',
  '1970-01-01 00:00:00+00',
  '2026-03-29 01:30:00.25+02',
  '0044-03-15 12:00:00+00',
  '0044-03-15 12:00:00+00 BC',
  '12345-01-01 00:00:00.5+00',
];

describe('timestamps as ISO strings', () => {
  let db: pg.Client;
  before(async () => {
    db = new pg.Client({ connectionString: process.env.TEST_SERVER_URL });
    await db.connect();
  });
  after(() => db.end());

  for (const zone of ['UTC', 'America/Mexico_City', 'Asia/Kolkata']) {
    test(`the same string as through a Date, in a ${zone} session`, async () => {
      await db.query(`SET TimeZone = '${zone}'`);
      await db.query(`SET DateStyle = 'ISO, MDY'`);
      const values = VALUES.map((_, i) => `$${i + 1}::timestamptz AS v${i}`).join(', ');
      const [viaDate] = (await db.query(`SELECT ${values}`, VALUES)).rows;
      const [viaText] = (await db.query({ text: `SELECT ${values}`, values: VALUES, types: ISO_TIMESTAMPS })).rows;
      VALUES.forEach((value, i) => {
        assert.ok(viaDate[`v${i}`] instanceof Date);
        assert.equal(typeof viaText[`v${i}`], 'string', value);
        assert.equal(viaText[`v${i}`], iso(viaDate[`v${i}`]), `${value} in ${zone}`);
      });
    });
  }

  for (const style of ['SQL, DMY', 'Postgres, MDY', 'German']) {
    test(`a non-ISO DateStyle (${style}): whatever pg's own parser makes of it, as before`, async () => {
      await db.query(`SET TimeZone = 'UTC'`);
      await db.query(`SET DateStyle = '${style}'`);
      try {
        const values = VALUES.map((_, i) => `$${i + 1}::timestamptz AS v${i}`).join(', ');
        const [viaDate] = (await db.query(`SELECT ${values}`, VALUES)).rows;
        const [viaText] = (await db.query({ text: `SELECT ${values}`, values: VALUES, types: ISO_TIMESTAMPS })).rows;
        VALUES.forEach((value, i) => {
          const before = viaDate[`v${i}`];
          const valid = before instanceof Date && !Number.isNaN(before.getTime());
          assert.deepEqual(viaText[`v${i}`], valid ? before.toISOString() : before, `${value} with DateStyle ${style}`);
        });
      } finally {
        await db.query(`SET DateStyle = 'ISO, MDY'`);
      }
    });
  }

  test('other types keep their parsers; infinity comes back as pg parses it', async () => {
    await db.query(`SET TimeZone = 'UTC'`);
    const { rows: [row] } = await db.query({
      text: `SELECT 'infinity'::timestamptz AS inf, '-infinity'::timestamptz AS ninf, 42::bigint AS n, '{"a":1}'::jsonb AS j, true AS b, '2026-11-24'::date AS d`,
      types: ISO_TIMESTAMPS,
    });
    const { rows: [plain] } = await db.query(`SELECT 'infinity'::timestamptz AS inf, '-infinity'::timestamptz AS ninf`);
    assert.equal(row.inf, plain.inf);
    assert.equal(row.ninf, plain.ninf);
    assert.equal(row.n, 42);
    assert.deepEqual(row.j, { a: 1 });
    assert.equal(row.b, true);
    assert.ok(row.d instanceof Date);
  });

  test('iso() keeps a canonical string and normalises anything else', () => {
    assert.equal(iso('2026-11-24T02:21:48.123Z'), '2026-11-24T02:21:48.123Z');
    assert.equal(iso('2026-11-24T02:21:48Z'), '2026-11-24T02:21:48.000Z');
    assert.equal(iso('2026-11-24 02:21:48.123+01'), '2026-11-24T01:21:48.123Z');
    assert.equal(isoFromTimestamptz('2026-11-24 02:21:48.7+00'), '2026-11-24T02:21:48.700Z');
    assert.equal(isoFromTimestamptz('2026-11-24 02:21:48.123456+00'), '2026-11-24T02:21:48.123Z');
    assert.equal(isoFromTimestamptz('2026-11-24 02:21:48.123+00'), '2026-11-24T02:21:48.123Z', 'milliseconds only: a created_at (migration 103)');
    assert.equal(isoFromTimestamptz('2026-11-24 02:21:48.12+00'), '2026-11-24T02:21:48.120Z');
    assert.equal(isoFromTimestamptz('2026-11-24 02:21:48.123456+01'), '2026-11-24T01:21:48.123Z');
  });
});

describe('a list and a single read give the same timestamps', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  test('customers: created_at and updated_at agree between GET /customers and GET /customers/:id', async () => {
    const { key } = await seedTenant(app.pool);
    const api = client(app.baseUrl, key);
    const created = await api.post('/customers', { data: { name: 'Fechas' } });
    assert.equal(created.status, 201, created.text);
    const one = await api.get(`/customers/${created.body.data.id}`);
    const list = await api.get('/customers');
    const listed = list.body.data.find((c: { id: string }) => c.id === created.body.data.id);
    for (const field of ['created_at', 'updated_at']) {
      assert.match(listed[field], /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.equal(listed[field], one.body.data[field], field);
    }
  });
});
