-- An authorization request the person denied ("Cancelar" on the consent page), named as its code would
-- be (the client and its PKCE challenge, migration 105): the consent form sent again afterwards (back,
-- another click, the other button) answers that the request was answered, so one request never gets
-- both access_denied and a code. Kept 30 days (worker/jobs/purge-expired.ts).
SET LOCAL lock_timeout = '5s';
CREATE TABLE oauth_denied_requests (
  client_id      text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  code_challenge text NOT NULL,
  denied_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (client_id, code_challenge)
);
CREATE INDEX oauth_denied_requests_denied_at ON oauth_denied_requests (denied_at);
