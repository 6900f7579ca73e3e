-- Credit lease expiry: settles credit leases past their time that their gateway never returned
-- (it died, or cannot reach quota-meter): what the lease drew less what its use shows goes back
-- to the copy it was drawn from, and a mark (`clx:`) lets a late use take its share again and a
-- late refund give nothing twice (credit-lease-use.lua, refund.lua).
-- ARGV: 1 prefix, 2 now (ms since epoch), 3 most leases to settle, 4 how long the mark lives (ms)
-- Reply: how many leases were looked at.
local p = ARGV[1]
local ids = redis.call('ZRANGEBYSCORE', p .. 'cls', '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  redis.call('ZREM', p .. 'cls', id)
  local lk = p .. 'cl:' .. id
  local l = redis.call('HMGET', lk, 'acct', 'amount', 'epoch', 'used')
  if l[1] then
    redis.call('DEL', lk)
    redis.call('SREM', p .. 'cla:' .. l[1], id)
    local rest = tonumber(l[2]) - tonumber(l[4])
    if rest > 0 then
      if redis.call('GET', p .. 'seeded') == l[3] then redis.call('INCRBY', p .. 'c:' .. l[1], rest) end
      redis.call('SET', p .. 'clx:' .. id, l[1] .. '|' .. l[3], 'PX', ARGV[4])
    end
  end
end
return #ids
