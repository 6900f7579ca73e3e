-- Credit apply: ledger entries (already committed in PostgreSQL) applied to the hot copy's
-- balances, each only when the copy is of the entry's generation (a copy seeded later read the
-- row, so it holds it already) and once per (account, cause).
-- ARGV: 1 prefix, 2 once-only mark TTL (ms), then per entry: cause, account id, delta, generation
-- Reply: {'unseeded'} when the copy has no generation (being seeded: retry), else each balance
-- after (negative when catch-up draws exceed it: authorize.lua then refuses until a top-up).
local p = ARGV[1]
local mark = redis.call('GET', p .. 'seeded')
if not mark then return {'unseeded'} end
local out = {}
for i = 3, #ARGV, 4 do
  local acct, ck = ARGV[i + 1], p .. 'c:' .. ARGV[i + 1]
  if ARGV[i + 3] == mark and redis.call('SET', p .. 'cc:' .. acct .. ':' .. ARGV[i], '1', 'NX', 'PX', ARGV[2]) then
    out[#out + 1] = redis.call('INCRBY', ck, ARGV[i + 2])
  else
    out[#out + 1] = tonumber(redis.call('GET', ck)) or 0
  end
end
return out
