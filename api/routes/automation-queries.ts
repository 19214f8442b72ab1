// Automations' row and read (the SQL is db/tables.ts's); the operator's procedures (api/admin) answer
// with the same read.
import type { z } from 'zod';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import type { automationSchema } from './automation-schemas.ts';

export type AutomationRow = {
  id: string;
  company_id: string;
  name: string;
  description: string | null;
  active: boolean;
  trigger_type: string;
  trigger_config: Record<string, unknown>;
  steps: unknown[];
  runs_count: number;
  last_run_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export function serializeAutomation(row: AutomationRow): z.output<typeof automationSchema> {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    active: row.active,
    trigger_type: row.trigger_type,
    trigger_config: row.trigger_config,
    steps: row.steps,
    runs_count: row.runs_count,
    last_run_at: iso(row.last_run_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
