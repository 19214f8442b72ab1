// Operator actions on tenants, users, keys and automations. Called by the
// admin tRPC procedures (and so by `wsctl`), by the development seed and by
// tests; each takes a Queryable so callers choose the transaction.
import { randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { transaction, type Pool, type Queryable } from '../../db/pool.ts';
import { iso } from '../../db/rows.ts';
import { objectId } from '../../lib/objectid.ts';
import { notifyAuthChange } from '../auth/key-cache.ts';
import { createKey, serializeKey } from '../auth/keys.ts';

const scrypt = promisify(scryptCb) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

export type Plan = 'free' | 'starter' | 'enterprise';

export type CompanyInput = {
  name: string;
  ownerEmail?: string;
  maxTeamSize?: number;
  modules?: string[];
  plan?: Plan;
  mcpQuota?: number | null;
};

export type CompanyUpdate = Partial<CompanyInput> & {
  responseCache?: boolean;
  storageQuotaMb?: number;
};

export class AdminError extends Error {
  readonly code: 'not_found' | 'conflict' | 'bad_request';
  constructor(code: AdminError['code'], message: string) {
    super(message);
    this.code = code;
  }
}

export function slugify(name: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48);
  return base || 'empresa';
}

export function serializeCompany(row: Record<string, any>, teamSize = 0) {
  return {
    id: row.id as string,
    name: row.name as string,
    slug: row.slug as string,
    website: row.website as string | null,
    legal_name: row.legal_name as string | null,
    logo_url: row.logo_url as string | null,
    business_type: row.business_type as string | null,
    business_context: row.business_context as string | null,
    business_goals: row.business_goals as string[],
    team: { max_team_size: row.max_team_size, current_team_size: teamSize, seats_available: Math.max(0, row.max_team_size - teamSize) },
    enabled_modules: row.enabled_modules as string[],
    plan: row.plan as Plan,
    mcp_quota: row.mcp_quota as number | null,
    response_cache: row.response_cache as boolean,
    storage_quota_mb: row.storage_quota_mb as number,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

export function serializeUser(row: Record<string, any>, isOwner = false) {
  const fullName = [row.first_name, row.last_name].filter(Boolean).join(' ');
  return {
    id: row.id as string,
    email: row.email as string,
    first_name: row.first_name as string | null,
    last_name: row.last_name as string | null,
    full_name: fullName || null,
    is_owner: isOwner,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

async function teamSize(db: Queryable, companyId: string): Promise<number> {
  const { rows } = await db.query('SELECT count(*)::int AS n FROM memberships WHERE company_id = $1', [companyId]);
  return rows[0].n;
}

async function uniqueSlug(db: Queryable, name: string): Promise<string> {
  const base = slugify(name);
  const { rows } = await db.query(`SELECT slug FROM companies WHERE slug = $1 OR slug LIKE $2`, [base, `${base}-%`]);
  const taken = new Set(rows.map((r) => r.slug));
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}-${i}`)) return `${base}-${i}`;
}

export async function createCompany(pool: Pool, input: CompanyInput) {
  return transaction(pool, async (db) => {
    const id = objectId();
    const slug = await uniqueSlug(db, input.name);
    const { rows } = await db.query(
      `INSERT INTO companies (id, name, slug, max_team_size, enabled_modules, plan, mcp_quota)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
      [id, input.name, slug, input.maxTeamSize ?? 5, input.modules ?? [], input.plan ?? 'free', input.mcpQuota ?? null],
    );
    const email = (input.ownerEmail ?? `owner@${slug}.example`).toLowerCase();
    const existing = await db.query('SELECT * FROM users WHERE lower(email) = $1 AND deleted_at IS NULL', [email]);
    const user =
      existing.rows[0] ??
      (await db.query(`INSERT INTO users (id, email, first_name) VALUES ($1, $2, $3) RETURNING *`, [objectId(), email, 'Owner'])).rows[0];
    await db.query(`INSERT INTO memberships (company_id, user_id, is_owner) VALUES ($1, $2, true)`, [id, user.id]);
    return { company: serializeCompany(rows[0], 1), owner: serializeUser(user, true) };
  });
}

export async function getCompany(db: Queryable, id: string) {
  const { rows } = await db.query('SELECT * FROM companies WHERE id = $1', [id]);
  if (!rows[0]) throw new AdminError('not_found', `Company ${id} not found`);
  return serializeCompany(rows[0], await teamSize(db, id));
}

