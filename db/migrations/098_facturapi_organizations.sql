-- Each company issues its invoices through its own Facturapi organization
-- (docs/invoicing.md): its id, made with the account's User Key by `wsctl
-- company tax-profile`, and the organization's secret key for the mode it was
-- taken in (FACTURAPI_MODE), sealed with ENCRYPTION_KEY. The key is null
-- until the organization's legal data and CSD are uploaded.
CREATE TABLE facturapi_organizations (
  company_id       text PRIMARY KEY REFERENCES companies (id) ON DELETE CASCADE,
  organization_id  text NOT NULL,
  mode             text CHECK (mode IN ('live', 'test')),
  key_enc          text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
