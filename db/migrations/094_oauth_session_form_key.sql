-- A key of each sign-in session that never leaves the server. The consent
-- form carries an HMAC under it of the authorization request the page was
-- shown for (api/oauth/routes.ts, `sealOf`), so the request in the form's
-- hidden fields cannot be changed before the answer: another scope, another
-- client or another PKCE challenge. Sessions open when this runs get a key of
-- their own from the default; new ones get theirs from openSession.
ALTER TABLE oauth_sessions ADD COLUMN form_key text NOT NULL DEFAULT encode(sha256(gen_random_uuid()::text::bytea), 'hex');
