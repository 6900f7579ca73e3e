// The Lua scripts of the Redis reservation store (reservations-redis.ts): each step of the
// reservation state machine (reservations.ts) runs as one script, atomic per key, so replicas
// never see half a transition. Their KEYS and ARGV layouts are documented above each one.
import { TAKE_ATTEMPTS_LUA } from "./attempt-limits.ts";
import { TAKEOVER_MARK } from "./reservations.ts";

// Takes a reservation out of its account's draws in flight (see Draw): the draws' key is kept in
// the reservation's `draws` field, so every script that ends a reservation forgets its draw.
const FORGET_DRAW_LUA = `
local function forget_draw(key)
  local draws = redis.call('HGET', key, 'draws')
  if draws and draws ~= '' then redis.call('HDEL', draws, key) end
end
`;

// KEYS[1] reservation, KEYS[2..n+1] attempt buckets, then the penalty if ARGV[4] is "1", then the
// account's draws in flight if ARGV[5] (the draw's amount) is not empty; ARGV[1] ttl ms, ARGV[2]
// now ms, ARGV[3] the number of buckets n, ARGV[6] the draw's ttl ms, then per bucket its interval
// ms and burst, then field/value pairs (state reserved).
// Reply: {4, ms} penalized for ms more | {3, i} bucket i is full (nothing counted or reserved) |
// {1, token, draws...} taken | {2, token, draws...} retried by the same request | {0} held or used.
// `draws`: the amounts of the account's draws in flight, this one's included (summed by the
// caller: token amounts may pass what a Lua number holds exactly).
export const RESERVE = `${TAKE_ATTEMPTS_LUA}
local n = tonumber(ARGV[3])
local next_key = n + 2
if ARGV[4] == '1' then
  local left = redis.call('PTTL', KEYS[next_key])
  if left > 0 then return {4, left} end
  next_key = next_key + 1
end
local full = take_attempts({unpack(KEYS, 2, n + 1)}, {unpack(ARGV, 7, 6 + 2 * n)}, tonumber(ARGV[2]))
if full > 0 then return {3, full} end
local f = 7 + 2 * n
local state = redis.call('HGET', KEYS[1], 'state')
local reply
if not state then
  redis.call('HSET', KEYS[1], unpack(ARGV, f))
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  reply = {1, ARGV[f + 3]}
elseif state == 'reserved' then
  local cur = redis.call('HMGET', KEYS[1], 'request_id', 'endpoint', 'network', 'amount', 'payer', 'token', 'credential')
  local want = {}
  for i = f, #ARGV, 2 do want[ARGV[i]] = ARGV[i + 1] end
  if want['request_id'] ~= '' and cur[1] == want['request_id'] and cur[2] == want['endpoint']
    and cur[3] == want['network'] and cur[4] == want['amount'] and string.lower(cur[5]) == string.lower(want['payer'])
    and (cur[7] or '') == want['credential'] then
    reply = {2, cur[6]}
  end
end
if not reply then return {0} end
if ARGV[5] ~= '' then
  local draws = KEYS[next_key]
  local now = tonumber(ARGV[2])
  if reply[1] == 1 then
    redis.call('HSET', draws, KEYS[1], ARGV[5] .. ':' .. string.format('%d', now + tonumber(ARGV[6])))
    if redis.call('PTTL', draws) < tonumber(ARGV[6]) then redis.call('PEXPIRE', draws, ARGV[6]) end
    redis.call('HSET', KEYS[1], 'draws', draws)
  end
  local all = redis.call('HGETALL', draws)
  for i = 1, #all, 2 do
    local amount, untilMs = string.match(all[i + 1], '^(%d+):(%d+)$')
    if amount and tonumber(untilMs) > now then
      reply[#reply + 1] = amount
    else
      redis.call('HDEL', draws, all[i])
    end
  end
end
return reply`;

// KEYS attempt buckets; ARGV[1] now ms, then per bucket its interval ms and burst.
// Reply: 0, or the index of the bucket that is full (nothing counted).
export const COUNT_ATTEMPT = `${TAKE_ATTEMPTS_LUA}
return take_attempts(KEYS, {unpack(ARGV, 2)}, tonumber(ARGV[1]))`;

