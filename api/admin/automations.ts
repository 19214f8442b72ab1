// Operators create automations (`wsctl automation create --file`): the REST
// API cannot (contract: POST /automations is 422 not_supported_yet).
import type { Queryable } from '../../db/pool.ts';
import { objectId } from '../../lib/objectid.ts';
import type { AutomationRow } from '../routes/automation-queries.ts';
import { getCompany } from './companies.ts';

export type AutomationInput = {
  name: string;
  description?: string | null;
  active?: boolean;
  trigger_type: string;
  trigger_config?: Record<string, unknown>;
  steps?: unknown[];
};

export async function createAutomation(db: Queryable, companyId: string, input: AutomationInput): Promise<AutomationRow> {
  await getCompany(db, companyId);
  const { rows } = await db.query<AutomationRow>(
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
