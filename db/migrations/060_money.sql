-- Money (docs/money.md): accounts, incomes and expenses with their payments,
-- sales with line items, payments and refunds, recurring transactions and
-- their occurrences, closed accounting months, and the daily ledger the
-- reports read. Amounts are integer cents (bigint); currencies lowercase ISO
-- 4217; one currency per account, and every movement in its account's.

-- The zone in which money dates are read (accounting months, report days).
ALTER TABLE companies ADD COLUMN timezone text NOT NULL DEFAULT 'America/Mexico_City';

CREATE TABLE accounts (
  id                     text PRIMARY KEY,
  company_id             text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  name                   text NOT NULL,
  kind                   text NOT NULL CHECK (kind IN ('cash', 'bank', 'card', 'other')),
  currency               text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
  opening_balance_cents  bigint NOT NULL DEFAULT 0,
  opening_on             date NOT NULL,
  archived               boolean NOT NULL DEFAULT false,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX accounts_page ON accounts (company_id, created_at DESC, id DESC);

-- Incomes and expenses share a shape: `direction` says which. A sale's
-- payments are incomes linked to it (`sale_id`).
CREATE TABLE movements (
  id                text PRIMARY KEY,
  company_id        text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  direction         text NOT NULL CHECK (direction IN ('income', 'expense')),
  account_id        text NOT NULL REFERENCES accounts (id),
  amount_cents      bigint NOT NULL CHECK (amount_cents > 0),
  paid_cents        bigint NOT NULL DEFAULT 0 CHECK (paid_cents >= 0 AND paid_cents <= amount_cents),
  currency          text NOT NULL,
  occurred_at       timestamptz NOT NULL,
  category          text NOT NULL DEFAULT 'general',
  description       text,
  customer_id       text,
  supplier_name     text,
  supplier_tax_id   text,
  status            text NOT NULL CHECK (status IN ('paid', 'pending')),
  due_on            date,
  paid_at           timestamptz,
  sale_id           text,
  recurring_id      text,
  recurring_on      date,
  metadata          jsonb NOT NULL DEFAULT '{}',
  external_ref      text GENERATED ALWAYS AS (metadata->>'external_ref') STORED,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX movements_page ON movements (company_id, direction, created_at DESC, id DESC);
CREATE INDEX movements_occurred ON movements (company_id, direction, occurred_at);
CREATE UNIQUE INDEX movements_external_ref ON movements (company_id, direction, external_ref) WHERE external_ref IS NOT NULL;
-- A recurring transaction makes at most one movement per date (retries, two workers, catch-up).
CREATE UNIQUE INDEX movements_recurring_once ON movements (recurring_id, recurring_on) WHERE recurring_id IS NOT NULL;

CREATE TABLE movement_payments (
  id            text PRIMARY KEY,
  company_id    text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  movement_id   text NOT NULL REFERENCES movements (id) ON DELETE CASCADE,
  account_id    text NOT NULL REFERENCES accounts (id),
  amount_cents  bigint NOT NULL CHECK (amount_cents > 0),
  paid_at       timestamptz NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX movement_payments_movement ON movement_payments (movement_id);

CREATE TABLE sales (
  id                  text PRIMARY KEY,
  company_id          text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  customer_id         text,
  currency            text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
  occurred_at         timestamptz NOT NULL,
  prices_include_vat  boolean NOT NULL DEFAULT false,
  payment_terms       text NOT NULL CHECK (payment_terms IN ('immediate', 'deferred')),
  line_items          jsonb NOT NULL,
  subtotal_cents      bigint NOT NULL,
  tax_cents           bigint NOT NULL,
  total_cents         bigint NOT NULL CHECK (total_cents >= 0),
  paid_cents          bigint NOT NULL DEFAULT 0,
  refunded_cents      bigint NOT NULL DEFAULT 0,
  -- When a payment first settled it (sale.paid is sent once, at that moment).
  settled_at          timestamptz,
  status              text NOT NULL CHECK (status IN ('unpaid', 'partially_paid', 'paid', 'partially_refunded', 'refunded')),
  description         text,
  metadata            jsonb NOT NULL DEFAULT '{}',
  external_ref        text GENERATED ALWAYS AS (metadata->>'external_ref') STORED,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  CHECK (paid_cents <= total_cents AND refunded_cents <= paid_cents)
);
CREATE INDEX sales_page ON sales (company_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX sales_external_ref ON sales (company_id, external_ref) WHERE external_ref IS NOT NULL;

CREATE TABLE sale_refunds (
  id            text PRIMARY KEY,
  company_id    text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  sale_id       text NOT NULL REFERENCES sales (id) ON DELETE CASCADE,
  account_id    text NOT NULL REFERENCES accounts (id),
  amount_cents  bigint NOT NULL CHECK (amount_cents > 0),
  reason        text,
  refunded_at   timestamptz NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sale_refunds_sale ON sale_refunds (sale_id);

CREATE TABLE recurring_transactions (
  id                   text PRIMARY KEY,
  company_id           text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  direction            text NOT NULL CHECK (direction IN ('income', 'expense')),
  account_id           text NOT NULL REFERENCES accounts (id),
  amount_cents         bigint NOT NULL CHECK (amount_cents > 0),
  category             text NOT NULL DEFAULT 'general',
  description          text,
  customer_id          text,
  supplier_name        text,
  supplier_tax_id      text,
  frequency            text NOT NULL CHECK (frequency IN ('daily', 'weekly', 'monthly', 'yearly')),
  interval             integer NOT NULL DEFAULT 1 CHECK (interval BETWEEN 1 AND 366),
  starts_on            date NOT NULL,
  ends_on              date,
  ends_count           integer CHECK (ends_count > 0),
  active               boolean NOT NULL DEFAULT true,
  ended_at             timestamptz,
  next_occurrence_on   date,
  occurrences_count    integer NOT NULL DEFAULT 0,
  metadata             jsonb NOT NULL DEFAULT '{}',
  external_ref         text GENERATED ALWAYS AS (metadata->>'external_ref') STORED,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX recurring_page ON recurring_transactions (company_id, created_at DESC, id DESC);
CREATE INDEX recurring_due ON recurring_transactions (next_occurrence_on) WHERE active AND next_occurrence_on IS NOT NULL;
CREATE UNIQUE INDEX recurring_external_ref ON recurring_transactions (company_id, external_ref) WHERE external_ref IS NOT NULL;

CREATE TABLE accounting_periods (
  company_id  text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  year        integer NOT NULL CHECK (year BETWEEN 1900 AND 9999),
  month       integer NOT NULL CHECK (month BETWEEN 1 AND 12),
  closed_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, year, month)
);

-- The reports' source: every money effect as daily sums per company, local
-- day (company zone), currency, line and key (an account for cash lines, a
-- category for result lines). Maintained in the transaction of the write
-- that has the effect (db/money/ledger.ts), so a report reads a few
-- thousand rows whatever the number of movements.
CREATE TABLE ledger_daily (
  company_id    text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  currency      text NOT NULL,
  day           date NOT NULL,
  line          text NOT NULL CHECK (line IN ('opening', 'cash_in', 'cash_out', 'income', 'expense', 'sale', 'refund', 'receivable', 'payable')),
  key           text NOT NULL,
  amount_cents  bigint NOT NULL,
  PRIMARY KEY (company_id, currency, line, key, day)
);
CREATE INDEX ledger_daily_day ON ledger_daily (company_id, day);

CREATE CONSTRAINT TRIGGER accounts_version AFTER INSERT OR UPDATE OR DELETE ON accounts
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
CREATE CONSTRAINT TRIGGER movements_version AFTER INSERT OR UPDATE OR DELETE ON movements
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
CREATE CONSTRAINT TRIGGER sales_version AFTER INSERT OR UPDATE OR DELETE ON sales
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
CREATE CONSTRAINT TRIGGER recurring_version AFTER INSERT OR UPDATE OR DELETE ON recurring_transactions
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
