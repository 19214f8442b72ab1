// Our web process as the bench runs it: `node api/server.ts`, a real child
// process, over the bench database, with everything a production request goes
// through (request id and version headers, authentication, rate limit, scope
// check; idempotency on writes). NODE_ENV=development, because production
// refuses plain HTTP (426) and wrk speaks plain HTTP to localhost; with
// DATABASE_URL set, development mode starts nothing else. LOG_LEVEL=silent:
// the one JSON log line per request is the platform's concern, not ours to
// measure against a floor that logs nothing.
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { createCompany } from '../../api/admin/companies.ts';
import { issueKey } from '../../api/admin/keys.ts';
import { ALL_SCOPES } from '../../api/auth/scopes.ts';
import { withoutTriggers } from './database.ts';
import type { BenchContext } from './scenario.ts';
import { procfileNodeArgs } from '../../scripts/procfile.ts';
import { spawnNodeServer, type NodeChild } from './process.ts';

/** High enough that the limiter runs its normal path (leases, headers) but never answers 429. */
export const BENCH_RATE_LIMIT = 100_000_000;

export type BenchTenant = { companyId: string; keyId: string; secret: string };

/** A company and an API key with every scope and a rate limit that is never reached. */
export async function seedTenant(ctx: BenchContext, name: string): Promise<BenchTenant> {
  const { company } = await createCompany(ctx.db.pool, {
    name,
    ownerEmail: `owner-${randomBytes(4).toString('hex')}@bench.example`,
  });
  const key = await issueKey(ctx.db.pool, {
    companyId: company.id,
    scopes: [...ALL_SCOPES],
    name: 'bench',
    rateLimitPerMinute: BENCH_RATE_LIMIT,
  });
  return { companyId: company.id, keyId: key.id, secret: key.secret };
}

export type OurApp = NodeChild & { profileDir: string | null };

/** `--cpu-prof` flags when the bench runs with --profile: the profile is written when the child exits. */
export async function profileFlags(ctx: BenchContext, label: string): Promise<{ nodeArgs: string[]; profileDir: string | null }> {
  if (!ctx.options.profile) return { nodeArgs: [], profileDir: null };
  const profileDir = path.join(ctx.options.resultsDir, 'profiles', `${label}-${Date.now()}`);
  await mkdir(profileDir, { recursive: true });
  return { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`], profileDir };
}

export async function startOurApp(ctx: BenchContext, label: string): Promise<OurApp> {
  const { nodeArgs, profileDir } = await profileFlags(ctx, label);
  const app = await spawnNodeServer({
    name: 'web (api/server.ts)',
    script: 'api/server.ts',
    // As the Procfile runs the web (package.json's `web` script).
    nodeArgs: [...procfileNodeArgs('web'), ...nodeArgs],
    env: {
      DATABASE_URL: ctx.db.url,
      NODE_ENV: 'development',
      LOG_LEVEL: 'silent',
      ADMIN_TOKEN: randomBytes(24).toString('hex'),
      PG_POOL_MAX: String(ctx.options.poolMax),
      DATA_DIR: path.join(ctx.options.resultsDir, 'data'),
      SITE_URL: undefined,
      BOOKING_URL: undefined,
    },
  });
  return Object.assign(app, { profileDir });
}

/**
 * Removes a bench tenant and everything under it. Big tables are emptied first
 * with triggers off (no per-row collection-version bump), then the company row
 * cascades to the rest.
 */
export async function dropTenant(ctx: BenchContext, tenant: BenchTenant, bigTables: string[] = []): Promise<void> {
  await withoutTriggers(ctx.db, async (client) => {
    for (const table of bigTables) await client.query(`DELETE FROM ${client.escapeIdentifier(table)} WHERE company_id = $1`, [tenant.companyId]);
  });
  const { rows } = await ctx.db.pool.query<{ user_id: string }>('SELECT user_id FROM memberships WHERE company_id = $1', [tenant.companyId]);
  await ctx.db.pool.query('DELETE FROM companies WHERE id = $1', [tenant.companyId]);
  await ctx.db.pool.query('DELETE FROM collection_versions WHERE company_id = $1', [tenant.companyId]);
  await ctx.db.pool.query('DELETE FROM rate_limit_windows WHERE key = $1', [`key:${tenant.keyId}`]).catch(() => {});
  for (const { user_id } of rows) {
    await ctx.db.pool.query('DELETE FROM users WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM memberships WHERE user_id = $1)', [user_id]).catch(() => {});
  }
}

/** Embedded bench database only: tenants left by an interrupted run (their names start with "Bench "). */
export async function purgeLeftoverTenants(ctx: BenchContext, bigTables: string[]): Promise<void> {
  if (!ctx.db.embedded) return;
  const { rows } = await ctx.db.pool.query<{ id: string; key_id: string | null }>(
    `SELECT c.id, (SELECT k.id FROM api_keys k WHERE k.company_id = c.id LIMIT 1) AS key_id
       FROM companies c WHERE c.name LIKE 'Bench %'`,
  );
  for (const row of rows) {
    ctx.log(`removing tenant ${row.id} left by an earlier run`);
    await dropTenant(ctx, { companyId: row.id, keyId: row.key_id ?? '', secret: '' }, bigTables);
  }
}
