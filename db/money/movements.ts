// Incomes and expenses as the writes that have effects: the row, its ledger
// entries (db/money/ledger.ts), its payments and its events, all with the
// caller's transaction. The API validates first (api/routes/movements.ts);
// the recurring worker calls these too.
import { objectId } from '../../lib/objectid.ts';
import { recordEvent } from '../events.ts';
import type { Queryable } from '../pool.ts';
import { iso, type Timestamp } from '../timestamps.ts';
import { movementEntries, paymentEntries, post, undo, type Entry } from './ledger.ts';
import { changesAny, setList } from '../tables.ts';

export type Direction = 'income' | 'expense';

export type MovementRow = {
  id: string;
  company_id: string;
  direction: Direction;
  account_id: string;
  amount_cents: string;
  paid_cents: string;
  currency: string;
  occurred_at: Timestamp;
  category: string;
  description: string | null;
  customer_id: string | null;
  supplier_name: string | null;
  supplier_tax_id: string | null;
  status: 'paid' | 'pending';
  due_on: string | null;
  paid_at: Timestamp | null;
  sale_id: string | null;
  recurring_id: string | null;
  recurring_on: string | null;
  metadata: Record<string, string>;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export type PaymentRow = { id: string; movement_id: string; account_id: string; amount_cents: string; paid_at: Timestamp; created_at: Timestamp };

export type NewMovement = {
  direction: Direction;
  account: { id: string; currency: string };
  amount_cents: number;
  occurred_at: string | Date;
  category?: string;
  description?: string | null;
  customer_id?: string | null;
  supplier_name?: string | null;
  supplier_tax_id?: string | null;
  /** paid: one payment of the whole amount at `paid_at` (default occurred_at); pending: on credit. */
  status: 'paid' | 'pending';
  due_on?: string | null;
  paid_at?: string | Date | null;
  sale_id?: string | null;
  recurring_id?: string | null;
  recurring_on?: string | null;
  metadata?: Record<string, string>;
  /** A sale's payment: how it was made (c_FormaPago), if the client said. */
  payment_form?: string | null;
};

const SELECT = `SELECT *, to_char(due_on, 'YYYY-MM-DD') AS due_on, to_char(recurring_on, 'YYYY-MM-DD') AS recurring_on FROM movements`;

export async function findMovement(db: Queryable, companyId: string, direction: Direction, id: string, lock = false): Promise<MovementRow | null> {
  const { rows } = await db.query<MovementRow>(`${SELECT} WHERE company_id = $1 AND direction = $2 AND id = $3${lock ? ' FOR UPDATE' : ''}`, [companyId, direction, id]);
  return rows[0] ?? null;
}

export async function paymentsOf(db: Queryable, movementId: string): Promise<PaymentRow[]> {
  const { rows } = await db.query<PaymentRow>('SELECT * FROM movement_payments WHERE movement_id = $1 ORDER BY paid_at, id', [movementId]);
  return rows;
}

/** The `data` of income events (contract, Events: the sale example's fields). */
export function incomeEventData(m: MovementRow, extra: Record<string, unknown> = {}) {
  return {
    object: 'income',
    id: m.id,
    status: m.status,
    amount_cents: Number(m.amount_cents),
    paid_cents: Number(m.paid_cents),
    currency: m.currency,
    occurred_at: iso(m.occurred_at)!,
    sale_id: m.sale_id,
    metadata: m.metadata,
    ...extra,
  };
}

/**
 * A payment: its row, its ledger entries, the movement's paid amount and
 * status, and (income) `income.paid`. `beforePaidEvent` runs on the paid
 * movement just before that event: an income registered as paid records its
 * `income.created` there, so it carries the paid state and comes first.
 */
async function insertPayment(
  db: Queryable,
  zone: string,
  m: MovementRow,
  payment: { account_id: string; amount_cents: number; paid_at: string | Date },
  beforePaidEvent?: (paid: MovementRow) => Promise<unknown>,
  /** The movement's own entries, when it is registered paid: posted with the payment's (ledger.ts `post`). */
  alsoPost: Entry[] = [],
): Promise<MovementRow> {
  await db.query('INSERT INTO movement_payments (id, company_id, movement_id, account_id, amount_cents, paid_at) VALUES ($1, $2, $3, $4, $5, $6)', [
    objectId(),
    m.company_id,
    m.id,
    payment.account_id,
    payment.amount_cents,
    new Date(payment.paid_at),
  ]);
  await post(db, m.company_id, [...alsoPost, ...paymentEntries(m, payment, zone)]);
  const { rows } = await db.query<MovementRow>(
    `UPDATE movements SET paid_cents = paid_cents + $3,
            status = CASE WHEN paid_cents + $3 >= amount_cents THEN 'paid' ELSE 'pending' END,
            paid_at = CASE WHEN paid_cents + $3 >= amount_cents THEN $4::timestamptz ELSE NULL END, updated_at = now()
      WHERE company_id = $1 AND id = $2
      RETURNING *, to_char(due_on, 'YYYY-MM-DD') AS due_on, to_char(recurring_on, 'YYYY-MM-DD') AS recurring_on`,
    [m.company_id, m.id, payment.amount_cents, new Date(payment.paid_at)],
  );
  const updated = rows[0];
  await beforePaidEvent?.(updated);
  if (updated.direction === 'income') {
    await recordEvent(db, m.company_id, 'income.paid', incomeEventData(updated, { payment_cents: payment.amount_cents, paid_at: new Date(payment.paid_at).toISOString() }));
  }
  return updated;
}

export async function insertMovement(db: Queryable, companyId: string, zone: string, m: NewMovement): Promise<MovementRow> {
  const id = objectId();
  const { rows } = await db.query<MovementRow>(
    `INSERT INTO movements (id, company_id, direction, account_id, amount_cents, currency, occurred_at, category, description, customer_id,
                            supplier_name, supplier_tax_id, status, due_on, sale_id, recurring_id, recurring_on, metadata, payment_form)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'pending', $13, $14, $15, $16, $17, $18)
     RETURNING *, to_char(due_on, 'YYYY-MM-DD') AS due_on, to_char(recurring_on, 'YYYY-MM-DD') AS recurring_on`,
    [
      id,
      companyId,
      m.direction,
      m.account.id,
      m.amount_cents,
      m.account.currency,
      new Date(m.occurred_at),
      m.category ?? 'general',
      m.description ?? null,
      m.customer_id ?? null,
      m.supplier_name ?? null,
      m.supplier_tax_id ?? null,
      m.status === 'pending' ? (m.due_on ?? null) : null,
      m.sale_id ?? null,
      m.recurring_id ?? null,
      m.recurring_on ?? null,
      JSON.stringify(m.metadata ?? {}),
      m.payment_form ?? null,
    ],
  );
  const row = rows[0];
  // income.created carries the state the income was registered in: paid (then its income.paid) or on credit.
  const created = (registered: MovementRow) =>
    registered.direction === 'income' ? recordEvent(db, companyId, 'income.created', incomeEventData(registered)) : Promise.resolve();
  if (m.status !== 'paid') {
    await post(db, companyId, movementEntries(row, zone));
    await created(row);
    return row;
  }
  const payment = { account_id: m.account.id, amount_cents: m.amount_cents, paid_at: m.paid_at ?? m.occurred_at };
  return insertPayment(db, zone, row, payment, created, movementEntries(row, zone));
}

/** A payment of a pending income or expense (partial or the rest); the caller checked the amount fits. */
export function addPayment(db: Queryable, zone: string, m: MovementRow, payment: { account_id: string; amount_cents: number; paid_at: string | Date }): Promise<MovementRow> {
  return insertPayment(db, zone, m, payment);
}

/** Undoes a movement: its ledger entries and its payments'; the row goes (payments cascade). */
export async function removeMovement(db: Queryable, zone: string, m: MovementRow): Promise<void> {
  const payments = await paymentsOf(db, m.id);
  await post(db, m.company_id, [...movementEntries(m, zone), ...payments.flatMap((p) => paymentEntries(m, p, zone))], -1);
  await db.query('DELETE FROM movements WHERE company_id = $1 AND id = $2', [m.company_id, m.id]);
  if (m.direction === 'income') await recordEvent(db, m.company_id, 'income.deleted', incomeEventData(m));
}

/**
 * Applies field changes: the result lines move with the amount, date or category. Changes equal to what
 * is stored write nothing (updated_at stays, no lines posted) and answer the movement as it was.
 */
export async function changeMovement(db: Queryable, zone: string, m: MovementRow, changes: Record<string, unknown>): Promise<MovementRow> {
  const entries = Object.entries(changes).filter(([, v]) => v !== undefined);
  if (!entries.length) return m;
  const values = entries.map(([k, v]) => (k === 'metadata' ? JSON.stringify(v) : v));
  // Status and paid_at follow the amount as it will be (SET reads the row as it was): lowered to what
  // was paid, it is paid since its last payment; raised above it, pending again.
  const amountAt = entries.findIndex(([k]) => k === 'amount_cents');
  const paidInFull = `paid_cents >= ${amountAt >= 0 ? `$${amountAt + 3}::bigint` : 'amount_cents'}`;
  const { rows } = await db.query<MovementRow>(
    `UPDATE movements SET ${setList(entries.map(([k]) => k), 3)},
            status = CASE WHEN ${paidInFull} THEN 'paid' ELSE 'pending' END,
            paid_at = CASE WHEN ${paidInFull}
              THEN coalesce(paid_at, (SELECT max(p.paid_at) FROM movement_payments p WHERE p.movement_id = movements.id)) END,
            updated_at = now()
      WHERE company_id = $1 AND id = $2${changesAny(entries.map(([k]) => k), 3)}
      RETURNING *, to_char(due_on, 'YYYY-MM-DD') AS due_on, to_char(recurring_on, 'YYYY-MM-DD') AS recurring_on`,
    [m.company_id, m.id, ...values],
  );
  if (!rows[0]) return m;
  await post(db, m.company_id, [...undo(movementEntries(m, zone)), ...movementEntries(rows[0], zone)]);
  return rows[0];
}
