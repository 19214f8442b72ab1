-- Every attempt rewrites its delivery row (status, attempts, response), and
-- none of the columns it changes is indexed, so the new row version can stay
-- on the same page with no index entries written (a HOT update) when the
-- page has room. At the default fillfactor (100) pages are filled by the
-- inserts and no update was HOT; 80 leaves room for them. Applies to pages
-- written from now on. Measured in the webhooks bench (npm run bench --
-- webhooks, BENCH_WEBHOOK_DIAG=1): HOT updates 0% -> 75% of a 50,000-delivery
-- drain (95% at the end-to-end rate), the batch UPDATE 1.8-2.0 -> 1.6 ms a
-- call of about 80 rows. Rows already on full pages become HOT-capable only
-- after VACUUM has freed room on them.
--
-- The ALTER takes a SHARE UPDATE EXCLUSIVE lock (reads and writes go on) and
-- so waits for a VACUUM of the table in progress; an anti-wraparound one is
-- not cancelled for it. Fail the release after 5 s rather than hang it; run
-- it again later.
SET LOCAL lock_timeout = '5s';
ALTER TABLE webhook_deliveries SET (fillfactor = 80);
