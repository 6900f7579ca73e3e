-- Read credits: an account's balance as it is shown (the dashboard): the hot copy's balance plus
-- what its open credit leases still hold (drawn, not used yet), which is the account's until used.
-- ARGV: 1 prefix, 2 account id
local p = ARGV[1]
local balance = tonumber(redis.call('GET', p .. 'c:' .. ARGV[2])) or 0
for _, id in ipairs(redis.call('SMEMBERS', p .. 'cla:' .. ARGV[2])) do
  local l = redis.call('HMGET', p .. 'cl:' .. id, 'amount', 'used')
  if l[1] then
    balance = balance + math.max(0, tonumber(l[1]) - tonumber(l[2]))
  else
    redis.call('SREM', p .. 'cla:' .. ARGV[2], id)
  end
end
return balance
