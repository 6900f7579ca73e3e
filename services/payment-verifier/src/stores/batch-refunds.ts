// x402-batch refund requests on the SDK's channel record (libs/payment-rails batch-refunds.ts: the
// contract with the settlement worker, which sends them). One Lua script per step: admit (check the
// request against the channel and take its lock, the SDK's `pendingRequest`, under the request's
// id), submit (Settle asks for it: the worker may send it now, the lock held until it did) and
// release (a request never submitted lets the lock go). While the lock is the refund's, every other
// path (the known-channel vouchers, the SDK's deposits and vouchers, the worker's idle refund) finds
// the channel busy: nothing is served or charged on it between the request and the refund. Admit
// also holds the bounds on our gas: the channel's refund mark (one refund per deposit), the minimum
// refund, and the payer's refund-rate bucket (GCRA, attempt-limits.ts's rule), in the same script.
import { channelRecordKey, type RefundOutcome, refundKeys } from "@tollgate/payment-rails";
import { isCluster, type Redis, slotTags } from "@tollgate/platform";
import { TAKE_ATTEMPTS_LUA } from "./attempt-limits.ts";

export type RefundAdmitted =
  /** The channel is held for this request (`id`), or for the same request taken before (joined). */
  | { kind: "reserved" | "joined"; id: string }
  /**
   * This deposit was refunded already (or its refund is in doubt): the first request's id, whose
   * outcome answers this one. Nothing is sent until a new deposit.
   */
  | { kind: "refunded"; id: string }
  /** Another request holds the channel. */
  | { kind: "busy" }
  /** The voucher is not at the channel's charged total: the corrective 402 carries the record. */
  | { kind: "mismatch"; record: string }
  /** Nothing unspent to return. */
  | { kind: "no_balance" }
  /** What would be returned is below the minimum refund: the channel's balance and charged total. */
  | { kind: "too_small"; balance: string; charged: string }
  /** The payer asked for more refunds than its rate allows (every replica counts in one bucket). */
  | { kind: "rate_limited" }
  /** No record of the channel here (never paid here, or already refunded in full). */
  | { kind: "unknown" }
  /** No settlement worker holds the claim lease: nobody would send the refund now. */
  | { kind: "no_claimer" };

export interface RefundAdmission {
  channelId: string;
  /** The channel's payer (the refund rate is counted per payer). */
  payer: string;
  /** Generated here, for this request alone. */
  id: string;
  /** The voucher's amount (canonical decimal): the channel's charged total. */
  cumulative: string;
  /** A partial amount, "" for everything unspent. */
  amount: string;
  requestId: string;
  now: number;
  /** When the lock lapses if Settle never comes (as a voucher's admission). */
  expiresAt: number;
}

/** What every admission is checked against (payment-verifier's settings). */
export interface RefundPolicy {
  /** The smallest refund sent, atomic units (canonical decimal): its gas at the configured price. */
  minimum: string;
  /** Refunds one payer may have sent per hour, across replicas (0 = no bound). */
  perPayerPerHour: number;
}

const DECIMALS = `
local function gt(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
local function add(a, b)
  local out, carry, i, j = {}, 0, #a, #b
  while i > 0 or j > 0 or carry > 0 do
    local s = carry + (i > 0 and tonumber(a:sub(i, i)) or 0) + (j > 0 and tonumber(b:sub(j, j)) or 0)
    table.insert(out, 1, tostring(s % 10))
    carry = math.floor(s / 10)
    i, j = i - 1, j - 1
  end
  local r = table.concat(out):gsub('^0+', '')
  if r == '' then return '0' end
  return r
end`;

