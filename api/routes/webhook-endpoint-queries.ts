// Webhook endpoints and deliveries: queries and serializers shared by the REST
// routes (api/routes/webhook-endpoints.ts) and the admin procedures (wsctl).
// Every query is scoped by company; callers pass the pool or a transaction.
import type { Queryable } from '../../db/pool.ts';
import { iso } from '../../db/timestamps.ts';
import { objectId } from '../../lib/objectid.ts';
import { newWebhookSecret } from '../../lib/webhook-signature.ts';
import { rescheduleAttempts, unscheduleAttempts } from '../../db/events.ts';
import { HELD_MESSAGE } from '../../lib/webhook-retry.ts';
import type { z } from 'zod';
import type { deliveryDetailSchema, DeliveryStatus, endpointWithSecretSchema } from './webhook-endpoint-schemas.ts';

export type EndpointRow = {
  id: string;
  company_id: string;
  url: string;
  description: string | null;
  enabled_events: string[];
  active: boolean;
  secret: string;
  consecutive_failures: number;
  last_delivery_at: Date | null;
  last_delivery_status: 'succeeded' | 'failed' | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
};

/** Endpoints per company: every recorded event reads them, and a receiver can take any number of events. */
export const MAX_ENDPOINTS_PER_COMPANY = 16;

/** The endpoint as reads answer it; `withSecret` (a create, a rotation) adds the whole secret, shown once. */
export function serializeEndpoint(row: EndpointRow, options: { withSecret?: boolean } = {}): Omit<z.output<typeof endpointWithSecretSchema>, 'secret'> & { secret?: string } {
  return {
    id: row.id,
    object: 'webhook_endpoint' as const,
    url: row.url,
    description: row.description,
    enabled_events: row.enabled_events,
    active: row.active,
    ...(options.withSecret ? { secret: row.secret } : {}),
    secret_last_four: row.secret.slice(-4),
    consecutive_failures: row.consecutive_failures,
    last_delivery_at: iso(row.last_delivery_at),
    last_delivery_status: row.last_delivery_status,
    disabled_at: iso(row.disabled_at),
    disabled_reason: row.disabled_reason,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}


/** A `webhook_deliveries` row; `payload` (the signed envelope) only when read with its event. Lists read timestamps as ISO strings. */
export type DeliveryRow = {
  id: string;
  company_id: string;
  endpoint_id: string;
  event_id: string;
  event: string;
  status: DeliveryStatus;
  attempts: number;
  max_attempts: number;
  next_attempt_at: Date | string | null;
  delivered_at: Date | string | null;
  response_status: number | null;
  response_body: string | null;
  error_message: string | null;
  created_at: Date | string;
  updated_at: Date | string;
  payload?: string;
};

/** The delivery as lists answer it; `full` (the single read) adds the signed body and the receiver's answer. */
export function serializeDelivery(row: DeliveryRow, options: { full?: boolean } = {}): Omit<z.output<typeof deliveryDetailSchema>, 'payload' | 'response_body'> & { payload?: string; response_body?: string | null } {
  return {
    id: row.id,
    object: 'webhook_delivery' as const,
    endpoint_id: row.endpoint_id,
    event: row.event,
    event_id: row.event_id,
    status: row.status,
    attempts: row.attempts,
    max_attempts: row.max_attempts,
    next_attempt_at: iso(row.next_attempt_at),
    delivered_at: iso(row.delivered_at),
    response_status: row.response_status,
    error_message: row.error_message,
    created_at: iso(row.created_at),
    ...(options.full ? { payload: row.payload, response_body: row.response_body } : {}),
  };
}

/** Serializes concurrent endpoint creates of one company (until commit), so the per-company cap holds. */
export async function lockEndpointsOf(db: Queryable, companyId: string): Promise<void> {
  await db.query('SELECT 1 FROM companies WHERE id = $1 FOR NO KEY UPDATE', [companyId]);
}

export async function countEndpoints(db: Queryable, companyId: string): Promise<number> {
  const { rows } = await db.query('SELECT count(*)::int AS n FROM webhook_endpoints WHERE company_id = $1', [companyId]);
  return rows[0].n;
}

export async function insertEndpoint(
  db: Queryable,
  companyId: string,
  input: { url: string; enabled_events: string[]; description?: string | null },
): Promise<EndpointRow> {
  const { rows } = await db.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (id, company_id, url, description, enabled_events, secret)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
    [objectId(), companyId, input.url, input.description ?? null, [...new Set(input.enabled_events)], newWebhookSecret()],
  );
  return rows[0];
}

