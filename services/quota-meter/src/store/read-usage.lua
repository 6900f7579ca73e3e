-- Read usage (GetUsage): one atomic round trip (guard.lua is loaded in front).
-- key lookup -> account -> status -> the burst guard chain calls share -> both windows and
-- every day asked. Nothing is counted in the windows: reading usage is free.
--
-- ARGV: 1 prefix, 2 key hash (hex), 3 now (ms), 4 day id, 5 month id,
--       6 default burst per second, 7.. the day ids asked (oldest first)
-- Reply: {code, key id, account id, status, stored hash, day used, month used, day limit,
--         month limit, requests of day 1, errors of day 1, requests of day 2, ...}
-- code: 0 allow, 1 invalid key, 2 subscription inactive, 5 rate limited
local p = ARGV[1]

local k, refused = activeKey(p, ARGV[2], ARGV[6])
if not k then return refused end
local keyId, acct, storedHash, daily, monthly, burst = k[1], k[2], k[3], k[5], k[6], k[7]
if not burstAllows(p, acct, burst, tonumber(ARGV[3])) then return {5, keyId, acct, 'active', storedHash} end

local reply = {
  0, keyId, acct, 'active', storedHash,
  tonumber(redis.call('GET', p .. 'd:' .. acct .. ':' .. ARGV[4])) or 0,
  tonumber(redis.call('GET', p .. 'm:' .. acct .. ':' .. ARGV[5])) or 0,
  daily, monthly,
}
for i = 7, #ARGV do
  local h = redis.call('HMGET', p .. 'u:' .. acct .. ':' .. ARGV[i], 'requests', 'errors')
  reply[#reply + 1] = tonumber(h[1]) or 0
  reply[#reply + 1] = tonumber(h[2]) or 0
end
return reply
