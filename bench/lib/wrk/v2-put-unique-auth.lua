-- v2-put-unique.lua plus "Authorization: Basic b64(<user:password>)" on every request (the
-- bench's "(auth)" PUT row). Arguments after `--`: <prefix> <user:password>; the prefix must
-- be covered by the user's role (the bench's role grants /bench*).
-- PUT /v2/keys/<prefix>/<tid>-<n>  value=<64 bytes>, every request a new key
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "common.lua")
local n = 0
local hdr = { ["Content-Type"] = "application/x-www-form-urlencoded" }
local body = "value=" .. VALUE64
function init(args)
  parse_args(args)
  assert(args and args[2], "usage: wrk ... -s v2-put-unique-auth.lua URL -- <prefix> <user:password>")
  hdr["Authorization"] = "Basic " .. b64(args[2])
end
function request()
  n = n + 1
  return wrk.format("PUT", "/v2/keys/" .. PREFIX .. "/" .. tid .. "-" .. n, hdr, body)
end
