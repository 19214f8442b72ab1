// Operator actions on companies (tenants): create with its owner, read,
// list, update. Called by the admin tRPC procedures (and so by `wsctl`), by
// the development seed and by tests; each takes a Queryable or the pool so
// callers choose the transaction. Errors are ApiError (api/errors.ts), which
// the admin router maps to tRPC errors in one place (trpc.ts).
import { transaction, type Pool, type Queryable } from '../../db/pool.ts';
import { lockCompanyZone } from '../../db/companies.ts';
import { rebuildLedger } from '../../db/money/rebuild.ts';
import { objectId } from '../../lib/objectid.ts';
import { firstFreeSlug, slugify } from '../../lib/slug.ts';
import { notifyAuthChange } from '../auth/key-cache.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { serializeUser, type UserRow } from './users.ts';
import { serializeCompanyRead, teamSize, type CompanyRow, type Plan } from '../routes/company-queries.ts';

export type { CompanyRow, Plan };

/**
 * The MCP quota belongs to the enterprise plan (DESIGN.md: "quota set with
 * --mcp-quota"): free has none and starter its fixed 500, so a quota on them
 * would be shown and never applied, and enterprise without one would offer MCP
 * and refuse every call.
 */
function checkPlanQuota(plan: Plan, quota: number | null): void {
  if (plan !== 'enterprise' && quota !== null) throw validationFailed({ mcpQuota: [`only the enterprise plan takes an MCP quota (${plan}: ${plan === 'free' ? 'no MCP' : '500 calls per cycle'})`] }, 'Invalid input: the MCP quota is for the enterprise plan.');
  if (plan === 'enterprise' && quota === null) throw validationFailed({ mcpQuota: ['the enterprise plan needs its quota (--mcp-quota <calls per cycle>)'] }, 'Invalid input: the enterprise plan needs an MCP quota.');
}

export type CompanyInput = {
  name: string;
  ownerEmail?: string;
  maxTeamSize?: number;
  modules?: string[];
  plan?: Plan;
  mcpQuota?: number | null;
};

export type CompanyUpdate = Partial<CompanyInput> & {
  /** IANA zone in which money dates are read (accounting months, report days). */
  timezone?: string;
  responseCache?: boolean;
  storageQuotaMb?: number;
};

/** The company as operators see it: the API's read plus plan, quotas and settings. */
export function serializeCompany(row: CompanyRow, teamSize = 0) {
  return {
    ...serializeCompanyRead(row, teamSize),
    plan: row.plan,
    mcp_quota: row.mcp_quota,
    response_cache: row.response_cache,
    storage_quota_mb: row.storage_quota_mb,
  };
}

