-- Refund: gives a failed call's unit back to both windows it was counted in, once per
-- (account, request id): the gateway may resend a report, and an id is only ever the mesh's
-- own, scoped to the account it was counted for. Never below zero. A call paid from credits
-- gives its credits back instead (windows untouched), when the copy is still the one they were
-- drawn from (a copy seeded since never had them taken).
-- Credits drawn from a credit lease still open count as its use (its settlement then does not give
-- them back a second time); from one settled already (credit-lease-expire.lua gave back what its
-- use did not show, this call's draw included), nothing more goes back.
-- ARGV: 1 prefix, 2 request id, 3 account id, 4 day id, 5 month id, 6 dedupe TTL (ms),
--       7 credits drawn (0: a unit), 8 the copy generation they were drawn in, 9 the credit lease
local p = ARGV[1]
if not redis.call('SET', p .. 'rf:' .. ARGV[3] .. ':' .. ARGV[2], '1', 'NX', 'PX', ARGV[6]) then return 0 end
local credits = tonumber(ARGV[7]) or 0
if credits > 0 then
  local lease = ARGV[9] or ''
  if lease ~= '' then
    if redis.call('EXISTS', p .. 'cl:' .. lease) == 1 then
      redis.call('HINCRBY', p .. 'cl:' .. lease, 'used', credits)
    elseif redis.call('EXISTS', p .. 'clx:' .. lease) == 1 then
      return 1
    end
  end
  if redis.call('GET', p .. 'seeded') == ARGV[8] then redis.call('INCRBY', p .. 'c:' .. ARGV[3], credits) end
  return 1
end
local keys = { p .. 'd:' .. ARGV[3] .. ':' .. ARGV[4], p .. 'm:' .. ARGV[3] .. ':' .. ARGV[5] }
for _, k in ipairs(keys) do
  local v = tonumber(redis.call('GET', k))
  if v and v > 0 then redis.call('DECR', k) end
end
return 1
