// At-most-once use of a payment across all replicas. A verified payment is reserved under its key
// (what makes it unique where it is collected) by one mesh-generated token, the `payment_id` the
// gateway hands back to Settle or Release; nothing a caller sends can name or take over a
// reservation. reserved → settling → settled (kept while the payment could still be collected);
// Release, or a settlement that moved nothing, deletes it so the client may pay again.
//
// A reserve also counts the attempt against the attempt limits (stores/attempt-limits.ts), in the
// same round trip. The Redis store (Lua, atomic per key) and the in-memory stand-in implement the
// same state machine; test/payment-verifier/stores.contract.test.ts runs one suite against both.
import { READ_BACK_MS } from "@tollgate/payment-rails";
import type { Redis } from "@tollgate/platform";
import { closeRedis, runAgainIfLost } from "@tollgate/platform/redis";
import {
  type AttemptCheck,
  activeChecks,
  attemptKey,
  intervalOf,
  MemoryAttemptLimiter,
  TAKE_ATTEMPTS_LUA,
} from "./attempt-limits.ts";

export type ReservationState = "reserved" | "settling" | "settled";

/** What the core records about a verified payment. */
export interface PaymentFacts {
  scheme: string;
  /** The gateway's id of the request the payment was verified for. */
  requestId: string;
  /** Catalog path template. */
  endpoint: string;
  /** The API network the call was for. */
  network: string;
  payer: string;
  /** Atomic units of `asset`. */
  amount: string;
  asset: string;
  paymentNetwork: string;
  /** Fingerprint of the credentials Verify accepted (so Settle can tell it was given the same). */
  credential: string;
}

export interface Reservation extends PaymentFacts {
  state: ReservationState;
  /** The mesh-generated payment id that holds the reservation. */
  token: string;
  /** Set when the money already moved before the call (nothing to collect at Settle). */
  collected: string;
  /** What the scheme holds between Verify and Settle (opaque to the core). */
  hold: string;
  transaction: string;
  /** The receipt headers of a settled payment (JSON), so a repeated Settle answers the same. */
  receipt: string;
  /** The replica whose Settle runs the settlement (set when it begins, moved by a takeover). */
  owner: string;
  /**
   * The begin that made it `settling` (the owner's id for it; each begin writes its own, a takeover
   * its own marked `+takeover`: what it took over may have moved money, so it is never abandoned).
   */
  attempt: string;
}

/**
 * A payment whose settlement sends a transaction that spends the payer's own balance (an EIP-3009
 * transfer, an x402-batch deposit). The store keeps, per payer `account` (chain, token and payer),
 * every such payment reserved and not yet settled, dropped or released: what the payer's balance
 * must cover before anything is sent (the core compares it with the balance Verify read).
 */
export interface Draw {
  /** Whose balance: chain, token and payer (compared in lower case). */
  account: string;
  /** Atomic units of the token. */
  amount: string;
  /** The longest it counts (a reservation's TTL and a settlement's): a crashed holder's lapses. */
  ttlMs: number;
}

/** The attempt a reserve counts: one against each check's limit, at `nowMs`. */
export interface Attempt {
  checks: readonly AttemptCheck[];
  nowMs: number;
  /** Who is refused outright while penalized (see `penalize`), checked first; none when empty. */
  penalty?: string;
}

export type ReserveResult =
  | {
      ok: true;
      token: string;
      retried: boolean;
      /** With a draw: the sum of the account's draws in flight, this one included (atomic units). */
      drawn?: bigint;
    }
  /**
   * Held or used (`current`), refused by the attempt limit of scope `limited`, or refused because
   * the attempt's `penalty` holds for `penalizedMs` more (nothing counted or reserved).
   */
  | { ok: false; current: Reservation | undefined; limited?: string; penalizedMs?: number };

/**
 * `ok`: this replica runs the settlement (`takenOver`: from an owner that died mid-settlement).
 * Otherwise what is there: `busy` when the same call is settling under a live owner (this replica
 * included), who will answer it; the caller waits for the outcome.
 */
export type BeginSettle =
  | { ok: true; reservation: Reservation; takenOver: boolean }
  | { ok: false; current: Reservation | undefined; busy: boolean };

