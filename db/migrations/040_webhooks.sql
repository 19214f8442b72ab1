-- Webhooks: endpoints, one delivery per (event, endpoint), and the user
-- sessions that authenticate the in-application endpoint routes.

-- The exact JSON body sent to receivers, built once when the event is
-- recorded: every attempt and every endpoint gets (and is signed over) these
-- bytes, and a delivery's `payload` is read from here.
ALTER TABLE events ADD COLUMN payload text;
CREATE INDEX events_created ON events (created_at);

CREATE TABLE webhook_endpoints (
  id                   text PRIMARY KEY,
  company_id           text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  url                  text NOT NULL,
  description          text,
  enabled_events       text[] NOT NULL CHECK (cardinality(enabled_events) > 0),
  active               boolean NOT NULL DEFAULT true,
  -- The HMAC key must be usable to sign, so it is stored as is (as Stripe
  -- does); it is only ever returned by create and rotate-secret.
  secret               text NOT NULL,
  consecutive_failures integer NOT NULL DEFAULT 0,
  last_delivery_at     timestamptz,
  last_delivery_status text,
  disabled_at          timestamptz,
  disabled_reason      text,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_page ON webhook_endpoints (company_id, created_at DESC, id DESC);
-- Fan-out reads the active endpoints of one company on every recorded event.
CREATE INDEX webhook_endpoints_fanout ON webhook_endpoints (company_id) WHERE active;

CREATE TABLE webhook_deliveries (
  id              text PRIMARY KEY,
  company_id      text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  endpoint_id     text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id        text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  event           text NOT NULL,
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'exhausted')),
  attempts        integer NOT NULL DEFAULT 0,
  max_attempts    integer NOT NULL DEFAULT 6,
  next_attempt_at timestamptz,
  delivered_at    timestamptz,
  response_status integer,
  response_body   text,
  error_message   text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
-- Delivery history of one endpoint, newest first (cursor pagination).
CREATE INDEX webhook_deliveries_page ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
-- The 30-day retention purge.
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);

-- Sessions of people signed in with email and password (`wsctl user
-- set-password`). Only the SHA-256 digest of the token is stored; a session
-- acts on one company, chosen at sign-in.
CREATE TABLE user_sessions (
  id            text PRIMARY KEY,
  user_id       text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  company_id    text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  token_digest  bytea NOT NULL UNIQUE,
  expires_at    timestamptz NOT NULL,
  revoked_at    timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX user_sessions_user ON user_sessions (user_id);