// KEYS[1] reservation; ARGV[1] token; ARGV[2] collected transaction; ARGV[3] hold.
export const MARK_VERIFIED = `${FORGET_DRAW_LUA}
if redis.call('HGET', KEYS[1], 'state') ~= 'reserved' then return 0 end
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
if ARGV[2] ~= '' then forget_draw(KEYS[1]) end
redis.call('HSET', KEYS[1], 'collected', ARGV[2], 'transaction', ARGV[2], 'hold', ARGV[3])
return 1`;
// KEYS[1] reservation; ARGV[1] token; ARGV[2] request id; ARGV[3] ttl ms; ARGV[4] owner (this
// replica); ARGV[5] an owner whose liveness key the caller found lapsed ('' = none yet); ARGV[6]
// "1" when this replica runs no Settle of this call (a settling record of its own is then an
// orphan: taken over); ARGV[7] this begin's attempt id.
// Reply: {1, fields...} now settling, owned by ARGV[4] | {2, fields...} taken over from a dead
// owner (or an orphan of ARGV[4]'s own) | {3, fields...} the same call is settling under ARGV[4]
// (busy) | {4, fields...} settling under another owner: the caller looks at its liveness key (a key
// of its own, in another slot of a Redis Cluster) and, lapsed, runs this again naming it in ARGV[5]
// | {0, fields...} refused, with what is there (maybe nothing).
// One Settle of a call at a time: a second one (the gateway's retry after a lost answer, on this or
// another replica) waits for the owner's outcome, and runs the settlement itself only once the
// owner's liveness key lapsed (its process died); the scheme then finds what the owner sent.
export const BEGIN_SETTLE = `
local cur = redis.call('HMGET', KEYS[1], 'state', 'token', 'request_id', 'owner')
if (cur[1] ~= 'reserved' and cur[1] ~= 'settling') or cur[2] ~= ARGV[1] or cur[3] ~= ARGV[2] then
  return {0, redis.call('HGETALL', KEYS[1])}
end
local reply = 1
if cur[1] == 'settling' then
  local owner = cur[4] or ''
  local idle = owner == ARGV[4] and ARGV[6] == '1'
  if not idle and owner == ARGV[4] then return {3, redis.call('HGETALL', KEYS[1])} end
  if not idle and owner ~= '' and owner ~= ARGV[5] then return {4, redis.call('HGETALL', KEYS[1])} end
  reply = 2
end
local attempt = ARGV[7]
if reply == 2 then attempt = attempt .. '${TAKEOVER_MARK}' end
redis.call('HSET', KEYS[1], 'state', 'settling', 'owner', ARGV[4], 'attempt', attempt)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {reply, redis.call('HGETALL', KEYS[1])}`;

// KEYS[1] reservation; ARGV[1] token; ARGV[2] owner; ARGV[3] attempt id. Deletes a settling record
// of that owner's begin (drop after a settlement that moved nothing; abandon after a lost begin).
// ARGV[4] "1": its draw keeps counting (a transfer broadcast that may still land).
export const DELETE_SETTLING_OF = `${FORGET_DRAW_LUA}
local cur = redis.call('HMGET', KEYS[1], 'state', 'token', 'owner', 'attempt')
if cur[1] ~= 'settling' or cur[2] ~= ARGV[1] or cur[3] ~= ARGV[2] or ARGV[3] == '' or cur[4] ~= ARGV[3] then
  return false
end
local all = redis.call('HGETALL', KEYS[1])
if ARGV[4] ~= '1' then forget_draw(KEYS[1]) end
redis.call('DEL', KEYS[1])
return all`;

// KEYS[1] reservation; ARGV[1] token; ARGV[2] transaction; ARGV[3] receipt; ARGV[4] retention ms.
export const MARK_SETTLED = `${FORGET_DRAW_LUA}
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
forget_draw(KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'settled', 'transaction', ARGV[2], 'receipt', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`;

// KEYS[1] reservation; KEYS[2] the release's mark (its own key, by release id), if any; ARGV[1] token;
// ARGV[2] request id; ARGV[3] mark ms. Frees a reserved record of that token (and request); with a
// mark, the record moves there, so the same release run again (its answer lost) answers what it freed.
export const RELEASE = `${FORGET_DRAW_LUA}
local cur = redis.call('HMGET', KEYS[1], 'state', 'token', 'request_id')
if cur[1] ~= 'reserved' or cur[2] ~= ARGV[1] or (ARGV[2] ~= '' and cur[3] ~= ARGV[2]) then
  if #KEYS > 1 then
    local freed = redis.call('HGETALL', KEYS[2])
    if #freed > 0 then return freed end
  end
  return false
end
local all = redis.call('HGETALL', KEYS[1])
forget_draw(KEYS[1])
if #KEYS == 1 then
  redis.call('DEL', KEYS[1])
else
  redis.call('RENAME', KEYS[1], KEYS[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
return all`;

// KEYS[1] reservation; ARGV[1] token; ARGV[2] the state it must be in; ARGV[3] request id, if any;
// ARGV[4] "1": its draw keeps counting (see DELETE_SETTLING_OF).
export const DELETE_IF = `${FORGET_DRAW_LUA}
local cur = redis.call('HMGET', KEYS[1], 'state', 'token', 'request_id')
if cur[1] ~= ARGV[2] or cur[2] ~= ARGV[1] then return false end
if ARGV[3] ~= '' and cur[3] ~= ARGV[3] then return false end
local all = redis.call('HGETALL', KEYS[1])
if ARGV[4] ~= '1' then forget_draw(KEYS[1]) end
redis.call('DEL', KEYS[1])
return all`;
