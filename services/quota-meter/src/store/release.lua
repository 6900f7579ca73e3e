-- Release: the gateway gave up waiting for the Authorize of this id (its deadline passed) and
-- answered the call 503, so nothing it counted may stay counted. Once per id: the tombstone
-- makes an Authorize of this id that runs later count nothing (authorize.lua); one that already
-- ran gives its units back to both windows, under the lease-return mark of that lease, so
-- quota-meter's own return of a late grant and this release never both apply. Never below zero.
-- Credits it drew go back to the balance when the copy is still the one they were drawn from (a
-- copy seeded since never had them taken: the ledger gets no draw for an unanswered call).
-- ARGV: 1 prefix, 2 authorization id, 3 dedupe TTL (ms), 4 how long the tombstone lives (ms)
-- Reply: 1 released now, 0 released before.
local p = ARGV[1]
local id = ARGV[2]
if not redis.call('SET', p .. 'ax:' .. id, '1', 'NX', 'PX', ARGV[4]) then return 0 end
local grant = redis.call('GET', p .. 'ag:' .. id)
if not grant then return 1 end
local acct, day, month, units, rest = string.match(grant, '^([^|]*)|([^|]*)|([^|]*)|(%d+)(.*)$')
local credits, epoch = string.match(rest, '^|(%d+)|(.*)$')
if credits and tonumber(credits) > 0 then
  -- The whole credit lease: nobody served from it, and no sweep may give it back again.
  redis.call('DEL', p .. 'cl:' .. id)
  redis.call('ZREM', p .. 'cls', id)
  redis.call('SREM', p .. 'cla:' .. acct, id)
  if redis.call('GET', p .. 'seeded') == epoch then redis.call('INCRBY', p .. 'c:' .. acct, credits) end
  return 1
end
if not redis.call('SET', p .. 'lr:' .. acct .. ':' .. id, '1', 'NX', 'PX', ARGV[3]) then return 1 end
units = tonumber(units)
for _, k in ipairs({ p .. 'd:' .. acct .. ':' .. day, p .. 'm:' .. acct .. ':' .. month }) do
  local v = tonumber(redis.call('GET', k))
  if v and v > 0 then redis.call('DECRBY', k, math.min(v, units)) end
end
return 1
