-- GET random keys of surge bench kv's key space (k0000000000 ...), for
-- wrk (Debian's package) against surge's /v0 API. Fill the keys first,
-- with `surge bench kv --prefill N` or put.lua:
--   KEYS=1300000 wrk -t1 -c1 -d60s -s scripts/wrk/get.lua http://127.0.0.1:8080
-- SURGE_API_KEY, if set, is sent as a bearer token. A 404 (a key never
-- filled) shows as "Non-2xx or 3xx responses" in wrk's summary.
local keys = tonumber(os.getenv("KEYS") or "1300000")
local key = os.getenv("SURGE_API_KEY")

wrk.method = "GET"
if key then wrk.headers["Authorization"] = "Bearer " .. key end

request = function()
   return wrk.format(nil, string.format("/v0/entity?id=k%010d", math.random(0, keys - 1)))
end
