-- POST /v1/transfers of 1..1000 between two random accounts of surge bench
-- transfer's set (bench-0 ... bench-N), for wrk (Debian's package): single
-- transfers measured by the same client as an empty handler, for the target's
-- ratio to the ceiling. Create and fund the accounts first:
--   surge bench transfer --iterations 1 --vus 1 --duration 0
--   ACCOUNTS=50000 wrk -t2 -c64 -d30s -s scripts/wrk/transfer.lua http://127.0.0.1:8080
-- The server assigns each transfer its id, so every request is new work.
-- SURGE_API_KEY, if set, is sent as a bearer token.
local accounts = tonumber(os.getenv("ACCOUNTS") or "50000")
local key = os.getenv("SURGE_API_KEY")

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
if key then wrk.headers["Authorization"] = "Bearer " .. key end

request = function()
   local from = math.random(0, accounts - 1)
   local to = (from + math.random(1, accounts - 1)) % accounts
   local body = string.format('{"from":"bench-%d","to":"bench-%d","amount":%d,"currency":"USD"}',
      from, to, math.random(1, 1000))
   return wrk.format(nil, "/v1/transfers", nil, body)
end