export async function listCompanies(db: Queryable) {
  const { rows } = await db.query(
    `SELECT c.*, (SELECT count(*)::int FROM memberships m WHERE m.company_id = c.id) AS team_size
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
  if (input.modules !== undefined) set('enabled_modules', input.modules);
  if (input.plan !== undefined) set('plan', input.plan);
  if (input.mcpQuota !== undefined) set('mcp_quota', input.mcpQuota);
  if (input.responseCache !== undefined) set('response_cache', input.responseCache);
  if (input.storageQuotaMb !== undefined) set('storage_quota_mb', input.storageQuotaMb);
  return transaction(pool, async (db) => {
    if (sets.length > 0) {
      const { rowCount } = await db.query(`UPDATE companies SET ${sets.join(', ')}, updated_at = now() WHERE id = $1`, values);
      if (rowCount === 0) throw new AdminError('not_found', `Company ${id} not found`);
      await notifyAuthChange(db);
    }
    // The owner's sign-in email (unique across the service, like every user's).
    if (input.ownerEmail !== undefined) {
      const owner = await ownerOf(db, id);
      await db.query('UPDATE users SET email = $2, updated_at = now() WHERE id = $1', [owner, input.ownerEmail]).catch((error) => {
        if ((error as { code?: string }).code === '23505') throw new AdminError('conflict', `A user with email ${input.ownerEmail} already exists`);
        throw error;
      });
    }
    return getCompany(db, id);
  });
}

export async function ownerOf(db: Queryable, companyId: string): Promise<string> {
  const { rows } = await db.query(
    `SELECT user_id FROM memberships WHERE company_id = $1 ORDER BY is_owner DESC, created_at ASC LIMIT 1`,
    [companyId],
  );
  if (!rows[0]) throw new AdminError('not_found', `Company ${companyId} not found or has no members`);
  return rows[0].user_id;
}

export type KeyInput = {
  companyId: string;
  userId?: string;
  scopes: string[];
  origins?: string[];
  name?: string;
  rateLimitPerMinute?: number | null;
};

export async function issueKey(pool: Pool, input: KeyInput) {
  await getCompany(pool, input.companyId);
  const userId = input.userId ?? (await ownerOf(pool, input.companyId));
  const member = await pool.query('SELECT 1 FROM memberships WHERE company_id = $1 AND user_id = $2', [input.companyId, userId]);
  if (member.rowCount === 0) throw new AdminError('bad_request', `User ${userId} is not a member of company ${input.companyId}`);
  return createKey(pool, {
    companyId: input.companyId,
    userId,
    scopes: input.scopes,
    allowedOrigins: input.origins,
    name: input.name,
    rateLimitPerMinute: input.rateLimitPerMinute,
  });
}

export async function listKeys(db: Queryable, companyId: string) {
  const { rows } = await db.query('SELECT * FROM api_keys WHERE company_id = $1 ORDER BY created_at DESC, id DESC', [companyId]);
  return rows.map(serializeKey);
}

export async function revokeKey(pool: Pool, id: string) {
  return transaction(pool, async (db) => {
    const { rows } = await db.query(
      'UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING *',
      [id],
    );
    if (!rows[0]) throw new AdminError('not_found', `Key ${id} not found`);
    await notifyAuthChange(db);
    return serializeKey(rows[0]);
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32);
  return `scrypt$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  if (!stored) return false;
  const [scheme, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scrypt(password, Buffer.from(salt, 'base64'), expected.length);
  return timingSafeEqual(actual, expected);
}

export async function setPassword(db: Queryable, userId: string, password: string) {
  if (password.length < 8) throw new AdminError('bad_request', 'Password must have at least 8 characters');
  const { rows } = await db.query(
    'UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1 AND deleted_at IS NULL RETURNING *',
    [userId, await hashPassword(password)],
  );
  if (!rows[0]) throw new AdminError('not_found', `User ${userId} not found`);
  return serializeUser(rows[0]);
}

export type AutomationInput = {
  name: string;
  description?: string | null;
  active?: boolean;
  trigger_type: string;
  trigger_config?: Record<string, unknown>;
  steps?: unknown[];
};

export async function createAutomation(db: Queryable, companyId: string, input: AutomationInput) {
  await getCompany(db, companyId);
  const { rows } = await db.query(
    `INSERT INTO automations (id, company_id, name, description, active, trigger_type, trigger_config, steps)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
    [
      objectId(),
      companyId,
      input.name,
      input.description ?? null,
      input.active ?? false,
      input.trigger_type,
      JSON.stringify(input.trigger_config ?? {}),
      JSON.stringify(input.steps ?? []),
    ],
  );
  return rows[0];
}
