-- Tax invoices (CFDI 4.0, module `invoicing`; docs/invoicing.md): the
-- company's tax profile (its CSD key and password sealed with
-- ENCRYPTION_KEY, never readable back), the invoices of sales with their
-- stamping state, and the payment complements of deferred (PPD) sales.
CREATE TABLE company_tax_profiles (
  company_id          text PRIMARY KEY REFERENCES companies (id) ON DELETE CASCADE,
  rfc                 text NOT NULL,
  legal_name          text NOT NULL,
  tax_regime          text NOT NULL,
  zip                 text NOT NULL,
  certificate_base64  text NOT NULL,
  certificate_number  text NOT NULL,
  valid_from          timestamptz NOT NULL,
  valid_to            timestamptz NOT NULL,
  key_enc             text NOT NULL,
  password_enc        text NOT NULL,
  updated_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE invoices (
  id                          text PRIMARY KEY,
  company_id                  text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  sale_id                     text NOT NULL REFERENCES sales (id),
  status                      text NOT NULL CHECK (status IN ('pending', 'valid', 'failed', 'cancellation_pending', 'cancelled')),
  provider                    text NOT NULL CHECK (provider IN ('development', 'facturapi')),
  provider_id                 text,
  uuid                        text,
  series                      text,
  folio                       text,
  stamped_at                  timestamptz,
  verification_url            text,
  failure_reason              text,
  payment_method              text NOT NULL CHECK (payment_method IN ('PUE', 'PPD')),
  payment_form                text NOT NULL,
  cfdi_use                    text NOT NULL,
  receiver                    jsonb NOT NULL,
  currency                    text NOT NULL,
  total_cents                 bigint NOT NULL,
  document                    jsonb NOT NULL,
  xml                         text,
  substitutes_id              text REFERENCES invoices (id),
  substituted_by_id           text REFERENCES invoices (id),
  cancellation_motive         text CHECK (cancellation_motive IN ('01', '02', '03', '04')),
  cancellation_substitute_uuid text,
  cancellation_requested_at   timestamptz,
  cancelled_at                timestamptz,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX invoices_page ON invoices (company_id, created_at DESC, id DESC);
CREATE INDEX invoices_sale ON invoices (sale_id);
-- A sale has one live invoice; its substitute is the one exception, while the old one is being cancelled.
CREATE UNIQUE INDEX invoices_one_live_per_sale ON invoices (sale_id) WHERE status IN ('pending', 'valid', 'cancellation_pending') AND substitutes_id IS NULL;

CREATE TABLE invoice_payment_complements (
  id               text PRIMARY KEY,
  company_id       text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  invoice_id       text NOT NULL REFERENCES invoices (id) ON DELETE CASCADE,
  income_id        text NOT NULL,
  amount_cents     bigint NOT NULL,
  installment      integer NOT NULL,
  previous_balance_cents bigint NOT NULL,
  paid_at          timestamptz NOT NULL,
  status           text NOT NULL CHECK (status IN ('pending', 'valid', 'failed')),
  provider_id      text,
  uuid             text,
  stamped_at       timestamptz,
  failure_reason   text,
  xml              text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (invoice_id, income_id)
);

CREATE CONSTRAINT TRIGGER invoices_version AFTER INSERT OR UPDATE OR DELETE ON invoices
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
