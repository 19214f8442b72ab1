-- Foundation: tenants, people, API keys, CRM, the event outbox and the
-- bookkeeping tables of the HTTP conventions (idempotency, rate limit,
-- response cache versions).

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE companies (
  id               text PRIMARY KEY,
  name             text NOT NULL,
  slug             text NOT NULL UNIQUE,
  website          text,
  legal_name       text,
  logo_url         text,
  business_type    text,
  business_context text,
  business_goals   jsonb NOT NULL DEFAULT '[]',
  max_team_size    integer NOT NULL DEFAULT 5 CHECK (max_team_size >= 1),
  enabled_modules  text[] NOT NULL DEFAULT '{}',
  plan             text NOT NULL DEFAULT 'free' CHECK (plan IN ('free', 'starter', 'enterprise')),
  mcp_quota        integer CHECK (mcp_quota >= 0),
  response_cache   boolean NOT NULL DEFAULT false,
  storage_quota_mb integer NOT NULL DEFAULT 1024 CHECK (storage_quota_mb >= 0),
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id                   text PRIMARY KEY,
  email                text NOT NULL,
  first_name           text,
  last_name            text,
  phone                text,
  username             text,
  birthdate            date,
  booking_slug         text,
  avatar_url           text,
  settings_preferences jsonb NOT NULL DEFAULT '{}',
  password_hash        text,
  deleted_at           timestamptz,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);
-- Email and booking slug are unique across the service among live users.
CREATE UNIQUE INDEX users_email_key ON users (lower(email)) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX users_booking_slug_key ON users (booking_slug) WHERE deleted_at IS NULL;

CREATE TABLE memberships (
  company_id  text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  is_owner    boolean NOT NULL DEFAULT false,
  permissions text[] NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, user_id)
);
CREATE INDEX memberships_user ON memberships (user_id);

-- Only the SHA-256 digest of a key's secret is stored; the secret is shown once.
CREATE TABLE api_keys (
  id                    text PRIMARY KEY,
  company_id            text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  user_id               text NOT NULL REFERENCES users (id),
  name                  text NOT NULL DEFAULT 'API key',
  secret_digest         bytea NOT NULL UNIQUE,
  secret_last_four      text NOT NULL,
  scopes                text[] NOT NULL,
  allowed_origins       text[] NOT NULL DEFAULT '{}',
  rate_limit_per_minute integer CHECK (rate_limit_per_minute >= 1),
  revoked_at            timestamptz,
  created_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_keys_company ON api_keys (company_id, created_at DESC, id DESC);

CREATE TABLE customers (
  id                text PRIMARY KEY,
  company_id        text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  name              text NOT NULL,
  email             text,
  phone             text,
  legal_name        text,
  tax_id            text,
  address           jsonb,
  notes             text,
  tags              text[] NOT NULL DEFAULT '{}',
  custom_properties jsonb NOT NULL DEFAULT '{}',
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
-- Keyset pagination: (created_at, id) descending within a company.
CREATE INDEX customers_page ON customers (company_id, created_at DESC, id DESC);
-- Text search over name, email and phone: a trigram index keeps '%q%' fast.
CREATE INDEX customers_search ON customers
  USING gin ((coalesce(name, '') || ' ' || coalesce(email, '') || ' ' || coalesce(phone, '')) gin_trgm_ops);
CREATE INDEX customers_email ON customers (company_id, lower(email));

CREATE TABLE leads (
  id                text PRIMARY KEY,
  company_id        text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  name              text NOT NULL,
  email             text,
  phone             text,
  company_name      text,
  job_title         text,
  status            text NOT NULL DEFAULT 'new',
  source            text,
  notes             text,
  tags              text[] NOT NULL DEFAULT '{}',
  custom_properties jsonb NOT NULL DEFAULT '{}',
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX leads_page ON leads (company_id, created_at DESC, id DESC);
CREATE INDEX leads_search ON leads
  USING gin ((coalesce(name, '') || ' ' || coalesce(email, '') || ' ' || coalesce(phone, '')) gin_trgm_ops);
CREATE INDEX leads_email ON leads (company_id, lower(email));

CREATE TABLE automations (
  id             text PRIMARY KEY,
  company_id     text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  name           text NOT NULL,
  description    text,
  active         boolean NOT NULL DEFAULT false,
  trigger_type   text NOT NULL,
  trigger_config jsonb NOT NULL DEFAULT '{}',
  steps          jsonb NOT NULL DEFAULT '[]',
  runs_count     integer NOT NULL DEFAULT 0,
  last_run_at    timestamptz,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX automations_page ON automations (company_id, created_at DESC, id DESC);

-- Transactional outbox: every fact that notifies is written here in the same
-- transaction as the record it describes.
CREATE TABLE events (
  id          text PRIMARY KEY,
  company_id  text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  name        text NOT NULL,
  api_version text NOT NULL,
  data        jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_company ON events (company_id, created_at DESC, id DESC);

CREATE TABLE idempotency_keys (
  company_id       text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  key              text NOT NULL,
  method           text NOT NULL,
  path             text NOT NULL,
  fingerprint      text NOT NULL,
  state            text NOT NULL CHECK (state IN ('running', 'done')),
  response_status  integer,
  response_headers jsonb,
  response_body    text,
  locked_at        timestamptz NOT NULL DEFAULT now(),
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (company_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- Response cache: each write bumps the version of its collection, so a cached
-- page keyed by version is never served after a write (see api/middleware/response-cache.ts).
CREATE TABLE collection_versions (
  company_id text NOT NULL,
  collection text NOT NULL,
  version    bigint NOT NULL DEFAULT 1,
  PRIMARY KEY (company_id, collection)
);

CREATE FUNCTION bump_collection_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant text;
BEGIN
  IF TG_OP = 'DELETE' THEN tenant := OLD.company_id; ELSE tenant := NEW.company_id; END IF;
  INSERT INTO collection_versions (company_id, collection, version)
  VALUES (tenant, TG_TABLE_NAME, 1)
  ON CONFLICT (company_id, collection) DO UPDATE SET version = collection_versions.version + 1;
  RETURN NULL;
END $$;

CREATE TRIGGER customers_version AFTER INSERT OR UPDATE OR DELETE ON customers
  FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
CREATE TRIGGER leads_version AFTER INSERT OR UPDATE OR DELETE ON leads
  FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
CREATE TRIGGER automations_version AFTER INSERT OR UPDATE OR DELETE ON automations
  FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
