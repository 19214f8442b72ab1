-- Deliveries by event. The hourly purge deletes an event only once no
-- delivery of it is left (a replay made today of a 29-day-old event keeps it
-- and its replay), and every event it deletes makes the foreign key's cascade
-- look up that event's deliveries: without an index, one scan of the whole
-- table per event, 5,000 events a batch.
-- The build blocks delivery writes while it runs (seconds for millions of
-- rows); the release fails after 5 s rather than queue behind a long transaction.
SET LOCAL lock_timeout = '5s';
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
