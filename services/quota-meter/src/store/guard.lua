-- Shared by authorize.lua and read-usage.lua: the store loads each of them with this
-- text in front, so the key lookup and the burst guard are written once.
-- MemoryStore (memory-store.ts) is their in-memory twin; test/quota-meter/store-contract
-- runs one suite against both.

-- The key behind a hash and its account: {key id, account id, stored hash, status,
-- daily, monthly, burst}, or nil when the key or its account is unknown.
local function lookup(p, hash)
  local ref = redis.call('HGET', p .. 'keys', hash)
  if not ref then return nil end
  local sep = string.find(ref, ':', 1, true)
  local keyId = string.sub(ref, 1, sep - 1)
  local acct = string.sub(ref, sep + 1)
  local storedHash = redis.call('HGET', p .. 'key:' .. keyId, 'hash')
  local a = redis.call('HMGET', p .. 'acct:' .. acct, 'status', 'daily', 'monthly', 'burst')
  if not storedHash or not a[1] then return nil end
  return {keyId, acct, storedHash, a[1], tonumber(a[2]) or 0, tonumber(a[3]) or 0, tonumber(a[4]) or 0}
end

-- Burst guard (GCRA): up to `burst` calls at once, `burst` per second sustained, per
-- account and shared by every replica and every call that passes it. True when this call
-- may go (and it is recorded), false when it is refused. burst <= 0: no guard.
local function burstAllows(p, acct, burst, now)
  if burst <= 0 then return true end
  local rk = p .. 'r:' .. acct
  local tat = tonumber(redis.call('GET', rk)) or now
  if tat < now then tat = now end
  local nextTat = tat + 1000 / burst
  if nextTat - now > 1000 then return false end
  redis.call('SET', rk, string.format('%.3f', nextTat), 'PX', math.ceil(nextTat - now) + 1)
  return true
end
