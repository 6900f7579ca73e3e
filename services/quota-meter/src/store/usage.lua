-- Usage: counts one usage event into its account's day, once per (account, event id)
-- (JetStream delivers at least once).
-- ARGV: 1 prefix, 2 event id, 3 account id, 4 day id, 5 "1" if the call failed,
--       6 dedupe TTL (ms), 7 usage retention (ms)
local p = ARGV[1]
if not redis.call('SET', p .. 'ue:' .. ARGV[3] .. ':' .. ARGV[2], '1', 'NX', 'PX', ARGV[6]) then return 0 end
local k = p .. 'u:' .. ARGV[3] .. ':' .. ARGV[4]
redis.call('HINCRBY', k, 'requests', 1)
if ARGV[5] == '1' then redis.call('HINCRBY', k, 'errors', 1) end
redis.call('PEXPIRE', k, ARGV[7])
return 1