export interface ReservationStore {
  readonly kind: "redis" | "memory";
  get(key: string): Promise<Reservation | undefined>;
  /**
   * Counts the attempt (a full limit refuses it, and nothing else happens), then takes the payment
   * for one request. A Verify retried for the same request (same mesh request id, same endpoint,
   * network, amount and payer) gets the token it already holds; anything else that finds the key
   * held or used is refused. With `draw`, the payment joins its account's draws in flight (until
   * it is settled, dropped, released, recorded as collected already, or its draw's TTL lapses) in
   * the same step, and the answer carries their sum.
   */
  reserve(
    key: string,
    token: string,
    facts: PaymentFacts,
    ttlMs: number,
    attempt?: Attempt,
    draw?: Draw,
  ): Promise<ReserveResult>;
  /**
   * Counts an attempt that reserves nothing (a credential refused before its reservation: it does
   * not decode, or its signature is not its payer's) against the limits; the scope of the first
   * limit that is full, if any, counting nothing then.
   */
  countAttempt(attempt: Attempt): Promise<string | undefined>;
  /**
   * Records the verdict on a reservation held by `token`: the money that already moved (nothing
   * to collect, so it no longer counts as a draw), and what the scheme holds until Settle or Release.
   */
  markVerified(key: string, token: string, verified: { collected: string; hold: string }): Promise<void>;
  /**
   * reserved (by `token`, for `requestId`) → settling, owned by `owner`. One Settle of a call at a
   * time: the same call already settling is `busy` while its owner is alive (its liveness key,
   * `heartbeat`), and taken over by `owner` (compare-and-set) once it is not. `idleHere`: the
   * caller is that owner and runs no Settle of this call (its settlement ended, its `settled`
   * record lost with the store, or its begin's answer was lost): taken over at once. `attempt`: the
   * caller's id for this begin, written with it (see `abandon`).
   */
  beginSettle(
    key: string,
    token: string,
    requestId: string,
    ttlMs: number,
    owner: string,
    idleHere?: boolean,
    attempt?: string,
  ): Promise<BeginSettle>;
  /** Marks replica `owner` alive for `ttlMs` (one renewal per process, not per call). */
  heartbeat(owner: string, ttlMs: number): Promise<void>;
  /** settling (by `token`) → settled, remembered for `retentionMs`. */
  markSettled(
    key: string,
    token: string,
    transaction: string,
    receipt: string,
    retentionMs: number,
  ): Promise<void>;
  /**
   * Forgets a payment whose settlement moved nothing (held by `token`); with `settling`, only while
   * that owner's begin (its attempt id) still holds it, never a settlement a takeover runs since.
   * True when this drop deleted it (so no takeover can run it any more). `keepDraw`: its transfer
   * was broadcast and may still land, so its draw keeps counting until its TTL (a retry of the same
   * payment takes its place).
   */
  drop(
    key: string,
    token: string,
    settling?: { owner: string; attempt: string },
    keepDraw?: boolean,
  ): Promise<boolean>;
  /**
   * Frees a reservation still `reserved` by `token` for `requestId`; returns what it freed. With
   * `release` (a mesh-made id per release, and how long to remember it), the same release run again
   * (its answer lost, or deferred) answers what it freed for `keepMs`; any other release of it gets
   * nothing.
   */
  release(
    key: string,
    token: string,
    requestId: string,
    release?: ReleaseMark,
  ): Promise<Reservation | undefined>;
  /**
   * Forgets a payment still `settling` (by `token`) under `owner`'s begin `attempt`, which ran nothing
   * (its answer was lost); returns what it freed. A later begin or a takeover wrote its own attempt
   * (a takeover's marked, so never this one).
   */
  abandon(key: string, token: string, owner: string, attempt: string): Promise<Reservation | undefined>;
  /** Refuses every reserve whose attempt names `penalty` for the next `ms` (replicas share it). */
  penalize(penalty: string, ms: number): Promise<void>;
  close(): Promise<void>;
}

function toFields(token: string, f: PaymentFacts): string[] {
  return [
    "state",
    "reserved",
    "token",
    token,
    "scheme",
    f.scheme,
    "request_id",
    f.requestId,
    "endpoint",
    f.endpoint,
    "network",
    f.network,
    "payer",
    f.payer,
    "amount",
    f.amount,
    "asset",
    f.asset,
    "payment_network",
    f.paymentNetwork,
    "credential",
    f.credential,
    "collected",
    "",
    "hold",
    "",
    "transaction",
    "",
    "receipt",
    "",
    "owner",
    "",
    "attempt",
    "",
  ];
}

