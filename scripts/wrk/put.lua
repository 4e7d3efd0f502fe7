-- PUT random keys of surge bench kv's key space (k0000000000 ...), for
-- wrk (Debian's package) against surge's /v0 API:
--   KEYS=1300000 VALUE_SIZE=100 wrk -t1 -c1 -d60s -s scripts/wrk/put.lua http://127.0.0.1:8080
-- KEYS and VALUE_SIZE default to surge bench kv's defaults; SURGE_API_KEY,
-- if set, is sent as a bearer token.
local keys = tonumber(os.getenv("KEYS") or "1300000")
local size = tonumber(os.getenv("VALUE_SIZE") or "100")
local key = os.getenv("SURGE_API_KEY")

wrk.method = "PUT"
wrk.body = string.rep("v", size)
if key then wrk.headers["Authorization"] = "Bearer " .. key end

request = function()
   return wrk.format(nil, string.format("/v0/entity?id=k%010d", math.random(0, keys - 1)))
end
