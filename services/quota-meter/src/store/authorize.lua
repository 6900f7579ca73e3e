-- Authorize: one atomic round trip per call (guard.lua is loaded in front).
-- key lookup -> account -> status -> burst guard -> both windows check-and-increment.
-- Key names derive from the account found, so this runs on a standalone (or
-- replicated / sentinel) Redis, not Redis Cluster.
--
-- ARGV: 1 prefix, 2 key hash (hex), 3 now (ms), 4 day id, 5 month id,
--       6 day counter TTL (ms), 7 month counter TTL (ms), 8 default burst per second
-- Reply: {code, key id, account id, status, stored hash, day used, month used, day limit, month limit}
-- code: 0 allow, 1 invalid key, 2 subscription inactive, 3 daily, 4 monthly, 5 rate limited
local p = ARGV[1]

local k, refused = activeKey(p, ARGV[2], ARGV[8])
if not k then return refused end
local keyId, acct, storedHash, daily, monthly, burst = k[1], k[2], k[3], k[5], k[6], k[7]

local dk = p .. 'd:' .. acct .. ':' .. ARGV[4]
local mk = p .. 'm:' .. acct .. ':' .. ARGV[5]
local d = tonumber(redis.call('GET', dk)) or 0
local m = tonumber(redis.call('GET', mk)) or 0

-- The guard counts every attempt of a valid key, so a client looping on a spent window
-- trips it too; a refused burst never reaches the windows.
if not burstAllows(p, acct, burst, tonumber(ARGV[3])) then
  return {5, keyId, acct, 'active', storedHash, d, m, daily, monthly}
end

-- Monthly first: when both windows are spent, the longer wait is the useful answer.
if monthly > 0 and m >= monthly then return {4, keyId, acct, 'active', storedHash, d, m, daily, monthly} end
if daily > 0 and d >= daily then return {3, keyId, acct, 'active', storedHash, d, m, daily, monthly} end

d = redis.call('INCR', dk)
if d == 1 then redis.call('PEXPIRE', dk, ARGV[6]) end
m = redis.call('INCR', mk)
if m == 1 then redis.call('PEXPIRE', mk, ARGV[7]) end
return {0, keyId, acct, 'active', storedHash, d, m, daily, monthly}
