-- A member's Google Calendar (docs/calendar-sync.md): one connection per
-- person, whatever companies they work for. The refresh token is sealed with
-- ENCRYPTION_KEY (lib/secret-box.ts); `sync_token` is Google's incremental
-- sync position for the inbound import.
CREATE TABLE calendar_connections (
  user_id             text PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  calendar_id         text NOT NULL DEFAULT 'primary',
  refresh_token_enc   text NOT NULL,
  status              text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'needs_reauthorization')),
  sync_token          text,
  last_synced_at      timestamptz,
  last_error          text,
  last_error_at       timestamptz,
  connected_at        timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);

-- Events imported from Google are found by their Google id, per company.
CREATE UNIQUE INDEX calendar_events_google_import ON calendar_events (company_id, google_event_id) WHERE source = 'google';
CREATE INDEX calendar_events_google_id ON calendar_events (user_id, google_event_id) WHERE google_event_id IS NOT NULL;
