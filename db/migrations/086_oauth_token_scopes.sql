-- A refresh asking for a narrower scope narrows the access token it issues,
-- not the grant (RFC 6749 §6): the access token keeps its own scopes; NULL
-- means the grant's.
ALTER TABLE oauth_tokens ADD COLUMN scopes text[];
