-- wrk `done` hook: one machine-readable line with the totals and the latency
-- percentiles (microseconds), parsed by bench/lib/wrk.ts. No `request` or
-- `response` hook on purpose: either would make wrk run Lua per request and
-- cost CPU the server under test needs.
--
-- WRK_METHOD and WRK_BODY (set by bench/lib/wrk.ts) make the one static
-- request a POST with a body (a JSON-RPC call), still without per-request Lua.
local method = os.getenv("WRK_METHOD")
if method then wrk.method = method end
local body = os.getenv("WRK_BODY")
if body then wrk.body = body end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"mean":%.1f,"stdev":%.1f,"max":%d,"p50":%d,"p75":%d,"p90":%d,"p99":%d,"p999":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency.stdev, latency.max,
    latency:percentile(50), latency:percentile(75), latency:percentile(90),
    latency:percentile(99), latency:percentile(99.9)))
end