// KEYS: record, the channel's refund mark, the claim lease, the payer's refund-rate bucket (the last
// two on a single Redis only). ARGV: id, cumulative, amount, requestId, now, expiresAt, minimum,
// rate interval ms (0: none, or counted apart on a cluster: TAKE_RATE), burst, whether the claim
// lease is held ("1"/"0", read apart on a cluster; "" = read KEYS[3]).
// The mark comes first: once this deposit's refund went out, any request (any amount) is answered
// with it until the balance grows (a deposit); one the worker is still sending joins or is busy.
const ADMIT = `${DECIMALS}
${TAKE_ATTEMPTS_LUA}
local raw = redis.call('GET', KEYS[1])
local ch = raw and cjson.decode(raw)
local now = tonumber(ARGV[5])
local p = ch and ch.pendingRequest
local q = ch and ch.refundRequest
local live = type(p) == 'table' and tonumber(p.expiresAt) > now
local mark = redis.call('GET', KEYS[2])
if mark then
  local m = cjson.decode(mark)
  local sending = live and type(q) == 'table' and q.id == m.id
  if not sending and (not ch or not gt(ch.balance, m.balance)) then return {'refunded', m.id} end
end
if not ch then return {'unknown'} end
if live then
  if type(q) == 'table' and q.id == p.pendingId and q.cumulative == ARGV[2] and q.amount == ARGV[3] then
    return {'joined', q.id}
  end
  return {'busy'}
end
if ch.chargedCumulativeAmount ~= ARGV[2] then return {'mismatch', raw} end
if not gt(ch.balance, ch.chargedCumulativeAmount) then return {'no_balance'} end
-- What would go back (the amount asked, at most what is unspent) must reach the minimum.
if (ARGV[3] ~= '' and gt(ARGV[7], ARGV[3])) or gt(add(ch.chargedCumulativeAmount, ARGV[7]), ch.balance) then
  return {'too_small', ch.balance, ch.chargedCumulativeAmount}
end
if ARGV[10] == '0' or (ARGV[10] == '' and redis.call('EXISTS', KEYS[3]) == 0) then return {'no_claimer'} end
if tonumber(ARGV[8]) > 0 and take_attempts({KEYS[4]}, {ARGV[8], ARGV[9]}, now) ~= 0 then
  return {'rate_limited'}
end
ch.pendingRequest = {pendingId = ARGV[1], signedMaxClaimable = ARGV[2], expiresAt = tonumber(ARGV[6]), requestId = ARGV[4]}
ch.refundRequest = {id = ARGV[1], requestId = ARGV[4], amount = ARGV[3], cumulative = ARGV[2], at = now, submitted = false}
redis.call('SET', KEYS[1], cjson.encode(ch))
return {'reserved', ARGV[1]}`;

// KEYS: the payer's refund-rate bucket. ARGV: now, interval ms, burst. 0, or 1 when full (nothing counted).
const TAKE_RATE = `${TAKE_ATTEMPTS_LUA}
return take_attempts(KEYS, {ARGV[2], ARGV[3]}, tonumber(ARGV[1]))`;

