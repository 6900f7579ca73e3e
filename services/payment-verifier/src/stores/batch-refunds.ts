// x402-batch refund requests on the SDK's channel record (libs/payment-rails batch-refunds.ts: the
// contract with the settlement worker, which sends them). One Lua script per step: admit (check the
// request against the channel and take its lock, the SDK's `pendingRequest`, under the request's
// id), submit (Settle asks for it: the worker may send it now, the lock held until it did) and
// release (a request never submitted lets the lock go). While the lock is the refund's, every other
// path (the known-channel vouchers, the SDK's deposits and vouchers, the worker's idle refund) finds
// the channel busy: nothing is served or charged on it between the request and the refund.
import { type RefundOutcome, refundKeys } from "@tollgate/payment-rails";
import type { Redis } from "@tollgate/platform";

export type RefundAdmitted =
  /** The channel is held for this request (`id`), or for the same request taken before (joined). */
  | { kind: "reserved" | "joined"; id: string }
  /** The same refund was answered already (a retry after its answer was lost): its outcome's id. */
  | { kind: "done"; id: string }
  /** Another request holds the channel. */
  | { kind: "busy" }
  /** The voucher is not at the channel's charged total: the corrective 402 carries the record. */
  | { kind: "mismatch"; record: string }
  /** Nothing unspent to return. */
  | { kind: "no_balance" }
  /** No record of the channel here (never paid here, or already refunded in full). */
  | { kind: "unknown" }
  /** No settlement worker holds the claim lease: nobody would send the refund now. */
  | { kind: "no_claimer" };

export interface RefundAdmission {
  channelId: string;
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

const DECIMAL_GT = `
local function gt(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end`;

// KEYS: record, the channel's latest outcome, the claim lease.
// ARGV: id, cumulative, amount, requestId, now, expiresAt.
const ADMIT = `${DECIMAL_GT}
local raw = redis.call('GET', KEYS[1])
local last = redis.call('GET', KEYS[2])
if last then
  local r = cjson.decode(last)
  if r.ok and r.cumulative == ARGV[2] and r.requested == ARGV[3] then
    if not raw then return {'done', r.id} end
    local ch = cjson.decode(raw)
    if ch.chargedCumulativeAmount == ARGV[2] and type(ch.refundRequest) ~= 'table' then return {'done', r.id} end
  end
end
if not raw then return {'unknown'} end
local ch = cjson.decode(raw)
local now = tonumber(ARGV[5])
local p = ch.pendingRequest
local q = ch.refundRequest
if type(p) == 'table' and tonumber(p.expiresAt) > now then
  if type(q) == 'table' and q.id == p.pendingId and q.cumulative == ARGV[2] and q.amount == ARGV[3] then
    return {'joined', q.id}
  end
  return {'busy'}
end
if ch.chargedCumulativeAmount ~= ARGV[2] then return {'mismatch', raw} end
if not gt(ch.balance, ch.chargedCumulativeAmount) then return {'no_balance'} end
if redis.call('EXISTS', KEYS[3]) == 0 then return {'no_claimer'} end
ch.pendingRequest = {pendingId = ARGV[1], signedMaxClaimable = ARGV[2], expiresAt = tonumber(ARGV[6]), requestId = ARGV[4]}
ch.refundRequest = {id = ARGV[1], requestId = ARGV[4], amount = ARGV[3], cumulative = ARGV[2], at = now, submitted = false}
redis.call('SET', KEYS[1], cjson.encode(ch))
return {'reserved', ARGV[1]}`;

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
  readonly #records: string;
  readonly #keys: ReturnType<typeof refundKeys>;

  /**
   * `channelsPrefix`: the SDK's RedisChannelStorage prefix (records `<channelsPrefix>:server:channel:<id>`);
   * `paymentPrefix`: `<REDIS_PREFIX>payment:` (the outcomes and the claim lease, the worker's too).
   */
  constructor(redis: Redis, channelsPrefix: string, paymentPrefix: string) {
    this.#redis = redis;
    this.#records = `${channelsPrefix}:server:channel:`;
    this.#keys = refundKeys(paymentPrefix);
  }

  async admit(a: RefundAdmission): Promise<RefundAdmitted> {
    const channel = a.channelId.toLowerCase();
    const [kind, value] = (await this.#redis.eval(ADMIT, {
      keys: [this.#records + channel, this.#keys.latest(channel), this.#keys.claimLease],
      arguments: [a.id, a.cumulative, a.amount, a.requestId, String(a.now), String(a.expiresAt)],
    })) as [RefundAdmitted["kind"], string?];
    if (kind === "reserved" || kind === "joined" || kind === "done") return { kind, id: value ?? "" };
    if (kind === "mismatch") return { kind, record: value ?? "" };
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
      keys: [this.#records + channelId.toLowerCase(), this.#keys.outcome(id)],
      arguments: [id, String(now), String(holdUntil)],
    })) as "submitted" | "done" | "lost";
  }

  async release(channelId: string, id: string): Promise<boolean> {
    const freed = await this.#redis.eval(RELEASE, {
      keys: [this.#records + channelId.toLowerCase()],
      arguments: [id],
    });
    return freed === 1;
  }

  async outcome(id: string): Promise<RefundOutcome | undefined> {
    const raw = await this.#redis.get(this.#keys.outcome(id));
    return raw ? (JSON.parse(raw) as RefundOutcome) : undefined;
  }
}
