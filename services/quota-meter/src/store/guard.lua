-- Shared by authorize.lua and read-usage.lua: the store loads each of them with this
-- text in front, so the key lookup and the burst guard are written once.
-- MemoryStore (memory-store.ts) is their in-memory twin; test/quota-meter/store-contract
-- runs one suite against both.

-- The account behind `acct` for a call: {key id, account id, stored hash, status, daily, monthly,
-- burst, credits only}, the burst rate resolved (the account's own, else `defaultBurst`). When it
-- cannot be served: nil and the reply to give ({unknown}: no such account; {2, key id, account id,
-- status, stored hash}: subscription not active).
local function activeAccount(p, keyId, acct, storedHash, defaultBurst, unknown)
  local a = redis.call('HMGET', p .. 'acct:' .. acct, 'status', 'daily', 'monthly', 'burst', 'creditsOnly')
  if not a[1] then return nil, {unknown} end
  if a[1] ~= 'active' then return nil, {2, keyId, acct, a[1], storedHash} end
  local burst = tonumber(a[4]) or 0
  if burst <= 0 then burst = tonumber(defaultBurst) or 0 end
  return {keyId, acct, storedHash, a[1], tonumber(a[2]) or 0, tonumber(a[3]) or 0, burst, a[5] == '1'}
end

-- The key behind a hash, and its account (activeAccount); {1}: unknown key or account.
local function activeKey(p, hash, defaultBurst)
  local ref = redis.call('HGET', p .. 'keys', hash)
  if not ref then return nil, {1} end
  local sep = string.find(ref, ':', 1, true)
  local keyId = string.sub(ref, 1, sep - 1)
  local acct = string.sub(ref, sep + 1)
  local storedHash = redis.call('HGET', p .. 'key:' .. keyId, 'hash')
  if not storedHash then return nil, {1} end
  return activeAccount(p, keyId, acct, storedHash, defaultBurst, 1)
end

-- Sign-in-with-x: the account bound to a verified wallet (no key: id and hash empty); {8}: none.
local function activeWallet(p, wallet, defaultBurst)
  local acct = redis.call('HGET', p .. 'wallets', wallet)
  if not acct then return nil, {8} end
  return activeAccount(p, '', acct, '', defaultBurst, 8)
end

-- Burst guard (GCRA): up to `burst` calls at once, `burst` per second sustained, per
-- account and shared by every replica and every call that passes it. Grants up to `want`
-- units at once (a lease of several calls takes as many tokens as it holds units) and
-- returns how many it granted (recorded); 0 = refused, nothing taken, as when fewer than
-- `least` (default 1: a batch's calls, all or none) are left. burst <= 0: no guard.
local function burstGrant(p, acct, burst, now, want, least)
  if burst <= 0 then return want end
  local rk = p .. 'r:' .. acct
  local tat = tonumber(redis.call('GET', rk)) or now
  if tat < now then tat = now end
  local interval = 1000 / burst
  -- Tokens left in the bucket: what fits before the theoretical arrival time runs a full
  -- second ahead of now.
  local free = math.floor((now + 1000 - tat) / interval + 1e-9)
  local granted = math.min(want, free)
  if granted < (least or 1) then return 0 end
  local nextTat = tat + granted * interval
  redis.call('SET', rk, string.format('%.3f', nextTat), 'PX', math.ceil(nextTat - now) + 1)
  return granted
end

local function burstAllows(p, acct, burst, now)
  return burstGrant(p, acct, burst, now, 1) == 1
end
