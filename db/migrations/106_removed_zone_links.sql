-- Two zone names that ICU (and so Intl and the API's check before this
-- release) still reads, but that the tz database removed and PostgreSQL does
-- not know: a record holding one failed every SQL read in its zone (`AT TIME
-- ZONE`: a booking link's daily limit, money's local days, the recurring cron).
-- The API now checks names against pg_timezone_names (db/time-zones.ts); the
-- stored ones are rewritten to the zones they were links to.
SET CONSTRAINTS ALL IMMEDIATE;

CREATE TEMPORARY TABLE removed_zones (name text PRIMARY KEY, target text NOT NULL) ON COMMIT DROP;
INSERT INTO removed_zones VALUES ('US/Pacific-New', 'America/Los_Angeles'), ('Canada/East-Saskatchewan', 'America/Regina');

UPDATE companies t SET timezone = z.target FROM removed_zones z WHERE t.timezone = z.name;
UPDATE booking_links t SET timezone = z.target FROM removed_zones z WHERE t.timezone = z.name;
UPDATE calendar_events t SET timezone = z.target FROM removed_zones z WHERE t.timezone = z.name;
UPDATE bookings t SET booker_timezone = z.target FROM removed_zones z WHERE t.booker_timezone = z.name;
UPDATE bookings t SET link_timezone = z.target FROM removed_zones z WHERE t.link_timezone = z.name;
