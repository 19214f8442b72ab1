-- OAuth 2.1 for MCP clients: public clients registered dynamically, browser
-- sign-in sessions, authorization codes, grants and their tokens. Codes and
-- tokens are stored only as SHA-256 digests.
CREATE TABLE oauth_clients (
  id            text PRIMARY KEY,
  client_name   text,
  redirect_uris text[] NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE oauth_sessions (
  digest     bytea PRIMARY KEY,
  user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  csrf       text NOT NULL,
  expires_at timestamptz NOT NULL
);

CREATE TABLE oauth_grants (
  id         text PRIMARY KEY,
  client_id  text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  company_id text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  scopes     text[] NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX oauth_grants_user ON oauth_grants (user_id);

CREATE TABLE oauth_codes (
  digest         bytea PRIMARY KEY,
  grant_id       text NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
  redirect_uri   text NOT NULL,
  code_challenge text NOT NULL,
  expires_at     timestamptz NOT NULL,
  used_at        timestamptz
);

CREATE TABLE oauth_tokens (
  digest     bytea PRIMARY KEY,
  grant_id   text NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
  kind       text NOT NULL CHECK (kind IN ('access', 'refresh')),
  expires_at timestamptz NOT NULL,
  rotated_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