function fromHash(h: Record<string, string>): Reservation | undefined {
  if (!h.state) return undefined;
  return {
    state: h.state as ReservationState,
    token: h.token ?? "",
    scheme: h.scheme ?? "",
    requestId: h.request_id ?? "",
    endpoint: h.endpoint ?? "",
    network: h.network ?? "",
    payer: h.payer ?? "",
    amount: h.amount ?? "",
    asset: h.asset ?? "",
    paymentNetwork: h.payment_network ?? "",
    credential: h.credential ?? "",
    collected: h.collected ?? "",
    hold: h.hold ?? "",
    transaction: h.transaction ?? "",
    receipt: h.receipt ?? "",
    owner: h.owner ?? "",
    attempt: h.attempt ?? "",
  };
}

/** A Verify retried for the same request: same mesh request id, the same call and the same credentials. */
function isRetryOf(current: Reservation, facts: PaymentFacts): boolean {
  return (
    current.state === "reserved" &&
    facts.requestId !== "" &&
    current.requestId === facts.requestId &&
    current.endpoint === facts.endpoint &&
    current.network === facts.network &&
    current.amount === facts.amount &&
    current.payer.toLowerCase() === facts.payer.toLowerCase() &&
    current.credential === facts.credential
  );
}

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
const RESERVE = `${TAKE_ATTEMPTS_LUA}
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
const COUNT_ATTEMPT = `${TAKE_ATTEMPTS_LUA}
return take_attempts(KEYS, {unpack(ARGV, 2)}, tonumber(ARGV[1]))`;

// KEYS[1] reservation; ARGV[1] token; ARGV[2] collected transaction; ARGV[3] hold.
const MARK_VERIFIED = `${FORGET_DRAW_LUA}
if redis.call('HGET', KEYS[1], 'state') ~= 'reserved' then return 0 end
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
if ARGV[2] ~= '' then forget_draw(KEYS[1]) end
redis.call('HSET', KEYS[1], 'collected', ARGV[2], 'transaction', ARGV[2], 'hold', ARGV[3])
return 1`;

/** What a takeover's begin adds to its attempt id (BEGIN_SETTLE, beginSettle): never abandoned. */
const TAKEOVER_MARK = "+takeover";
const isTakeover = (attempt: string) => attempt.endsWith(TAKEOVER_MARK);

// KEYS[1] reservation; ARGV[1] token; ARGV[2] request id; ARGV[3] ttl ms; ARGV[4] owner (this
// replica); ARGV[5] the prefix of the replicas' liveness keys; ARGV[6] "1" when this replica runs
// no Settle of this call (a settling record of its own is then an orphan: taken over); ARGV[7]
// this begin's attempt id.
// Reply: {1, fields...} now settling, owned by ARGV[4] | {2, fields...} taken over from a dead
// owner (or an orphan of ARGV[4]'s own) | {3, fields...} the same call is settling under a live owner (busy) | {0, fields...}
// refused, with what is there (maybe nothing).
// One Settle of a call at a time: a second one (the gateway's retry after a lost answer, on this or
// another replica) waits for the owner's outcome, and runs the settlement itself only once the
// owner's liveness key lapsed (its process died); the scheme then finds what the owner sent.
// The liveness key is read by name (not in KEYS): a single Redis, as every store here assumes.
const BEGIN_SETTLE = `
local cur = redis.call('HMGET', KEYS[1], 'state', 'token', 'request_id', 'owner')
if (cur[1] ~= 'reserved' and cur[1] ~= 'settling') or cur[2] ~= ARGV[1] or cur[3] ~= ARGV[2] then
  return {0, redis.call('HGETALL', KEYS[1])}
end
local reply = 1
if cur[1] == 'settling' then
  local owner = cur[4] or ''
  local idle = owner == ARGV[4] and ARGV[6] == '1'
  if not idle and (owner == ARGV[4] or (owner ~= '' and redis.call('EXISTS', ARGV[5] .. owner) == 1)) then
    return {3, redis.call('HGETALL', KEYS[1])}
  end
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
const DELETE_SETTLING_OF = `${FORGET_DRAW_LUA}
local cur = redis.call('HMGET', KEYS[1], 'state', 'token', 'owner', 'attempt')
if cur[1] ~= 'settling' or cur[2] ~= ARGV[1] or cur[3] ~= ARGV[2] or ARGV[3] == '' or cur[4] ~= ARGV[3] then
  return false
end
local all = redis.call('HGETALL', KEYS[1])
if ARGV[4] ~= '1' then forget_draw(KEYS[1]) end
redis.call('DEL', KEYS[1])
return all`;

