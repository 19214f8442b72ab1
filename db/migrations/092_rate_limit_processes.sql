-- The web processes sharing the rate limits, each seen every few seconds
-- (api/rate-limiter.ts). While the database does not answer a lease, a process
-- admits for a key at most the limit divided by how many were alive, so N
-- processes cut off from it together still admit about the limit, not N times it.
CREATE TABLE rate_limit_processes (
  id      text PRIMARY KEY,
  seen_at timestamptz NOT NULL DEFAULT now()
);
