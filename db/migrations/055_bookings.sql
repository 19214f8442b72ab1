-- Booking links (what a visitor may book with a host) and bookings (what was
-- booked). Availability rules live on the link as JSON documents validated by
-- the API (api/routes/booking-link-schemas.ts); the slot arithmetic is
-- lib/booking-slots.ts.
CREATE TABLE booking_links (
  id                     text PRIMARY KEY,
  company_id             text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  user_id                text NOT NULL REFERENCES users (id),
  slug                   text NOT NULL CHECK (slug ~ '^[a-z0-9-]{1,64}$'),
  title                  text NOT NULL,
  description            text,
  active                 boolean NOT NULL DEFAULT true,
  duration_minutes       integer NOT NULL CHECK (duration_minutes BETWEEN 5 AND 720),
  slot_interval_minutes  integer CHECK (slot_interval_minutes BETWEEN 5 AND 720),
  buffer_before_minutes  integer NOT NULL DEFAULT 0 CHECK (buffer_before_minutes BETWEEN 0 AND 720),
  buffer_after_minutes   integer NOT NULL DEFAULT 0 CHECK (buffer_after_minutes BETWEEN 0 AND 720),
  minimum_notice_minutes integer NOT NULL DEFAULT 60 CHECK (minimum_notice_minutes BETWEEN 0 AND 525600),
  booking_window         jsonb NOT NULL DEFAULT '{"type": "rolling", "days": 60}',
  timezone               text NOT NULL DEFAULT 'America/Mexico_City',
  weekly_hours           jsonb NOT NULL DEFAULT '[]',
  date_overrides         jsonb NOT NULL DEFAULT '[]',
  location               jsonb,
  max_bookings_per_day   integer CHECK (max_bookings_per_day > 0),
  questions              jsonb NOT NULL DEFAULT '[]',
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now()
);
-- Detail paths accept the slug within the company; the public page finds a
-- link by its host and slug, so a host's slugs are unique across companies too.
CREATE UNIQUE INDEX booking_links_slug_key ON booking_links (company_id, slug);
CREATE UNIQUE INDEX booking_links_host_slug_key ON booking_links (user_id, slug);
CREATE INDEX booking_links_page ON booking_links (company_id, created_at DESC, id DESC);

CREATE CONSTRAINT TRIGGER booking_links_version AFTER INSERT OR UPDATE OR DELETE ON booking_links
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_collection_version();

CREATE TABLE bookings (
  id                   text PRIMARY KEY,
  company_id           text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  -- A deleted link leaves its bookings in place, unlinked.
  booking_link_id      text REFERENCES booking_links (id) ON DELETE SET NULL,
  user_id              text NOT NULL REFERENCES users (id),
  calendar_event_id    text,
  lead_id              text,
  status               text NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
  starts_at            timestamptz NOT NULL,
  ends_at              timestamptz NOT NULL,
  -- What the booking keeps the host from being booked for: its time widened by
  -- the link's buffers when it was made. Two confirmed bookings of one host
  -- never overlap here (the exclusion constraint below, the backstop of the
  -- per-host lock in api/bookings/book.ts).
  blocked              tstzrange NOT NULL,
  title                text NOT NULL,
  location             jsonb,
  booker_name          text NOT NULL,
  booker_email         text NOT NULL,
  booker_phone         text,
  booker_timezone      text,
  answers              jsonb NOT NULL DEFAULT '{}',
  meet_url             text,
  cancelled_at         timestamptz,
  cancellation_reason  text,
  cancelled_by         text CHECK (cancelled_by IN ('host', 'booker')),
  rescheduled_from_id  text REFERENCES bookings (id),
  rescheduled_to_id    text REFERENCES bookings (id),
  -- SHA-256 of the booker's manage token (an HMAC of the id, lib/booking-tokens.ts).
  manage_token_digest  text NOT NULL UNIQUE,
  -- The .ics UID is shared by a booking and its reschedules; SEQUENCE grows.
  ical_uid             text NOT NULL,
  ical_sequence        integer NOT NULL DEFAULT 0,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  CHECK (ends_at > starts_at),
  EXCLUDE USING gist (user_id WITH =, blocked WITH &&) WHERE (status = 'confirmed')
);
CREATE INDEX bookings_page ON bookings (company_id, created_at DESC, id DESC);
CREATE INDEX bookings_link_day ON bookings (booking_link_id, starts_at) WHERE status = 'confirmed';

CREATE CONSTRAINT TRIGGER bookings_version AFTER INSERT OR UPDATE OR DELETE ON bookings
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_collection_version();

-- A host's calendar events in a window, whatever the company (the slot
-- function reads one person's agenda).
CREATE INDEX calendar_events_user_range ON calendar_events USING gist (user_id, tstzrange(starts_at, ends_at));