export async function findEndpoint(db: Queryable, companyId: string | null, id: string): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT * FROM webhook_endpoints WHERE id = $1 AND ($2::text IS NULL OR company_id = $2)`,
    [id, companyId],
  );
  return rows[0] ?? null;
}

/**
 * Applies a PUT. `active: true` resumes an endpoint that was off, whatever
 * stopped it, and starts its failure count again (on one already on it changes
 * nothing: a client PUTting the whole object must not keep a failing endpoint
 * from its shut-off); `active: false` is a manual pause, which
 * keeps configuration and secret and leaves `disabled_at`/`disabled_reason`
 * null (only the automatic shut-off sets them, DESIGN.md).
 */
export async function updateEndpoint(
  db: Queryable,
  companyId: string,
  id: string,
  input: { url?: string; description?: string | null; enabled_events?: string[]; active?: boolean },
): Promise<EndpointRow | null> {
  // Locked first: whether it was on decides what a switch-on owes (below).
  const { rows: before } = await db.query<{ active: boolean }>('SELECT active FROM webhook_endpoints WHERE id = $1 AND company_id = $2 FOR NO KEY UPDATE', [id, companyId]);
  if (!before[0]) return null;
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET
       url = coalesce($3, url),
       description = CASE WHEN $4 THEN $5 ELSE description END,
       enabled_events = coalesce($6, enabled_events),
       active = coalesce($7, active),
       consecutive_failures = CASE WHEN $7 IS TRUE AND NOT active THEN 0 ELSE consecutive_failures END,
       disabled_at = CASE WHEN $7 IS TRUE AND NOT active THEN NULL ELSE disabled_at END,
       disabled_reason = CASE WHEN $7 IS TRUE AND NOT active THEN NULL ELSE disabled_reason END,
       -- Moved by a change only: a client PUTting the object back as it reads it changes nothing.
       updated_at = CASE WHEN (coalesce($3, url), CASE WHEN $4 THEN $5 ELSE description END, coalesce($6, enabled_events), coalesce($7, active))
                              IS DISTINCT FROM (url, description, enabled_events, active) THEN now() ELSE updated_at END
     WHERE id = $1 AND company_id = $2 RETURNING *`,
    [
      id,
      companyId,
      input.url ?? null,
      input.description !== undefined,
      input.description ?? null,
      input.enabled_events ? [...new Set(input.enabled_events)] : null,
      input.active ?? null,
    ],
  );
  if (rows[0] && input.active === false) await unscheduleAttempts(db, [id]);
  // Switched on (it was off, paused or shut off): every delivery still owed an attempt is scheduled again.
  if (rows[0] && input.active === true && !before[0].active) await rescheduleAttempts(db, id);
  return rows[0] ?? null;
}

export async function deleteEndpoint(db: Queryable, companyId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM webhook_endpoints WHERE id = $1 AND company_id = $2', [id, companyId]);
  return (rowCount ?? 0) > 0;
}

/** A new secret, effective at once: attempts read the secret when they are made. */
export async function rotateSecret(db: Queryable, companyId: string | null, id: string): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET secret = $3, updated_at = now() WHERE id = $1 AND ($2::text IS NULL OR company_id = $2) RETURNING *`,
    [id, companyId, newWebhookSecret()],
  );
  return rows[0] ?? null;
}

/** Every endpoint of a company, newest first (operators: `wsctl webhook list`). */
export async function listEndpointsOf(db: Queryable, companyId: string): Promise<EndpointRow[]> {
  const { rows } = await db.query<EndpointRow>('SELECT * FROM webhook_endpoints WHERE company_id = $1 ORDER BY created_at DESC, id DESC', [companyId]);
  return rows;
}

/** The newest deliveries of an endpoint, filtered (operators: `wsctl delivery list`). */
export async function recentDeliveries(
  db: Queryable,
  endpointId: string,
  filters: { status?: string; event?: string; limit: number },
): Promise<DeliveryRow[]> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT * FROM webhook_deliveries
      WHERE endpoint_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::text IS NULL OR event = $3)
      ORDER BY created_at DESC, id DESC LIMIT $4`,
    [endpointId, filters.status ?? null, filters.event ?? null, filters.limit],
  );
  return rows;
}

const DELIVERY_COLUMNS = `d.*, ev.payload`;

export async function findDelivery(db: Queryable, companyId: string | null, id: string, endpointId?: string): Promise<DeliveryRow | null> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_id
      WHERE d.id = $1 AND ($2::text IS NULL OR d.company_id = $2) AND ($3::text IS NULL OR d.endpoint_id = $3)`,
    [id, companyId, endpointId ?? null],
  );
  return rows[0] ?? null;
}

/**
 * A new delivery of an existing one's event to the same endpoint: the same
 * event id and body (a receiver de-duplicating by event id sees a repeat),
 * attempted at once and signed with the endpoint's current secret.
 */
export async function replayDelivery(db: Queryable, companyId: string | null, id: string): Promise<DeliveryRow | null> {
  // To an endpoint that is off: held, as its other waiting deliveries (no next attempt until it is switched on).
  // The endpoint is read under a share lock: a switch-on in progress (which schedules what is held) is
  // waited for, so the replay is not held by an endpoint that is on once it commits.
  const { rows } = await db.query<DeliveryRow>(
    `INSERT INTO webhook_deliveries (id, company_id, endpoint_id, event_id, event, next_attempt_at, error_message)
     SELECT $3, d.company_id, d.endpoint_id, d.event_id, d.event, CASE WHEN e.active THEN now() END, CASE WHEN NOT e.active THEN $4 END
       FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
      WHERE d.id = $1 AND ($2::text IS NULL OR d.company_id = $2)
        FOR SHARE OF e
     RETURNING *`,
    [id, companyId, objectId(), HELD_MESSAGE],
  );
  const created = rows[0];
  if (!created) return null;
  return findDelivery(db, null, created.id);
}
