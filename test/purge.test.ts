// Housekeeping of stored bytes: blobs an hour old that nothing refers to (a
// crash after writing the bytes, before the record that points at them
// committed) are purged; referenced blobs and young ones (an upload in
// flight) are kept.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { objectId } from '../lib/objectid.ts';
import { purgeOrphanBlobs } from '../worker/jobs/purge-expired.ts';
import { seedTenant, startTestApp, type TestApp } from './helpers/app.ts';

describe('purge of orphaned blobs', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  test('old unreferenced blobs go (complete or not); referenced and young ones stay', async () => {
    const t = await seedTenant(app.pool);
    const blob = async (age: string, complete = true) => {
      const id = objectId();
      await app.pool.query(
        `INSERT INTO blobs (id, company_id, content_type, size_bytes, sha256, complete, created_at) VALUES ($1, $2, 'application/pdf', 1, 'x', $3, now() - $4::interval)`,
        [id, t.companyId, complete, age],
      );
      await app.pool.query(`INSERT INTO blob_chunks (blob_id, seq, data) VALUES ($1, 0, '\\x00')`, [id]);
      return id;
    };
    const orphan = await blob('2 hours');
    const unfinished = await blob('2 hours', false);
    const young = await blob('5 minutes');
    const filed = await blob('2 hours');
    const folder = objectId();
    await app.pool.query(`INSERT INTO file_folders (id, company_id, path) VALUES ($1, $2, '/x')`, [folder, t.companyId]);
    await app.pool.query(
      `INSERT INTO files (id, company_id, folder_id, blob_id, name, content_type, size_bytes, sha256) VALUES ($1, $2, $3, $4, 'a.pdf', 'application/pdf', 1, 'x')`,
      [objectId(), t.companyId, folder, filed],
    );
    const image = await blob('2 hours');
    await app.pool.query(
      `INSERT INTO media (id, company_id, owner_type, owner_id, original_blob_id, original_token, filename, content_type, width, height, size_bytes)
       VALUES ($1, $2, 'product', $3, $4, $5, 'a.png', 'image/png', 1, 1, 1)`,
      [objectId(), t.companyId, objectId(), image, objectId() + '00000000'],
    );

    assert.equal(await purgeOrphanBlobs(app.pool), 2);
    const { rows } = await app.pool.query('SELECT id FROM blobs WHERE company_id = $1', [t.companyId]);
    assert.deepEqual(rows.map((r) => r.id).sort(), [young, filed, image].sort());
    assert.equal((await app.pool.query('SELECT count(*)::int AS n FROM blob_chunks WHERE blob_id = ANY($1)', [[orphan, unfinished]])).rows[0].n, 0);
  });
});
