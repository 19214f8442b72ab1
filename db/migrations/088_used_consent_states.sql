-- A Google consent link (`wsctl calendar connect`) works once: the nonce of
-- its signed state is recorded when the callback stores the connection, and a
-- second use is refused. Kept until the state expires (one hour), then
-- purged by the hourly housekeeping.
CREATE TABLE used_consent_states (
  nonce      text PRIMARY KEY,
  expires_at timestamptz NOT NULL
);
CREATE INDEX used_consent_states_expires ON used_consent_states (expires_at);