// KEYS: record, the request's outcome. ARGV: id, now, holdUntil.
const SUBMIT = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 'done' end
local raw = redis.call('GET', KEYS[1])
if not raw then return 'lost' end
local ch = cjson.decode(raw)
local p = ch.pendingRequest
local q = ch.refundRequest
if type(p) ~= 'table' or type(q) ~= 'table' or p.pendingId ~= ARGV[1] or q.id ~= ARGV[1] then return 'lost' end
if tonumber(p.expiresAt) <= tonumber(ARGV[2]) then return 'lost' end
if q.submitted then return 'submitted' end
q.submitted = true
p.expiresAt = tonumber(ARGV[3])
redis.call('SET', KEYS[1], cjson.encode(ch))
return 'submitted'`;

// KEYS: record. ARGV: id. Only a request Settle never asked for.
const RELEASE = `
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local ch = cjson.decode(raw)
local p = ch.pendingRequest
local q = ch.refundRequest
if type(p) ~= 'table' or type(q) ~= 'table' or p.pendingId ~= ARGV[1] or q.id ~= ARGV[1] or q.submitted then return 0 end
ch.pendingRequest = nil
ch.refundRequest = nil
redis.call('SET', KEYS[1], cjson.encode(ch))
return 1`;

export class BatchRefundStore {
  readonly #redis: Redis;
  readonly #record: (channelId: string) => string;
  /**
   * On a Redis Cluster the claim lease and the payer's refund-rate bucket are in slots of their own:
   * admit reads the lease first and takes the bucket after the channel's lock (a refund request is
   * not the paid path: two round trips more there, none on a single Redis).
   */
  readonly #cluster: boolean;
  readonly #keys: ReturnType<typeof refundKeys>;
  readonly #policy: RefundPolicy;

  /**
   * `channelsPrefix`: the SDK's RedisChannelStorage prefix (records `<channelsPrefix>:server:channel:<id>`);
   * `paymentPrefix`: `<REDIS_PREFIX>payment:` (the outcomes and the claim lease, the worker's too).
   */
  constructor(redis: Redis, channelsPrefix: string, paymentPrefix: string, policy: RefundPolicy) {
    this.#redis = redis;
    this.#policy = policy;
    this.#cluster = isCluster(redis);
    this.#record = channelRecordKey(channelsPrefix, slotTags(redis));
    this.#keys = refundKeys(paymentPrefix, slotTags(redis));
  }

  async admit(a: RefundAdmission): Promise<RefundAdmitted> {
    const channel = a.channelId.toLowerCase();
    const { minimum, perPayerPerHour } = this.#policy;
    // A GCRA bucket of `perPayerPerHour` refunds, refilled evenly over the hour.
    const interval = perPayerPerHour > 0 ? 3_600_000 / perPayerPerHour : 0;
    const claimer = this.#cluster
      ? (await this.#redis.exists(this.#keys.claimLeaseKey)) === 1
        ? "1"
        : "0"
      : "";
    const [kind, value, other] = (await this.#redis.eval(ADMIT, {
      keys: this.#cluster
        ? [this.#record(channel), this.#keys.mark(channel)]
        : [
            this.#record(channel),
            this.#keys.mark(channel),
            this.#keys.claimLease,
            this.#keys.payerRate(a.payer),
          ],
      arguments: [
        a.id,
        a.cumulative,
        a.amount,
        a.requestId,
        String(a.now),
        String(a.expiresAt),
        minimum,
        this.#cluster ? "0" : String(interval),
        String(perPayerPerHour),
        claimer,
      ],
    })) as [RefundAdmitted["kind"], string?, string?];
    if (this.#cluster && kind === "reserved" && interval > 0) {
      const full = await this.#redis.eval(TAKE_RATE, {
        keys: [this.#keys.payerRate(a.payer)],
        arguments: [String(a.now), String(interval), String(perPayerPerHour)],
      });
      if (full !== 0) {
        await this.release(channel, a.id);
        return { kind: "rate_limited" };
      }
    }
    if (kind === "reserved" || kind === "joined" || kind === "refunded") return { kind, id: value ?? "" };
    if (kind === "mismatch") return { kind, record: value ?? "" };
    if (kind === "too_small") return { kind, balance: value ?? "0", charged: other ?? "0" };
    return { kind } as RefundAdmitted;
  }

  /** Asks the worker to send it: "done" when its outcome is there already, "lost" when the lock is not its. */
  async submit(
    channelId: string,
    id: string,
    now: number,
    holdUntil: number,
  ): Promise<"submitted" | "done" | "lost"> {
    return (await this.#redis.eval(SUBMIT, {
      keys: [this.#record(channelId.toLowerCase()), this.#keys.outcome(channelId, id)],
      arguments: [id, String(now), String(holdUntil)],
    })) as "submitted" | "done" | "lost";
  }

  async release(channelId: string, id: string): Promise<boolean> {
    const freed = await this.#redis.eval(RELEASE, {
      keys: [this.#record(channelId.toLowerCase())],
      arguments: [id],
    });
    return freed === 1;
  }

  async outcome(channelId: string, id: string): Promise<RefundOutcome | undefined> {
    const raw = await this.#redis.get(this.#keys.outcome(channelId, id));
    return raw ? (JSON.parse(raw) as RefundOutcome) : undefined;
  }
}
