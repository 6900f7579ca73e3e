-- Usage totals: per account-day totals from PostgreSQL (the system of record), merged as maxima.
-- Totals only grow, so whatever order the writes arrive in (replicas folding batches, a re-seed,
-- a replay of the stream), each day ends at the largest: the newest.
-- ARGV: 1 prefix, 2 usage retention (ms), then per account-day: account id, day id, requests, errors
local p = ARGV[1]
for i = 3, #ARGV, 4 do
  local k = p .. 'u:' .. ARGV[i] .. ':' .. ARGV[i + 1]
  local h = redis.call('HMGET', k, 'requests', 'errors')
  if (tonumber(h[1]) or 0) < tonumber(ARGV[i + 2]) then redis.call('HSET', k, 'requests', ARGV[i + 2]) end
  if (tonumber(h[2]) or 0) < tonumber(ARGV[i + 3]) then redis.call('HSET', k, 'errors', ARGV[i + 3]) end
  redis.call('PEXPIRE', k, ARGV[2])
end
return 1
