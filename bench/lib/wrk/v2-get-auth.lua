-- v2-get.lua plus "Authorization: Basic b64(<user:password>)" on every request (the bench's
-- "(auth)" GET row). Arguments after `--`: <prefix> <user:password>.
-- GET /v2/keys/bench-get/k (pre-populated; default = serializable/local read)
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "common.lua")
wrk.method = "GET"
wrk.path = "/v2/keys/bench-get/k"
-- wrk.init calls init(args) before it formats the static request, so the header is in it
function init(args)
  parse_args(args)
  assert(args and args[2], "usage: wrk ... -s v2-get-auth.lua URL -- <prefix> <user:password>")
  wrk.headers["Authorization"] = "Basic " .. b64(args[2])
end
