-- Time zones are IANA names written as the zone database writes them
-- (api/routes/calendar-event-schemas.ts, isTimeZone). Before, any letter case
-- was accepted (`america/mexico_city`): stored values are rewritten to the
-- database's spelling, so a client that reads a record and writes it back is
-- not refused. A UTC offset (`+05:00`) has no IANA name and is left as it is.
SET CONSTRAINTS ALL IMMEDIATE;

CREATE TEMPORARY TABLE zone_names ON COMMIT DROP AS SELECT DISTINCT name FROM pg_timezone_names;

UPDATE companies t SET timezone = z.name FROM zone_names z
 WHERE lower(t.timezone) = lower(z.name) AND t.timezone <> z.name;
UPDATE booking_links t SET timezone = z.name FROM zone_names z
 WHERE lower(t.timezone) = lower(z.name) AND t.timezone <> z.name;
UPDATE calendar_events t SET timezone = z.name FROM zone_names z
 WHERE lower(t.timezone) = lower(z.name) AND t.timezone <> z.name;
UPDATE bookings t SET booker_timezone = z.name FROM zone_names z
 WHERE lower(t.booker_timezone) = lower(z.name) AND t.booker_timezone <> z.name;
