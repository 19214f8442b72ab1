// Demo data for development: one company with every opt-in module, a few
// customers and leads, and an API key with every scope. Only on an empty
// database and never in production.
import { createAutomation } from '../api/admin/automations.ts';
import { createCompany } from '../api/admin/companies.ts';
import { issueKey } from '../api/admin/keys.ts';
import { ALL_SCOPES, OPT_IN_MODULES } from '../api/auth/scopes.ts';
import type { Pool } from '../db/pool.ts';
import type { Config } from '../lib/config.ts';
import { objectId } from '../lib/objectid.ts';

export async function seedDemo(pool: Pool, config: Config): Promise<{ companyId: string; secret: string } | null> {
  if (config.isProduction) return null;
  const { rows } = await pool.query('SELECT count(*)::int AS n FROM companies');
  if (rows[0].n > 0) return null;
  const { company } = await createCompany(pool, {
    name: 'Demo',
    ownerEmail: 'owner@demo.example',
    modules: [...OPT_IN_MODULES],
    plan: 'enterprise',
    mcpQuota: 1000,
    maxTeamSize: 10,
  });
  for (const [name, email, phone] of [
    ['Ana López', 'ana@cliente.example', '+52 55 1234 5678'],
    ['Comercial del Norte', 'compras@norte.example', '+52 81 5555 0000'],
  ]) {
    await pool.query('INSERT INTO customers (id, company_id, name, email, phone) VALUES ($1, $2, $3, $4, $5)', [objectId(), company.id, name, email, phone]);
  }
  await pool.query(
    `INSERT INTO leads (id, company_id, name, email, company_name, job_title, source) VALUES ($1, $2, 'Luis Pérez', 'luis@prospecto.example', 'Prospecto SA', 'Director', 'web')`,
    [objectId(), company.id],
  );
  await createAutomation(pool, company.id, {
    name: 'Bienvenida a prospectos',
    description: 'Envía un correo cuando llega un prospecto',
    trigger_type: 'lead.created',
    steps: [{ type: 'send_email', template: 'welcome' }],
  });
  const key = await issueKey(pool, { companyId: company.id, scopes: [...ALL_SCOPES], name: 'Demo key' });
  return { companyId: company.id, secret: key.secret };
}