// KEYS[1] reservation; ARGV[1] token; ARGV[2] transaction; ARGV[3] receipt; ARGV[4] retention ms.
const MARK_SETTLED = `${FORGET_DRAW_LUA}
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
forget_draw(KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'settled', 'transaction', ARGV[2], 'receipt', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`;

/** A release's own id and how long the store answers it again (see ReservationStore.release). */
export interface ReleaseMark {
  id: string;
  keepMs: number;
}

// KEYS[1] reservation; KEYS[2] the release's mark (its own key, by release id), if any; ARGV[1] token;
// ARGV[2] request id; ARGV[3] mark ms. Frees a reserved record of that token (and request); with a
// mark, the record moves there, so the same release run again (its answer lost) answers what it freed.
const RELEASE = `${FORGET_DRAW_LUA}
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
const DELETE_IF = `${FORGET_DRAW_LUA}
local cur = redis.call('HMGET', KEYS[1], 'state', 'token', 'request_id')
if cur[1] ~= ARGV[2] or cur[2] ~= ARGV[1] then return false end
if ARGV[3] ~= '' and cur[3] ~= ARGV[3] then return false end
local all = redis.call('HGETALL', KEYS[1])
if ARGV[4] ~= '1' then forget_draw(KEYS[1]) end
redis.call('DEL', KEYS[1])
return all`;

function sumOf(amounts: readonly unknown[]): bigint {
  let sum = 0n;
  for (const a of amounts) sum += BigInt(String(a));
  return sum;
}

function pairsToHash(pairs: unknown): Record<string, string> {
  const hash: Record<string, string> = {};
  if (!Array.isArray(pairs)) return hash;
  for (let i = 0; i + 1 < pairs.length; i += 2) hash[String(pairs[i])] = String(pairs[i + 1]);
  return hash;
}

export class RedisReservationStore implements ReservationStore {
  readonly kind = "redis" as const;
  readonly #redis: Redis;
  readonly #prefix: string;

  readonly #servicePrefix: string;
  readonly #alivePrefix: string;
  readonly #releasedPrefix: string;
  readonly #drawsPrefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#servicePrefix = prefix;
    this.#prefix = `${prefix}reservation:`;
    this.#releasedPrefix = `${prefix}released:`;
    this.#drawsPrefix = `${prefix}draws:`;
    this.#alivePrefix = `${prefix}alive:`;
  }

  async get(key: string): Promise<Reservation | undefined> {
    return fromHash(await this.#redis.hGetAll(this.#prefix + key));
  }

  async reserve(
    key: string,
    token: string,
    facts: PaymentFacts,
    ttlMs: number,
    attempt?: Attempt,
    draw?: Draw,
  ): Promise<ReserveResult> {
    const checks = attempt ? activeChecks(attempt.checks) : [];
    const penalty = attempt?.penalty ? [this.#penaltyKey(attempt.penalty)] : [];
    const draws = draw ? [`${this.#drawsPrefix}${draw.account.toLowerCase()}`] : [];
    const reply = (await this.#redis.eval(RESERVE, {
      keys: [
        this.#prefix + key,
        ...checks.map((c) => attemptKey(this.#servicePrefix, c)),
        ...penalty,
        ...draws,
      ],
      arguments: [
        String(ttlMs),
        String(attempt?.nowMs ?? Date.now()),
        String(checks.length),
        penalty.length > 0 ? "1" : "0",
        draw?.amount ?? "",
        String(Math.max(1, Math.round(draw?.ttlMs ?? 1))),
        ...checks.flatMap((c) => [String(intervalOf(c.limit)), String(c.limit.burst)]),
        ...toFields(token, facts),
      ],
    })) as [number, string | number | undefined, ...string[]];
    if (reply[0] === 1 || reply[0] === 2) {
      const taken = { ok: true as const, token: String(reply[1]), retried: reply[0] === 2 };
      return draw ? { ...taken, drawn: sumOf(reply.slice(2)) } : taken;
    }
    if (reply[0] === 4) return { ok: false, current: undefined, penalizedMs: Number(reply[1]) };
    if (reply[0] === 3)
      return { ok: false, current: undefined, limited: checks[Number(reply[1]) - 1]?.scope };
    return { ok: false, current: await this.get(key) };
  }

  async countAttempt(attempt: Attempt): Promise<string | undefined> {
    const checks = activeChecks(attempt.checks);
    if (checks.length === 0) return undefined;
    const full = (await this.#redis.eval(COUNT_ATTEMPT, {
      keys: checks.map((c) => attemptKey(this.#servicePrefix, c)),
      arguments: [
        String(attempt.nowMs),
        ...checks.flatMap((c) => [String(intervalOf(c.limit)), String(c.limit.burst)]),
      ],
    })) as number;
    return full > 0 ? checks[full - 1]?.scope : undefined;
  }

  async markVerified(
    key: string,
    token: string,
    verified: { collected: string; hold: string },
  ): Promise<void> {
    await this.#redis.eval(MARK_VERIFIED, {
      keys: [this.#prefix + key],
      arguments: [token, verified.collected, verified.hold],
    });
  }

  async beginSettle(
    key: string,
    token: string,
    requestId: string,
    ttlMs: number,
    owner: string,
    idleHere = false,
    attempt = "",
  ): Promise<BeginSettle> {
    const [begun, fields] = (await this.#redis.eval(BEGIN_SETTLE, {
      keys: [this.#prefix + key],
      arguments: [token, requestId, String(ttlMs), owner, this.#alivePrefix, idleHere ? "1" : "0", attempt],
    })) as [number, unknown];
    const current = fromHash(pairsToHash(fields));
    if ((begun === 1 || begun === 2) && current)
      return { ok: true, reservation: current, takenOver: begun === 2 };
    return { ok: false, current, busy: begun === 3 };
  }

  async heartbeat(owner: string, ttlMs: number): Promise<void> {
    await this.#redis.set(this.#alivePrefix + owner, "1", { PX: ttlMs });
  }

  async markSettled(
    key: string,
    token: string,
    transaction: string,
    receipt: string,
    retentionMs: number,
  ): Promise<void> {
    await this.#redis.eval(MARK_SETTLED, {
      keys: [this.#prefix + key],
      arguments: [token, transaction, receipt, String(Math.max(1, Math.round(retentionMs)))],
    });
  }

  async drop(
    key: string,
    token: string,
    settling?: { owner: string; attempt: string },
    keepDraw = false,
  ): Promise<boolean> {
    if (settling)
      return (
        (await this.#deleteSettlingOf(key, token, settling.owner, settling.attempt, keepDraw)) !== undefined
      );
    const reply = await this.#redis.eval(DELETE_IF, {
      keys: [this.#prefix + key],
      arguments: [token, "settling", "", keepDraw ? "1" : "0"],
    });
    return Boolean(reply);
  }

  async release(
    key: string,
    token: string,
    requestId: string,
    release?: ReleaseMark,
  ): Promise<Reservation | undefined> {
    const run = () =>
      this.#redis.eval(RELEASE, {
        keys: release
          ? [this.#prefix + key, `${this.#releasedPrefix}${key}:${release.id}`]
          : [this.#prefix + key],
        arguments: [token, requestId, String(Math.max(1, Math.round(release?.keepMs ?? 1)))],
      });
    // Its answer lost: run again, which answers what it freed (the mark) or frees it now.
    const reply = release ? await runAgainIfLost(run, READ_BACK_MS) : await run();
    return reply ? fromHash(pairsToHash(reply)) : undefined;
  }

  async abandon(
    key: string,
    token: string,
    owner: string,
    attempt: string,
  ): Promise<Reservation | undefined> {
    return isTakeover(attempt) ? undefined : this.#deleteSettlingOf(key, token, owner, attempt);
  }

  async #deleteSettlingOf(key: string, token: string, owner: string, attempt: string, keepDraw = false) {
    const reply = await this.#redis.eval(DELETE_SETTLING_OF, {
      keys: [this.#prefix + key],
      arguments: [token, owner, attempt, keepDraw ? "1" : "0"],
    });
    return reply ? fromHash(pairsToHash(reply)) : undefined;
  }

  async penalize(penalty: string, ms: number): Promise<void> {
    await this.#redis.set(this.#penaltyKey(penalty), "1", {
      expiration: { type: "PX", value: Math.max(1, Math.round(ms)) },
    });
  }

  #penaltyKey(penalty: string): string {
    return `${this.#servicePrefix}penalty:${penalty.toLowerCase()}`;
  }

  async close(): Promise<void> {
    await closeRedis(this.#redis);
  }
}

