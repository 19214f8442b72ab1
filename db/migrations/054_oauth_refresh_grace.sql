-- Clients refresh in parallel: a refresh token replayed within 60 s of its
-- rotation gets the same successor pair. The pair is kept encrypted with a
-- key derived from the old refresh token itself, so only its holder can read it.
ALTER TABLE oauth_tokens ADD COLUMN successor bytea;
ALTER TABLE oauth_clients ADD COLUMN last_used_at timestamptz NOT NULL DEFAULT now();
