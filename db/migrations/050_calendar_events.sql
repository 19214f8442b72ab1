-- Calendar events (contract: Calendar event). The booking and external
-- calendar columns exist now and are filled by those features later.
CREATE EXTENSION IF NOT EXISTS btree_gist;

CREATE TABLE calendar_events (
  id                text PRIMARY KEY,
  company_id        text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  user_id           text NOT NULL REFERENCES users (id),
  title             text NOT NULL,
  description       text,
  location          text,
  color             text NOT NULL DEFAULT '#2563eb',
  starts_at         timestamptz NOT NULL,
  ends_at           timestamptz NOT NULL,
  all_day           boolean NOT NULL DEFAULT false,
  timezone          text NOT NULL DEFAULT 'America/Mexico_City',
  kind              text NOT NULL DEFAULT 'event' CHECK (kind IN ('event', 'meeting', 'task')),
  source            text NOT NULL DEFAULT 'native' CHECK (source IN ('native', 'booking', 'google')),
  meet_url          text,
  create_meet       boolean NOT NULL DEFAULT false,
  sync_to_google    boolean,
  attendees         jsonb NOT NULL DEFAULT '[]',
  reminders_minutes integer[] NOT NULL DEFAULT '{15}',
  google_event_id   text,
  booking_link_id   text,
  booking_id        text,
  booker_lead_id    text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  CHECK (ends_at > starts_at)
);
-- Keyset pagination of the whole list.
CREATE INDEX calendar_events_page ON calendar_events (company_id, created_at DESC, id DESC);
-- The range filter (`from`: ends after it, `to`: starts before it) of one host
-- or of the company: overlap of [starts_at, ends_at) with the window, served
-- by a GiST index whatever the window's position in a long history.
CREATE INDEX calendar_events_host_range ON calendar_events USING gist (company_id, user_id, tstzrange(starts_at, ends_at));
CREATE INDEX calendar_events_range ON calendar_events USING gist (company_id, tstzrange(starts_at, ends_at));

CREATE CONSTRAINT TRIGGER calendar_events_version AFTER INSERT OR UPDATE OR DELETE ON calendar_events
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
