// Migrations are applied once each, in order, even when two processes start
// migrating the same empty database at the same moment.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import pg from 'pg';
import { migrate, migrationFiles } from '../db/migrate.ts';
import { createPool, type Pool } from '../db/pool.ts';

/** A database of its own for a test, dropped afterwards; `url` lets a test open more pools on it. */
async function withScratchDatabase(fn: (pool: Pool, url: string) => Promise<void>): Promise<void> {
  const server = process.env.TEST_SERVER_URL!;
  const name = `ws_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  const pool = createPool(url.toString(), 2);
  try {
    await fn(pool, url.toString());
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await admin.end();
  }
}

describe('migration runner', () => {
  test('two migration files with one number are refused, naming both: one of them would never run', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'ws-migrations-'));
    try {
      for (const name of ['095_a.sql', '096_from_one_branch.sql', '096_from_another.sql', '097_c.sql']) await writeFile(path.join(dir, name), 'SELECT 1;');
      await assert.rejects(migrationFiles(dir), /two migrations share the number 096 \(096_from_another\.sql, 096_from_one_branch\.sql\)/);
      await rm(path.join(dir, '096_from_another.sql'));
      assert.deepEqual(await migrationFiles(dir), ['095_a.sql', '096_from_one_branch.sql', '097_c.sql']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('two concurrent migrators on an empty database apply every migration exactly once', async () => {
    await withScratchDatabase(async (a, url) => {
      const b = createPool(url, 2);
      try {
        const [first, second] = await Promise.all([migrate(a), migrate(b)]);
        const files = (await readdir(new URL('../db/migrations/', import.meta.url))).filter((f) => f.endsWith('.sql')).sort();
        assert.deepEqual([...first, ...second].sort(), files, 'each file applied by exactly one of them');
        const { rows } = await a.query('SELECT name FROM schema_migrations ORDER BY id');
        assert.deepEqual(rows.map((r) => r.name), files);
        assert.deepEqual(await migrate(a), [], 'a third run has nothing to do');
      } finally {
        await b.end();
      }
    });
  });

  test('087 switches off the links of hosts no longer members and unnames deleted links; 089 spells stored zones as IANA does', async () => {
    await withScratchDatabase(async (pool) => {
      await migrate(pool, { upTo: 86 });
      const [company, member, removed, kept, orphaned, event, gone] = [1, 2, 3, 4, 5, 6, 7].map((n) => String(n).padStart(24, '0'));
      await pool.query(`INSERT INTO companies (id, name, slug, timezone) VALUES ($1, 'Vieja', 'vieja', 'america/mexico_city')`, [company]);
      for (const [id, email] of [[member, 'm@example.com'], [removed, 'r@example.com']]) await pool.query('INSERT INTO users (id, email) VALUES ($1, $2)', [id, email]);
      await pool.query('INSERT INTO memberships (company_id, user_id) VALUES ($1, $2)', [company, member]);
      await pool.query(`INSERT INTO booking_links (id, company_id, user_id, slug, title, duration_minutes, timezone) VALUES ($1, $2, $3, 'a', 'A', 30, 'europe/madrid')`, [kept, company, member]);
      await pool.query(`INSERT INTO booking_links (id, company_id, user_id, slug, title, duration_minutes) VALUES ($1, $2, $3, 'b', 'B', 30)`, [orphaned, company, removed]);
      await pool.query(
        `INSERT INTO calendar_events (id, company_id, user_id, title, starts_at, ends_at, booking_link_id, timezone)
         VALUES ($1, $2, $3, 'Reserva', now(), now() + interval '1 hour', $4, '+05:00')`,
        [event, company, member, gone],
      );
      const applied = await migrate(pool);
      assert.ok(applied.includes('087_booking_link_hosts.sql') && applied.includes('089_time_zone_names.sql'), applied.join());
      const { rows: links } = await pool.query('SELECT id, active, timezone FROM booking_links ORDER BY id');
      assert.deepEqual(links.map((l) => [l.id, l.active, l.timezone]), [[kept, true, 'Europe/Madrid'], [orphaned, false, 'America/Mexico_City']]);
      const { rows: events } = await pool.query('SELECT booking_link_id, timezone FROM calendar_events');
      assert.deepEqual([events[0].booking_link_id, events[0].timezone], [null, '+05:00'], 'an offset has no IANA name to take');
      assert.equal((await pool.query('SELECT timezone FROM companies')).rows[0].timezone, 'America/Mexico_City');
      // The new foreign key: a deleted link is unnamed on its events.
      await pool.query(`UPDATE calendar_events SET booking_link_id = $1`, [kept]);
      await pool.query('DELETE FROM booking_links WHERE id = $1', [kept]);
      assert.equal((await pool.query('SELECT booking_link_id FROM calendar_events')).rows[0].booking_link_id, null);
    });
  });

  test('103: the tables listed in created_at order take it to the millisecond; rows stored before are left as they were', async () => {
    await withScratchDatabase(async (pool) => {
      await migrate(pool, { upTo: 102 });
      const id = (n: number) => String(n).padStart(24, '0');
      await pool.query(`INSERT INTO companies (id, name, slug) VALUES ($1, 'Tiempos', 'tiempos')`, [id(1)]);
      await pool.query(`INSERT INTO customers (id, company_id, name, created_at) VALUES ($1, $2, 'Antes', '2026-11-29 07:00:00.123456+00')`, [id(2), id(1)]);
      await migrate(pool);
      await pool.query(`INSERT INTO customers (id, company_id, name) VALUES ($1, $2, 'Después')`, [id(3), id(1)]);
      const { rows } = await pool.query(`SELECT id, created_at = date_trunc('milliseconds', created_at) AS whole FROM customers ORDER BY id`);
      assert.deepEqual(rows.map((r) => [r.id, r.whole]), [[id(2), false], [id(3), true]]);
      // Every table a list pages in created_at order (its (…, created_at DESC, id DESC) index), and the
      // members' and grants' lists: a new one made with a plain now() default fails here.
      const { rows: plain } = await pool.query(`
        SELECT DISTINCT c.table_name FROM information_schema.columns c
         WHERE c.table_schema = current_schema() AND c.column_name = 'created_at'
           AND c.column_default IS DISTINCT FROM $1
           AND (c.table_name IN ('users', 'oauth_grants')
                OR EXISTS (SELECT 1 FROM pg_indexes i WHERE i.schemaname = c.table_schema AND i.tablename = c.table_name AND i.indexdef LIKE '%created_at DESC, id DESC%'))`,
        [`date_trunc('milliseconds'::text, now())`]);
      assert.deepEqual(plain, [], 'a listed table whose created_at default is not whole milliseconds');
    });
  });

  test('108 drops the attendees without an email that imports from Google stored before it; everything else stays as it was', async () => {
    await withScratchDatabase(async (pool) => {
      await migrate(pool, { upTo: 107 });
      const id = (n: number) => String(n).padStart(24, '0');
      await pool.query(`INSERT INTO companies (id, name, slug) VALUES ($1, 'Salas', 'salas')`, [id(1)]);
      await pool.query('INSERT INTO users (id, email) VALUES ($1, $2)', [id(2), 'h@example.com']);
      const insert = (n: number, source: string, attendees: unknown) =>
        pool.query(
          `INSERT INTO calendar_events (id, company_id, user_id, title, starts_at, ends_at, source, google_event_id, attendees)
           VALUES ($1, $2, $3, 'E', now(), now() + interval '1 hour', $4, $5, $6)`,
          [id(n), id(1), id(2), source, source === 'google' ? `g${n}` : null, JSON.stringify(attendees)],
        );
      await insert(3, 'google', [{ name: 'Sala 3', email: null }, { name: 'Ana', email: 'ana@example.com' }, { name: 'Proyector' }, { name: null, email: 'b@example.com' }]);
      await insert(4, 'google', [{ name: 'Sala 4', email: null }]);
      await insert(5, 'google', [{ name: 'Eva', email: 'eva@example.com' }]);
      await insert(6, 'native', [{ name: 'Luz', email: 'luz@example.com' }]);
      await migrate(pool);
      const { rows } = await pool.query('SELECT id, attendees FROM calendar_events ORDER BY id');
      assert.deepEqual(rows.map((r) => [r.id, r.attendees]), [
        [id(3), [{ name: 'Ana', email: 'ana@example.com' }, { name: null, email: 'b@example.com' }]],
        [id(4), []],
        [id(5), [{ name: 'Eva', email: 'eva@example.com' }]],
        [id(6), [{ name: 'Luz', email: 'luz@example.com' }]],
      ]);
    });
  });

  test('091 gives submissions whose email was still to be sent their visitor\'s copy as an action of its own', async () => {
    await withScratchDatabase(async (pool) => {
      await migrate(pool, { upTo: 90 });
      const id = (n: number) => String(n).padStart(24, '0');
      await pool.query(`INSERT INTO companies (id, name, slug) VALUES ($1, 'Formas', 'formas')`, [id(1)]);
      const withCopy = { email: { enabled: true, to: ['ventas@example.com'], send_to_submitter: true } };
      await pool.query(`INSERT INTO forms (id, company_id, name, slug, locales, default_locale, post_actions) VALUES ($1, $2, 'A', 'a', '{es}', 'es', $3), ($4, $2, 'B', 'b', '{es}', 'es', $5)`, [
        id(2), id(1), JSON.stringify(withCopy), id(3), JSON.stringify({ email: { enabled: true, to: ['ventas@example.com'] } }),
      ]);
      // pending with an email; already sent; without an email; a form without the copy; being sent by the old code (the visitor included).
      const submissions: Array<[number, number, string | null, string]> = [[4, 2, 'a@example.com', 'pending'], [5, 2, 'b@example.com', 'done'], [6, 2, null, 'pending'], [7, 3, 'c@example.com', 'pending'], [8, 2, 'd@example.com', 'sending']];
      for (const [sub, form, email, status] of submissions) {
        await pool.query(`INSERT INTO form_submissions (id, company_id, form_id, locale, email) VALUES ($1, $2, $3, 'es', $4)`, [id(sub), id(1), id(form), email]);
        await pool.query(`INSERT INTO form_submission_actions (submission_id, company_id, action, status) VALUES ($1, $2, 'email', $3)`, [id(sub), id(1), status]);
      }
      await migrate(pool);
      const { rows } = await pool.query(`SELECT submission_id, status FROM form_submission_actions WHERE action = 'submitter_copy'`);
      assert.deepEqual(rows.map((r) => [r.submission_id, r.status]), [[id(4), 'pending']]);
    });
  });

  test('044 gives every stored media file a random token and rewrites the stored URLs to it', async () => {
    await withScratchDatabase(async (pool) => {
      await migrate(pool, { upTo: 42 });
      const site = 'https://api.example.com';
      const [company, product, original, thumbnail, media] = [1, 2, 3, 4, 5].map((n) => String(n).padStart(24, '0'));
      await pool.query(`INSERT INTO companies (id, name, slug) VALUES ($1, 'Vieja', 'vieja')`, [company]);
      for (const blob of [original, thumbnail]) {
        await pool.query(`INSERT INTO blobs (id, company_id, content_type, size_bytes, sha256, complete) VALUES ($1, $2, 'image/png', 1, 'x', true)`, [blob, company]);
      }
      await pool.query(
        `INSERT INTO media (id, company_id, owner_type, owner_id, original_blob_id, thumbnail_blob_id, filename, content_type, width, height, size_bytes, status)
         VALUES ($1, $2, 'product', $3, $4, $5, 'x.png', 'image/png', 1, 1, 1, 'ready')`,
        [media, company, product, original, thumbnail],
      );
      await pool.query(
        `INSERT INTO products (id, company_id, name, slug, prices_cents, image_url, thumbnail_url, image_media_id)
         VALUES ($1, $2, 'P', 'p', '{"mxn": 100}', $3, $4, $5)`,
        [product, company, `${site}/media/${original}/x.png`, `${site}/media/${thumbnail}/x-thumb.webp`, media],
      );
      assert.deepEqual(await migrate(pool), (await readdir(new URL('../db/migrations/', import.meta.url))).filter((f) => f.endsWith('.sql') && Number(f.slice(0, 3)) > 42).sort());
      const { rows } = await pool.query(
        `SELECT p.image_url, p.thumbnail_url, m.original_token, m.thumbnail_token FROM products p JOIN media m ON m.id = p.image_media_id`,
      );
      assert.match(rows[0].original_token, /^[0-9a-f]{32}$/);
      assert.match(rows[0].thumbnail_token, /^[0-9a-f]{32}$/);
      assert.equal(rows[0].image_url, `${site}/media/${rows[0].original_token}/x.png`);
      assert.equal(rows[0].thumbnail_url, `${site}/media/${rows[0].thumbnail_token}/x-thumb.webp`);
    });
  });
});