/** A company slug free across the service; creates take turns on a transaction lock, so two with one name get two slugs. */
async function uniqueSlug(db: Queryable, name: string): Promise<string> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended('slug:companies', 0))`);
  const base = slugify(name, { maxLength: 48, fallback: 'empresa' });
  const { rows } = await db.query<{ slug: string }>(`SELECT slug FROM companies WHERE slug = $1 OR slug LIKE $2`, [base, `${base}-%`]);
  return firstFreeSlug(base, new Set(rows.map((r) => r.slug)));
}

/** `owner@<slug>.example`, or `owner-2@…`, `owner-3@…` when a user has it (the slug's lock is held). */
async function freeDefaultOwnerEmail(db: Queryable, slug: string): Promise<string> {
  const { rows } = await db.query<{ email: string }>(`SELECT lower(email) AS email FROM users WHERE lower(email) LIKE $1 AND deleted_at IS NULL`, [`owner%@${slug}.example`]);
  const taken = new Set(rows.map((r) => r.email));
  for (let i = 1; ; i++) {
    const email = `${i === 1 ? 'owner' : `owner-${i}`}@${slug}.example`;
    if (!taken.has(email)) return email;
  }
}

export async function createCompany(pool: Pool, input: CompanyInput) {
  return transaction(pool, async (db) => {
    const id = objectId();
    const slug = await uniqueSlug(db, input.name);
    // DESIGN.md: the owner is a user made with the email. The default (`owner@<slug>.example`) is one no
    // user has: any company's key can add a member with any email, so a default that could be taken
    // would let a tenant squat it and block, or be offered, the new company.
    const email = input.ownerEmail?.toLowerCase() ?? (await freeDefaultOwnerEmail(db, slug));
    // An email given and already taken is refused before anything is created, as on `company update`
    // (it once made that person, of another company, this one's owner in silence); one person in two
    // companies is an explicit `wsctl user add-membership`, after the operator has seen whose they are.
    const existing = await db.query<UserRow>('SELECT id FROM users WHERE lower(email) = $1 AND deleted_at IS NULL', [email]);
    if (existing.rows[0]) {
      const { rows: theirs } = await db.query<{ id: string; name: string }>(
        'SELECT c.id, c.name FROM memberships m JOIN companies c ON c.id = m.company_id WHERE m.user_id = $1 ORDER BY c.id',
        [existing.rows[0].id],
      );
      const companies = theirs.length ? theirs.map((c) => `${JSON.stringify(c.name)} ${c.id}`).join(', ') : 'none';
      throw new ApiError(
        'email_taken',
        `A user with email ${email} already exists (user ${existing.rows[0].id}, member of: ${companies}); create the company with another owner email. ` +
          `Only if that person is to own it too: \`wsctl user add-membership ${existing.rows[0].id} --company <new company id> --owner\``,
      );
    }
    checkPlanQuota(input.plan ?? 'free', input.mcpQuota ?? null);
    const { rows } = await db.query<CompanyRow>(
      `INSERT INTO companies (id, name, slug, max_team_size, enabled_modules, plan, mcp_quota)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
      [id, input.name, slug, input.maxTeamSize ?? 5, [...new Set(input.modules ?? [])], input.plan ?? 'free', input.mcpQuota ?? null],
    );
    const user = (
      await db.query<UserRow>(`INSERT INTO users (id, email, first_name) VALUES ($1, $2, $3) RETURNING *`, [objectId(), email, 'Owner']).catch((error) => {
        // Taken meanwhile by a concurrent create: the same answer as above.
        if ((error as { code?: string }).code === '23505') throw new ApiError('email_taken', `A user with email ${email} already exists`);
        throw error;
      })
    ).rows[0];
    await db.query(`INSERT INTO memberships (company_id, user_id, is_owner) VALUES ($1, $2, true)`, [id, user.id]);
    return { company: serializeCompany(rows[0], 1), owner: serializeUser(user, true) };
  });
}

export async function getCompany(db: Queryable, id: string) {
  const { rows } = await db.query<CompanyRow>('SELECT * FROM companies WHERE id = $1', [id]);
  if (!rows[0]) throw new ApiError('not_found', `Company ${id} not found`);
  return serializeCompany(rows[0], await teamSize(db, id));
}

export async function listCompanies(db: Queryable) {
  const { rows } = await db.query<CompanyRow & { team_size: number }>(
    `SELECT c.*, (SELECT count(*)::int FROM memberships m JOIN users u ON u.id = m.user_id AND u.deleted_at IS NULL
                   WHERE m.company_id = c.id) AS team_size
       FROM companies c ORDER BY c.created_at DESC, c.id DESC`,
  );
  return rows.map((row) => serializeCompany(row, row.team_size));
}

export async function updateCompany(pool: Pool, id: string, input: CompanyUpdate) {
  const sets: string[] = [];
  const values: unknown[] = [id];
  const set = (column: string, value: unknown) => {
    values.push(value);
    sets.push(`${column} = $${values.length}`);
  };
  if (input.name !== undefined) set('name', input.name);
  if (input.maxTeamSize !== undefined) set('max_team_size', input.maxTeamSize);
  if (input.modules !== undefined) set('enabled_modules', [...new Set(input.modules)]);
  if (input.plan !== undefined) set('plan', input.plan);
  if (input.mcpQuota !== undefined) set('mcp_quota', input.mcpQuota);
  // Leaving enterprise leaves its quota behind, unless one is given (refused below).
  else if (input.plan !== undefined && input.plan !== 'enterprise') set('mcp_quota', null);
  if (input.responseCache !== undefined) set('response_cache', input.responseCache);
  if (input.storageQuotaMb !== undefined) set('storage_quota_mb', input.storageQuotaMb);
  if (input.timezone !== undefined) set('timezone', input.timezone);
  return transaction(pool, async (db) => {
    // First: the money writes in flight finish in the old zone before the ledger is rebuilt; those
    // that come after read the new one (db/companies.ts companyZoneForWrite).
    if (input.timezone !== undefined) await lockCompanyZone(db, id);
    const zoneBefore = input.timezone === undefined ? null : (await db.query<{ timezone: string }>('SELECT timezone FROM companies WHERE id = $1', [id])).rows[0]?.timezone;
    if (sets.length > 0) {
      const { rows: updated } = await db.query<{ plan: Plan; mcp_quota: number | null }>(`UPDATE companies SET ${sets.join(', ')}, updated_at = now() WHERE id = $1 RETURNING plan, mcp_quota`, values);
      if (!updated[0]) throw new ApiError('not_found', `Company ${id} not found`);
      // Checked when the update touches them: a row from before the rule takes other updates as before.
      if (input.plan !== undefined || input.mcpQuota !== undefined) checkPlanQuota(updated[0].plan, updated[0].mcp_quota);
      await notifyAuthChange(db);
    }
    // Money days are read in the company's zone: the ledger moves with it, except into or out of a
    // closed month, which takes no change (docs/money.md): such a change is refused, nothing applied.
    if (input.timezone !== undefined && zoneBefore) {
      const moved = await closedMonthsCrossed(db, id, zoneBefore, input.timezone);
      if (moved.length) {
        throw new ApiError(
          'validation_failed',
          `timezone: in ${input.timezone} some money would move into or out of the closed month(s) ${moved.join(', ')}; reopen them first (wsctl period open) or keep the zone`,
        );
      }
      await rebuildLedger(db, id);
      // Lists that read days in the company's zone (calendar events and bookings take `from`/`to` as days)
      // answer otherwise now: every cached list of the company is refreshed (the versions' lock first,
      // as the triggers take it: migration 096).
      await db.query('SELECT lock_company_versions($1)', [id]);
      await db.query('UPDATE collection_versions SET version = version + 1 WHERE company_id = $1', [id]);
    }
    // The owner's sign-in email (unique across the service, like every user's), stored lower-cased as everywhere else.
    if (input.ownerEmail !== undefined) {
      const owner = await ownerOf(db, id);
      await db.query('UPDATE users SET email = $2, updated_at = now() WHERE id = $1', [owner, input.ownerEmail.toLowerCase()]).catch((error) => {
        if ((error as { code?: string }).code === '23505') throw new ApiError('email_taken', `A user with email ${input.ownerEmail} already exists`);
        throw error;
      });
    }
    return getCompany(db, id);
  });
}

/**
 * The closed months (YYYY-MM) that some money record would leave or enter if the company's days were
 * read in `to` rather than `from`: any record, not only totals, since one leaving and an equal one
 * arriving leave a month's totals as they were and its records not. Account openings are dates, in
 * no zone.
 */
async function closedMonthsCrossed(db: Queryable, companyId: string, from: string, to: string): Promise<string[]> {
  const { rows } = await db.query<{ month: string }>(
    `WITH dated AS (
       SELECT occurred_at AS instant FROM movements WHERE company_id = $1
       UNION ALL SELECT paid_at FROM movement_payments WHERE company_id = $1
       UNION ALL SELECT occurred_at FROM sales WHERE company_id = $1
       UNION ALL SELECT refunded_at FROM sale_refunds WHERE company_id = $1
     ), moved AS (
       SELECT DISTINCT date_trunc('month', instant AT TIME ZONE $2::text) AS before, date_trunc('month', instant AT TIME ZONE $3::text) AS after FROM dated
     )
     SELECT DISTINCT to_char(side.start, 'YYYY-MM') AS month
       FROM moved, LATERAL (VALUES (before), (after)) AS side(start)
      WHERE before <> after
        AND EXISTS (SELECT 1 FROM accounting_periods p
                     WHERE p.company_id = $1 AND p.year = extract(year FROM side.start) AND p.month = extract(month FROM side.start))
      ORDER BY 1`,
    [companyId, from, to],
  );
  return rows.map((r) => r.month);
}

/** The company's owner (the first owner by membership date), whom keys default to. */
export async function ownerOf(db: Queryable, companyId: string): Promise<string> {
  const { rows } = await db.query<{ user_id: string }>(
    `SELECT user_id FROM memberships WHERE company_id = $1 ORDER BY is_owner DESC, created_at ASC, user_id ASC LIMIT 1`,
    [companyId],
  );
  if (!rows[0]) throw new ApiError('not_found', `Company ${companyId} not found or has no members`);
  return rows[0].user_id;
}
