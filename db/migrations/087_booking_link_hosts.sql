-- Booking links and their hosts.
--
-- The version triggers of booking_links and calendar_events are deferred
-- constraint triggers: fired at once here, so that the index and the foreign
-- key below do not meet "pending trigger events" left by the updates.
SET CONSTRAINTS ALL IMMEDIATE;
--
-- 1. A link whose host is no longer a member of its company takes no
--    bookings: removing a member switches their links there off
--    (api/routes/user-queries.ts, removeMember). Links of hosts removed
--    before this migration are switched off here.
UPDATE booking_links l SET active = false, updated_at = now()
 WHERE l.active
   AND NOT EXISTS (SELECT 1 FROM memberships m WHERE m.company_id = l.company_id AND m.user_id = l.user_id);

-- 2. A link's public_url carries its host's booking_slug: changing the slug
--    is a change to the booking_links collection of every company the host
--    belongs to, whose cached list pages must not be served again.
CREATE FUNCTION bump_host_booking_links() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO collection_versions (company_id, collection, version)
  SELECT m.company_id, 'booking_links', 1 FROM memberships m WHERE m.user_id = NEW.id
  ON CONFLICT (company_id, collection) DO UPDATE SET version = collection_versions.version + 1;
  RETURN NULL;
END $$;
CREATE TRIGGER users_booking_slug_version AFTER UPDATE OF booking_slug ON users
  FOR EACH ROW WHEN (OLD.booking_slug IS DISTINCT FROM NEW.booking_slug) EXECUTE FUNCTION bump_host_booking_links();

-- 3. A booking's calendar event named its link with no foreign key, so a
--    deleted link stayed named there while the booking read null.
UPDATE calendar_events e SET booking_link_id = NULL
 WHERE e.booking_link_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM booking_links l WHERE l.id = e.booking_link_id);
CREATE INDEX calendar_events_booking_link ON calendar_events (booking_link_id) WHERE booking_link_id IS NOT NULL;
ALTER TABLE calendar_events ADD CONSTRAINT calendar_events_booking_link_id_fkey
  FOREIGN KEY (booking_link_id) REFERENCES booking_links (id) ON DELETE SET NULL;