/** Single-node stand-in used when Redis is unreachable at startup: the same state machine, one process. */
export class MemoryReservationStore implements ReservationStore {
  readonly kind = "memory" as const;
  readonly #entries = new Map<string, { reservation: Reservation; expiresAt: number }>();
  /** Liveness of the owners (replica ids) seen here: until when each is alive. */
  readonly #alive = new Map<string, number>();
  readonly #attempts = new MemoryAttemptLimiter();
  /** Penalties by name (lower case): until when. */
  readonly #penalties = new Map<string, number>();
  /** Release marks by key and release id (see release): what it freed, until when. */
  readonly #released = new Map<string, { freed: Reservation; until: number }>();
  /** Draws in flight by account (lower case), then by reservation key: amount and until when. */
  readonly #draws = new Map<string, Map<string, { amount: bigint; until: number }>>();
  /** The account of each reservation that draws (see #forgetDraw). */
  readonly #drawOf = new Map<string, string>();
  readonly #sweeper: NodeJS.Timeout;

  constructor() {
    this.#sweeper = setInterval(() => {
      const now = Date.now();
      for (const [key, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(key);
      for (const [account, draws] of this.#draws) {
        for (const [key, d] of draws) if (d.until <= now) draws.delete(key);
        if (draws.size === 0) this.#draws.delete(account);
      }
      for (const [key, account] of this.#drawOf)
        if (!this.#draws.get(account)?.has(key)) this.#drawOf.delete(key);
      for (const [name, until] of this.#penalties) if (until <= now) this.#penalties.delete(name);
      for (const [key, mark] of this.#released) if (mark.until <= now) this.#released.delete(key);
    }, 30_000);
    this.#sweeper.unref();
  }

  #live(key: string): Reservation | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.reservation;
  }

  #put(key: string, reservation: Reservation, ttlMs: number): void {
    this.#entries.set(key, { reservation, expiresAt: Date.now() + ttlMs });
  }

  async get(key: string): Promise<Reservation | undefined> {
    const r = this.#live(key);
    return r && { ...r };
  }

  async reserve(
    key: string,
    token: string,
    facts: PaymentFacts,
    ttlMs: number,
    attempt?: Attempt,
    draw?: Draw,
  ): Promise<ReserveResult> {
    const penalized = attempt?.penalty
      ? (this.#penalties.get(attempt.penalty.toLowerCase()) ?? 0) - Date.now()
      : 0;
    if (penalized > 0) return { ok: false, current: undefined, penalizedMs: penalized };
    const limited = attempt && this.#attempts.take(attempt.checks, attempt.nowMs);
    if (limited) return { ok: false, current: undefined, limited };
    const current = this.#live(key);
    let taken: Extract<ReserveResult, { ok: true }>;
    if (!current) {
      const reservation: Reservation = {
        ...facts,
        state: "reserved",
        token,
        collected: "",
        hold: "",
        transaction: "",
        receipt: "",
        owner: "",
        attempt: "",
      };
      this.#put(key, reservation, ttlMs);
      taken = { ok: true, token, retried: false };
    } else if (isRetryOf(current, facts)) {
      taken = { ok: true, token: current.token, retried: true };
    } else {
      return { ok: false, current: { ...current } };
    }
    if (!draw) return taken;
    const now = attempt?.nowMs ?? Date.now();
    const account = draw.account.toLowerCase();
    const draws = this.#draws.get(account) ?? new Map<string, { amount: bigint; until: number }>();
    this.#draws.set(account, draws);
    if (!taken.retried) {
      draws.set(key, { amount: BigInt(draw.amount), until: now + Math.max(1, Math.round(draw.ttlMs)) });
      this.#drawOf.set(key, account);
    }
    let drawn = 0n;
    for (const [k, d] of draws) {
      if (d.until > now) drawn += d.amount;
      else draws.delete(k);
    }
    return { ...taken, drawn };
  }

  async countAttempt(attempt: Attempt): Promise<string | undefined> {
    return this.#attempts.take(attempt.checks, attempt.nowMs);
  }

  /** The reservation `key` no longer draws on its account (see FORGET_DRAW_LUA). */
  #forgetDraw(key: string): void {
    const account = this.#drawOf.get(key);
    if (account === undefined) return;
    this.#drawOf.delete(key);
    this.#draws.get(account)?.delete(key);
  }

  async markVerified(
    key: string,
    token: string,
    verified: { collected: string; hold: string },
  ): Promise<void> {
    const current = this.#live(key);
    if (current?.state !== "reserved" || current.token !== token) return;
    if (verified.collected !== "") this.#forgetDraw(key);
    current.collected = verified.collected;
    current.transaction = verified.collected;
    current.hold = verified.hold;
  }

  async beginSettle(
    key: string,
    token: string,
    requestId: string,
    ttlMs: number,
    owner: string,
    idleHere = false,
    attempt = "",
  ): Promise<BeginSettle> {
    const current = this.#live(key);
    const open = current?.state === "reserved" || current?.state === "settling"; // see BEGIN_SETTLE
    if (!current || !open || current.token !== token || current.requestId !== requestId) {
      return { ok: false, current: current && { ...current }, busy: false };
    }
    const takenOver = current.state === "settling";
    const idle = current.owner === owner && idleHere;
    if (takenOver && !idle && (current.owner === owner || this.#isAlive(current.owner))) {
      return { ok: false, current: { ...current }, busy: true };
    }
    const settling = {
      ...current,
      state: "settling" as const,
      owner,
      attempt: takenOver ? `${attempt}${TAKEOVER_MARK}` : attempt,
    };
    this.#put(key, settling, ttlMs);
    return { ok: true, reservation: { ...settling }, takenOver };
  }

  #isAlive(owner: string): boolean {
    return owner !== "" && (this.#alive.get(owner) ?? 0) > Date.now();
  }

  async heartbeat(owner: string, ttlMs: number): Promise<void> {
    this.#alive.set(owner, Date.now() + ttlMs);
  }

  async markSettled(
    key: string,
    token: string,
    transaction: string,
    receipt: string,
    retentionMs: number,
  ): Promise<void> {
    const current = this.#live(key);
    if (current?.token !== token) return;
    this.#forgetDraw(key);
    this.#put(key, { ...current, state: "settled", transaction, receipt }, Math.max(1, retentionMs));
  }

  #deleteIf(
    key: string,
    token: string,
    state: ReservationState,
    requestId = "",
    keepDraw = false,
  ): Reservation | undefined {
    const current = this.#live(key);
    if (current?.state !== state || current.token !== token) return undefined;
    if (requestId !== "" && current.requestId !== requestId) return undefined;
    this.#entries.delete(key);
    if (!keepDraw) this.#forgetDraw(key);
    return current;
  }

  async drop(
    key: string,
    token: string,
    settling?: { owner: string; attempt: string },
    keepDraw = false,
  ): Promise<boolean> {
    const dropped = settling
      ? this.#deleteSettlingOf(key, token, settling.owner, settling.attempt, keepDraw)
      : this.#deleteIf(key, token, "settling", "", keepDraw);
    return dropped !== undefined;
  }

  async release(
    key: string,
    token: string,
    requestId: string,
    release?: ReleaseMark,
  ): Promise<Reservation | undefined> {
    const freed = this.#deleteIf(key, token, "reserved", requestId);
    if (!release) return freed;
    const markKey = `${key}\n${release.id}`;
    if (!freed) {
      const mark = this.#released.get(markKey);
      return mark && mark.until > Date.now() ? mark.freed : undefined;
    }
    this.#released.set(markKey, { freed, until: Date.now() + Math.max(1, Math.round(release.keepMs)) });
    return freed;
  }

  async abandon(
    key: string,
    token: string,
    owner: string,
    attempt: string,
  ): Promise<Reservation | undefined> {
    return isTakeover(attempt) ? undefined : this.#deleteSettlingOf(key, token, owner, attempt);
  }

  #deleteSettlingOf(
    key: string,
    token: string,
    owner: string,
    attempt: string,
    keepDraw = false,
  ): Reservation | undefined {
    const current = this.#live(key);
    if (attempt === "" || current?.owner !== owner || current.attempt !== attempt) return undefined;
    return this.#deleteIf(key, token, "settling", "", keepDraw);
  }

  async penalize(penalty: string, ms: number): Promise<void> {
    this.#penalties.set(penalty.toLowerCase(), Date.now() + Math.max(1, Math.round(ms)));
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#penalties.clear();
    this.#released.clear();
    this.#draws.clear();
    this.#drawOf.clear();
    this.#attempts.close();
    this.#entries.clear();
    this.#alive.clear();
  }
}
