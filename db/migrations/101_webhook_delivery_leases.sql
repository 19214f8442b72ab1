-- Webhook deliveries are their own queue (worker/webhooks/dispatcher.ts):
-- the dispatcher claims due deliveries from this table, with no pg-boss job
-- per attempt. A delivery is due when `next_attempt_at` has come and it is
-- not leased; claiming it leases it (`leased_until`), and one whose worker
-- died is claimed again when its lease runs out (sent again with the same
-- event id, never lost). Writing the attempt's result sets `next_attempt_at`
-- to the next attempt's time (null when none is owed) and clears the lease.
-- `leased_until` is in no index, so a claim is a HOT update (migration 042).
--
-- Measured (npm run bench -- webhooks, docs/bench.md): a job's insert, fetch
-- and delete per attempt cost more than the delivery's own writes.
ALTER TABLE webhook_deliveries ADD COLUMN leased_until timestamptz;

-- The due deliveries of one endpoint, oldest first: what a claim reads.
-- Partial: settled deliveries (most of the table) have no next attempt.
-- The build blocks delivery writes while it runs; the release fails after
-- 5 s rather than queue behind a long transaction.
SET LOCAL lock_timeout = '5s';
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE next_attempt_at IS NOT NULL;
