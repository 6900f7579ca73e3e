-- Authorize: one atomic round trip that grants a call, or a lease of several calls, to a key
-- or to a signed-in wallet (guard.lua is loaded in front).
-- lookup -> account -> status -> burst guard -> both windows check-and-increment, or, when the
-- windows are spent (or the account is credits-only), a draw from its credits.
-- A request of `calls` calls (a JSON-RPC batch) is counted whole or not at all: all its units in
-- both windows and the burst guard, or, when a window cannot cover them all, its price (the whole
-- request's) from the credits, or refused with nothing counted in the windows.
-- A lease of `want` units takes what the burst guard has left and at most a quarter of what
-- each window has left, at most `want` and at least `calls`; the gateway serves that many calls before it asks again, and
-- returns what it did not use (lease-return.lua). A credit lease is the same for money: `want`
-- calls at this call's price, at most a quarter of what the balance covers, at least this call;
-- the gateway's calls each take their own price from it and it returns the rest
-- (credit-lease-return.lua). Each credit lease is recorded (`cl:<id>`, its use counted from the
-- usage reports) so one the gateway never returns is settled by credit-lease-expire.lua. Key
-- names derive from the account found: on a Redis Cluster every quota key carries one hash tag
-- (the prefix ARGV[1] ends with it: redis-store.ts), so they share the slot KEYS[1] routes to.
--
-- ARGV: 1 prefix, 2 key hash (hex), 3 now (ms), 4 day id, 5 month id,
--       6 day counter TTL (ms), 7 month counter TTL (ms), 8 default burst per second,
--       9 units wanted (>= 1), 10 authorization id (the gateway's; "" = none),
--       11 how long a grant is remembered for release.lua (ms), 12 price (USDC atomic units; 0 =
--       no credit draw), 13 wallet ("" = a key call), 14 when an unreturned credit lease is
--       settled (ms since epoch), 15 the credit lease the gateway ended for this call ("" = none),
--       16 the credits it left (returned first, credit-lease-close.lua loaded in front),
--       17 calls in this request (>= 1; a batch's units are granted all or none)
-- Reply: {code, key id, account id, status, stored hash, day used, month used, day limit,
--         month limit, units granted (calls, for a credit lease too), credits drawn (the whole
--         lease), credit balance, copy generation}
-- code: 0 allow, 1 invalid key, 2 subscription inactive, 3 daily, 4 monthly, 5 rate limited,
--       6 released (the gateway gave up on this Authorize before it ran: nothing counted),
--       7 allow, paid from credits, 8 no account (wallet), 9 no credits (credits-only account),
--       10 the copy is gone (Redis restarted empty: no key or wallet can be judged until it is seeded)
-- When allowed, the used counts include every unit granted (unit k of n is call "used - n + k").
local p = ARGV[1]
local id = ARGV[10] or ''
if (ARGV[15] or '') ~= '' then closeCreditLease(p, ARGV[15], ARGV[16]) end
if id ~= '' and redis.call('EXISTS', p .. 'ax:' .. id) == 1 then return {6} end

local k, refused
if (ARGV[13] or '') ~= '' then
  k, refused = activeWallet(p, ARGV[13], ARGV[8])
else
  k, refused = activeKey(p, ARGV[2], ARGV[8])
end
if not k then
  -- Unknown in a copy that is not there at all: say so, rather than call a real key unknown.
  if refused[1] ~= 2 and redis.call('EXISTS', p .. 'seeded') == 0 then return {10} end
  return refused
end
local keyId, acct, storedHash, daily, monthly, burst, creditsOnly = k[1], k[2], k[3], k[5], k[6], k[7], k[8]

local dk = p .. 'd:' .. acct .. ':' .. ARGV[4]
local mk = p .. 'm:' .. acct .. ':' .. ARGV[5]
local d = tonumber(redis.call('GET', dk)) or 0
local m = tonumber(redis.call('GET', mk)) or 0
local price = tonumber(ARGV[12]) or 0
local ck = p .. 'c:' .. acct
local calls = math.max(1, tonumber(ARGV[17]) or 1)
local wanted = math.max(calls, tonumber(ARGV[9]) or 1)

-- The plan cannot serve the call: a credit lease, when the credits cover the call (reply code 7),
-- else `code` with the balance. Remembered like a grant, so a release gives the credits back.
local function fromCredits(code)
  local balance = tonumber(redis.call('GET', ck)) or 0
  if price <= 0 or balance < price then
    return {code, keyId, acct, 'active', storedHash, d, m, daily, monthly, 0, 0, balance}
  end
  -- The request's tokens are taken already; the rest of the lease takes what the guard has left.
  -- A batch draws its own price only (a lease is counted in requests at one price).
  local n = 1
  if calls == 1 then n = math.min(wanted, math.max(1, math.floor(balance / price / 4))) end
  if n > 1 then n = 1 + burstGrant(p, acct, burst, tonumber(ARGV[3]), n - 1) end
  local amount = n * price
  balance = redis.call('DECRBY', ck, amount)
  local epoch = redis.call('GET', p .. 'seeded') or ''
  if id ~= '' then
    redis.call('SET', p .. 'ag:' .. id,
      acct .. '|' .. ARGV[4] .. '|' .. ARGV[5] .. '|0|' .. amount .. '|' .. epoch, 'PX', ARGV[11])
    local lk = p .. 'cl:' .. id
    redis.call('HSET', lk, 'acct', acct, 'amount', amount, 'epoch', epoch, 'used', 0)
    redis.call('PEXPIRE', lk, ARGV[11])
    redis.call('ZADD', p .. 'cls', tonumber(ARGV[14]) or 0, id)
    -- The account's open leases: what they still hold counts in the balance it is shown.
    redis.call('SADD', p .. 'cla:' .. acct, id)
    redis.call('PEXPIRE', p .. 'cla:' .. acct, ARGV[11])
  end
  return {7, keyId, acct, 'active', storedHash, d, m, daily, monthly, n, amount, balance, epoch}
end

if creditsOnly then
  -- No plan windows apply: the answer carries no window values (no X-Quota-* headers).
  daily, monthly = 0, 0
  if burstGrant(p, acct, burst, tonumber(ARGV[3]), calls, calls) < 1 then
    return {5, keyId, acct, 'active', storedHash, d, m, daily, monthly, 0}
  end
  return fromCredits(9)
end

-- Monthly first: when both windows are spent, the longer wait is the useful answer. The
-- windows are checked before the guard takes tokens, so a lease never takes tokens for
-- units the windows cannot give; a spent window still counts as an attempt for the guard.
-- A lease takes at most a quarter of what a window has left, so near a limit the last units go
-- out in small blocks and every gateway serving the key gets its share.
-- A window that cannot cover every call of the request leaves the lease at `calls`: the tokens of
-- the attempt (paid from credits, or refused).
local want = wanted
if monthly > 0 then want = math.min(want, math.ceil((monthly - m) / 4)) end
if daily > 0 then want = math.min(want, math.ceil((daily - d) / 4)) end
want = math.max(want, calls)

local granted = burstGrant(p, acct, burst, tonumber(ARGV[3]), want, calls)
if granted < 1 then return {5, keyId, acct, 'active', storedHash, d, m, daily, monthly, 0} end
if monthly > 0 and m + calls > monthly then return fromCredits(4) end
if daily > 0 and d + calls > daily then return fromCredits(3) end

d = redis.call('INCRBY', dk, granted)
if d == granted then redis.call('PEXPIRE', dk, ARGV[6]) end
m = redis.call('INCRBY', mk, granted)
if m == granted then redis.call('PEXPIRE', mk, ARGV[7]) end
-- Remembered so a release of this id (the gateway gave up waiting) gives these units back.
if id ~= '' then
  redis.call('SET', p .. 'ag:' .. id, acct .. '|' .. ARGV[4] .. '|' .. ARGV[5] .. '|' .. granted, 'PX', ARGV[11])
end
return {0, keyId, acct, 'active', storedHash, d, m, daily, monthly, granted}
