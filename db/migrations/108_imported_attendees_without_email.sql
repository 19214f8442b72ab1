-- Attendees Google gave no email for (a room, a resource) were imported as
-- {name, email: null}; an attendee of the API is a name and an email, never a
-- null email. The import leaves them out since this release
-- (worker/jobs/calendar-pull.ts); the events imported before it drop them here.
SET LOCAL lock_timeout = '5s';
UPDATE calendar_events
   SET attendees = (SELECT coalesce(jsonb_agg(a ORDER BY n), '[]'::jsonb)
                      FROM jsonb_array_elements(attendees) WITH ORDINALITY AS t(a, n)
                     WHERE jsonb_typeof(a->'email') = 'string')
 WHERE source = 'google'
   AND jsonb_path_exists(attendees, '$[*] ? (!exists(@.email) || @.email == null)');
