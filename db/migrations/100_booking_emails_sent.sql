-- Which of a booking's emails went out (docs/bookings.md, Emails): one row
-- per booking, kind and recipient once its server took it. A retry of the
-- job (the other recipient's server was temporarily refusing) sends only
-- what is missing, so the booker does not get the same confirmation again
-- on every retry.
CREATE TABLE booking_emails_sent (
  booking_id  text NOT NULL REFERENCES bookings (id) ON DELETE CASCADE,
  kind        text NOT NULL CHECK (kind IN ('confirmed', 'rescheduled', 'cancelled')),
  recipient   text NOT NULL CHECK (recipient IN ('booker', 'host')),
  sent_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (booking_id, kind, recipient)
);
