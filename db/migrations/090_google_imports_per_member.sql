-- An event imported from Google is one member's busy time: two members of one
-- company who both attend a Google event see it under the same Google id in
-- their calendars, and each must get a row (before, the key was the company and
-- the Google id, so the second member's pull took over the first member's row
-- and left them free at that time). The key is now the member's.
DROP INDEX calendar_events_google_import;
CREATE UNIQUE INDEX calendar_events_google_import ON calendar_events (company_id, user_id, google_event_id) WHERE source = 'google';
-- Shared events imported before this key belong to one member only: every
-- connection's next pull lists its calendar in full, which gives each member
-- their own copy.
UPDATE calendar_connections SET sync_token = NULL;
