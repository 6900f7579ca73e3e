-- Usage batch: folds one batch of calls into per-account daily usage, once per batch id
-- (JetStream delivers at least once; a resent batch keeps its id).
-- ARGV: 1 prefix, 2 batch id, 3 dedupe TTL (ms), 4 usage retention (ms),
--       then per account-day: account id, day id, requests, errors
local p = ARGV[1]
if not redis.call('SET', p .. 'ub:' .. ARGV[2], '1', 'NX', 'PX', ARGV[3]) then return 0 end
for i = 5, #ARGV, 4 do
  local k = p .. 'u:' .. ARGV[i] .. ':' .. ARGV[i + 1]
  redis.call('HINCRBY', k, 'requests', ARGV[i + 2])
  if ARGV[i + 3] ~= '0' then redis.call('HINCRBY', k, 'errors', ARGV[i + 3]) end
  redis.call('PEXPIRE', k, ARGV[4])
end
return 1
