-- Authorize: one atomic round trip per call.
-- key lookup -> account -> status -> burst guard -> both windows check-and-increment.
-- Key names derive from the account found, so this runs on a standalone (or
-- replicated / sentinel) Redis, not Redis Cluster.
--
-- ARGV: 1 prefix, 2 key hash (hex), 3 now (ms), 4 day id, 5 month id,
--       6 day counter TTL (ms), 7 month counter TTL (ms), 8 default burst per second
-- Reply: {code, key id, account id, status, stored hash, day used, month used, day limit, month limit}
-- code: 0 allow, 1 invalid key, 2 subscription inactive, 3 daily, 4 monthly, 5 rate limited
local p = ARGV[1]

local ref = redis.call('HGET', p .. 'keys', ARGV[2])
if not ref then return {1} end
local sep = string.find(ref, ':', 1, true)
local keyId = string.sub(ref, 1, sep - 1)
local acct = string.sub(ref, sep + 1)

local storedHash = redis.call('HGET', p .. 'key:' .. keyId, 'hash')
local a = redis.call('HMGET', p .. 'acct:' .. acct, 'status', 'daily', 'monthly', 'burst')
if not storedHash or not a[1] then return {1} end
if a[1] ~= 'active' then return {2, keyId, acct, a[1], storedHash} end

local daily = tonumber(a[2]) or 0
local monthly = tonumber(a[3]) or 0
local burst = tonumber(a[4]) or 0
if burst <= 0 then burst = tonumber(ARGV[8]) or 0 end

local dk = p .. 'd:' .. acct .. ':' .. ARGV[4]
local mk = p .. 'm:' .. acct .. ':' .. ARGV[5]
local d = tonumber(redis.call('GET', dk)) or 0
local m = tonumber(redis.call('GET', mk)) or 0

-- Burst guard (GCRA): up to `burst` calls at once, `burst` per second sustained, shared
-- by every replica. It counts every attempt of a valid key, so a client looping on a
-- spent window trips it too; a refused burst never reaches the windows.
if burst > 0 then
  local now = tonumber(ARGV[3])
  local rk = p .. 'r:' .. acct
  local tat = tonumber(redis.call('GET', rk)) or now
  if tat < now then tat = now end
  local nextTat = tat + 1000 / burst
  if nextTat - now > 1000 then
    return {5, keyId, acct, 'active', storedHash, d, m, daily, monthly}
  end
  redis.call('SET', rk, string.format('%.3f', nextTat), 'PX', math.ceil(nextTat - now) + 1)
end

-- Monthly first: when both windows are spent, the longer wait is the useful answer.
if monthly > 0 and m >= monthly then return {4, keyId, acct, 'active', storedHash, d, m, daily, monthly} end
if daily > 0 and d >= daily then return {3, keyId, acct, 'active', storedHash, d, m, daily, monthly} end

d = redis.call('INCR', dk)
if d == 1 then redis.call('PEXPIRE', dk, ARGV[6]) end
m = redis.call('INCR', mk)
if m == 1 then redis.call('PEXPIRE', mk, ARGV[7]) end
return {0, keyId, acct, 'active', storedHash, d, m, daily, monthly}
