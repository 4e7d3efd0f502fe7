-- GET /v1/health_check, N requests per write (HTTP/1.1 pipelining), for
-- wrk (Debian's package): what a request's system calls cost next to its
-- handler (docs/BENCHMARKS.md, "Ticketing spike"). N is the first script argument:
--   wrk -t1 -c64 -d10s -s scripts/wrk/pipeline.lua http://127.0.0.1:8080 -- 16
-- 1 sends one request per write, as a client without pipelining.
init = function(args)
  local depth = tonumber(args[1]) or 1
  local reqs = {}
  for i = 1, depth do
    reqs[i] = wrk.format(nil, "/v1/health_check")
  end
  batch = table.concat(reqs)
end

request = function()
  return batch
end
