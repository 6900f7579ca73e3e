-- closeCreditLease: a credit lease's unused credits back to the balance, once (its record is the
-- once-mark): never more than the lease drew less its reported use, and only to the copy it was
-- drawn from. A lease settled already (credit-lease-expire.lua), or lost with a copy, has no
-- record: 0. Loaded in front of credit-lease-return.lua and authorize.lua.
local function closeCreditLease(p, id, credits)
  local lk = p .. 'cl:' .. id
  local l = redis.call('HMGET', lk, 'acct', 'amount', 'epoch', 'used')
  if not l[1] then return 0 end
  redis.call('DEL', lk)
  redis.call('ZREM', p .. 'cls', id)
  redis.call('SREM', p .. 'cla:' .. l[1], id)
  local left = math.min(tonumber(credits) or 0, tonumber(l[2]) - tonumber(l[4]))
  if left > 0 and redis.call('GET', p .. 'seeded') == l[3] then redis.call('INCRBY', p .. 'c:' .. l[1], left) end
  return 1
end
