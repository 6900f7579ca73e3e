-- Credit lease use: the credits a usage batch's answered calls drew, per credit lease, once per
-- batch (the gateway may resend one). Counted on the lease while it is open; a lease settled
-- already gave these credits back (its use did not show them yet), so they are taken again from
-- the copy it was drawn from. A lease returned by the gateway, or lost with a copy, is left alone.
-- ARGV: 1 prefix, 2 batch id, 3 dedupe TTL (ms), then pairs: lease id, credits
-- Reply: 1 counted now, 0 counted before.
local p = ARGV[1]
if not redis.call('SET', p .. 'cu:' .. ARGV[2], '1', 'NX', 'PX', ARGV[3]) then return 0 end
for i = 4, #ARGV - 1, 2 do
  local id, credits = ARGV[i], tonumber(ARGV[i + 1]) or 0
  local lk = p .. 'cl:' .. id
  if redis.call('EXISTS', lk) == 1 then
    redis.call('HINCRBY', lk, 'used', credits)
  else
    local settled = redis.call('GET', p .. 'clx:' .. id)
    if settled then
      local acct, epoch = string.match(settled, '^([^|]*)|(.*)$')
      if redis.call('GET', p .. 'seeded') == epoch then redis.call('DECRBY', p .. 'c:' .. acct, credits) end
    end
  end
end
return 1
