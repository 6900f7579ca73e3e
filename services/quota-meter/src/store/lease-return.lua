-- Lease return: gives the units of a lease the gateway did not use back to both windows the
-- lease was counted in, once per (account, lease id) (the gateway may resend a report). The
-- lease id is quota-meter's own. Never below zero.
-- ARGV: 1 prefix, 2 lease id, 3 account id, 4 day id, 5 month id, 6 units, 7 dedupe TTL (ms)
local p = ARGV[1]
if not redis.call('SET', p .. 'lr:' .. ARGV[3] .. ':' .. ARGV[2], '1', 'NX', 'PX', ARGV[7]) then return 0 end
local units = tonumber(ARGV[6]) or 0
local keys = { p .. 'd:' .. ARGV[3] .. ':' .. ARGV[4], p .. 'm:' .. ARGV[3] .. ':' .. ARGV[5] }
for _, k in ipairs(keys) do
  local v = tonumber(redis.call('GET', k))
  if v and v > 0 then redis.call('DECRBY', k, math.min(v, units)) end
end
return 1
