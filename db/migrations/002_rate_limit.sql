-- Sliding-window rate limit shared by every web process.
--
-- Each key has 61 one-second buckets: the current second and the 60 before.
-- A request is admitted only while the sum of all 61 is under the limit, so any
-- real 60-second span (which touches at most 61 whole seconds) admits at most
-- `limit` requests. A fixed window would let 2x through around its edge.
--
-- Processes do not write here per request: they lease a small batch of tokens
-- for the current database second and admit locally until it runs out; unused
-- tokens are given back on the next lease (api/middleware/rate-limit.ts).
--
-- UNLOGGED: the counters are worth nothing after a crash (at worst a key gets
-- a fresh window), and skipping the WAL keeps a lease from waiting on a WAL
-- flush at commit. Rows of idle keys are purged by the worker.
CREATE UNLOGGED TABLE rate_limit_windows (
  key         text PRIMARY KEY,
  base_second bigint NOT NULL,
  counts      integer[] NOT NULL
);

-- Takes up to p_want tokens for p_key in the current second, after giving back
-- p_return unused tokens of an earlier lease counted in second p_return_second.
-- p_at (epoch seconds) replaces the clock; only tests pass it.
-- Returns: granted tokens; used = the window's count after the grant;
-- reset_after = whole seconds from the start of the next second until the
-- oldest counted second leaves the window; now_second = the second the grant is
-- counted in (pass it back as p_return_second); ms_left = milliseconds until
-- that second ends, after which the grant must not be used.
CREATE FUNCTION rate_limit_lease(
  p_key text, p_want integer, p_limit integer, p_return integer, p_return_second bigint,
  p_at double precision DEFAULT NULL
) RETURNS TABLE (granted integer, used integer, reset_after integer, now_second bigint, ms_left integer)
LANGUAGE plpgsql AS $$
DECLARE
  now_ts  double precision := coalesce(p_at, extract(epoch FROM clock_timestamp()));
  p_now   bigint := floor(now_ts)::bigint;
  base    bigint;
  c       integer[];
  shift   bigint;
  total   integer;
  g       integer;
  idx     integer;
  oldest  integer;
BEGIN
  INSERT INTO rate_limit_windows (key, base_second, counts)
  VALUES (p_key, p_now - 60, array_fill(0, ARRAY[61]))
  ON CONFLICT (key) DO NOTHING;
  SELECT w.base_second, w.counts INTO base, c FROM rate_limit_windows w WHERE w.key = p_key FOR UPDATE;

  IF p_return > 0 AND p_return_second BETWEEN base AND base + 60 THEN
    idx := (p_return_second - base + 1)::integer;
    c[idx] := greatest(0, c[idx] - p_return);
  END IF;

  -- A clock that stepped back (or a lease that lost a race with a later one)
  -- counts in the newest bucket rather than outside the array.
  IF p_now < base + 60 THEN
    p_now := base + 60;
  END IF;

  shift := p_now - 60 - base;
  IF shift >= 61 THEN
    c := array_fill(0, ARRAY[61]);
    base := p_now - 60;
  ELSIF shift > 0 THEN
    c := c[(shift + 1)::integer:61] || array_fill(0, ARRAY[shift::integer]);
    base := p_now - 60;
  END IF;

  SELECT coalesce(sum(x), 0) INTO total FROM unnest(c) AS x;
  g := least(greatest(0, p_want), greatest(0, p_limit - total));
  c[61] := c[61] + g;
  UPDATE rate_limit_windows SET base_second = base, counts = c WHERE rate_limit_windows.key = p_key;

  -- Seconds until the oldest counted second leaves the window and frees capacity.
  SELECT min(ord) INTO oldest FROM unnest(c) WITH ORDINALITY AS u(x, ord) WHERE x > 0;
  -- ms_left follows the real clock, not a bucket moved forward above: a grant
  -- is never used after the second it was asked in has ended.
  RETURN QUERY SELECT g, total + g, coalesce(oldest, 1)::integer, p_now,
    greatest(0, floor((floor(now_ts) + 1 - now_ts) * 1000))::integer;
END $$;
