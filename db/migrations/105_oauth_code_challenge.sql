-- One authorization code per authorization request: the request's PKCE challenge names it (a client makes
-- a new one for every request, RFC 7636 §4.1), so a consent form sent again (a resubmitted page, two
-- clicks) issues no second code and no second connection. The lookup needs this index.
SET LOCAL lock_timeout = '5s';
CREATE INDEX oauth_codes_challenge ON oauth_codes (code_challenge);
