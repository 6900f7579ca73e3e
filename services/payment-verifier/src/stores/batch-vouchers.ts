// x402-batch vouchers on a known channel, one Redis round trip at each step: admit (check the
// channel and take its lock), commit (charge the call and unlock) and release (unlock, nothing
// charged). Each step is one Lua script over the official SDK's own channel record (the JSON that
// RedisChannelStorage keeps, under the same key), so the SDK's paths (deposits, corrective 402s),
// the settlement worker's claims and these scripts all see one record and one lock: the SDK's
// `pendingRequest`. The SDK reaches the same decisions in four to six round trips per call (a
// read, then a read and a compare-and-set per update); the rules below are the SDK's
// (handleBeforeVerify, verifyVoucherLocally, handleAfterVerify, handleBeforeSettle), in its order.
//
// Amounts are decimal strings; the caller passes them canonical (no leading zeros), so Lua compares
// them as strings (length, then digits) and never as doubles. There is no in-memory twin: without
// Redis, x402-batch is not offered at all.
import { createHash } from "node:crypto";
import { channelRecordKey, READ_BACK_MS } from "@tollgate/payment-rails";
import type { Redis } from "@tollgate/platform";
import { runAgainIfLost, slotTags } from "@tollgate/platform/redis";

/** What the official SDK keeps per channel (its `Channel`), as far as these scripts read it. */
export interface ChannelRecord {
  channelId: string;
  balance: string;
  totalClaimed: string;
  withdrawRequestedAt: number;
  refundNonce: number;
  chargedCumulativeAmount: string;
}

export interface VoucherAdmission {
  /** The channel's id, lowercase. */
  channelId: string;
  /** The voucher's cumulative amount, canonical decimal. */
  cumulative: string;
  /** What the channel must have charged already for this voucher to pay this call (cumulative − price). */
  charged: string;
  /** The mesh-generated id this request holds the channel's lock under. */
  pendingId: string;
  requestId: string;
  now: number;
  /** When the lock lapses if neither Settle nor Release comes (the SDK's pending TTL). */
  expiresAt: number;
  /** How old the record's copy of the on-chain state may be and still be trusted (the SDK's TTL). */
  freshMs: number;
}

export type Admitted =
  /** The lock is this request's, under `pendingId` (a Verify retried for the same request gets it again). */
  | { kind: "reserved"; pendingId: string }
  /** Another request holds the lock. */
  | { kind: "busy" }
  /** The voucher does not continue what the channel charged: the corrective 402 carries the record. */
  | { kind: "mismatch"; record: string }
  /** Over the deposit: the payer's client holds a larger balance than the channel (refunded since). */
  | { kind: "exceeds_balance"; record: string }
  | { kind: "below_claimed"; record: string }
  /** No record, or its on-chain state is stale: the SDK's path (with the chain) decides. */
  | { kind: "unknown" };

export type Committed =
  /** Charged; `record` is the channel before the charge (the receipt's channel state). */
  | { kind: "committed"; record: ChannelRecord }
  /** This very lock was committed already (a Settle retried after its answer was lost). */
  | { kind: "already"; record: ChannelRecord }
  /** The lock is not this request's any more (lapsed and taken): nothing charged. */
  | { kind: "lost" }
  | { kind: "missing" };

/** A script sent by its SHA1 (EVALSHA): the hot path does not send its text with every call. */
interface Script {
  source: string;
  sha: string;
}

function script(source: string): Script {
  return { source, sha: createHash("sha1").update(source).digest("hex") };
}

const DECIMAL_GT = `
local function gt(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end`;

// KEYS[1] channel record. ARGV: cumulative, charged, pendingId, requestId, now, expiresAt, freshMs.
const ADMIT = script(`${DECIMAL_GT}
local raw = redis.call('GET', KEYS[1])
if not raw then return {'unknown'} end
local ch = cjson.decode(raw)
local now = tonumber(ARGV[5])
if ch.chargedCumulativeAmount ~= ARGV[2] then return {'mismatch', raw} end
local synced = ch.onchainSyncedAt
if type(synced) ~= 'number' or now - synced > tonumber(ARGV[7]) then return {'unknown'} end
if gt(ARGV[1], ch.balance) then return {'exceeds_balance', raw} end
if not gt(ARGV[1], ch.totalClaimed) then return {'below_claimed', raw} end
local p = ch.pendingRequest
if type(p) == 'table' and tonumber(p.expiresAt) > now then
  if p.requestId == ARGV[4] and p.signedMaxClaimable == ARGV[1] then return {'reserved', p.pendingId} end
  return {'busy'}
end
ch.pendingRequest = {pendingId = ARGV[3], signedMaxClaimable = ARGV[1], expiresAt = tonumber(ARGV[6]), requestId = ARGV[4]}
ch.lastRequestTimestamp = now
redis.call('SET', KEYS[1], cjson.encode(ch))
return {'reserved', ARGV[3]}`);

// KEYS[1] channel record. ARGV: pendingId, cumulative, charged, signature, now, requestId.
// settledPendingId stays on the record until the next SDK rewrite: it only serves a retried Settle.
const COMMIT = script(`
local raw = redis.call('GET', KEYS[1])
if not raw then return {'missing'} end
local ch = cjson.decode(raw)
local p = ch.pendingRequest
if type(p) ~= 'table' or p.pendingId ~= ARGV[1] then
  if ch.settledPendingId == ARGV[1] then return {'already', raw} end
  return {'lost'}
end
if p.requestId ~= ARGV[6] or p.signedMaxClaimable ~= ARGV[2] or ch.chargedCumulativeAmount ~= ARGV[3] then
  return {'lost'}
end
ch.chargedCumulativeAmount = ARGV[2]
ch.signedMaxClaimable = ARGV[2]
ch.signature = ARGV[4]
ch.lastRequestTimestamp = tonumber(ARGV[5])
ch.pendingRequest = nil
ch.settledPendingId = ARGV[1]
redis.call('SET', KEYS[1], cjson.encode(ch))
return {'committed', raw}`);

// KEYS[1] channel record. ARGV: pendingId, requestId.
const RELEASE = script(`
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local ch = cjson.decode(raw)
local p = ch.pendingRequest
if type(p) ~= 'table' or p.pendingId ~= ARGV[1] or p.requestId ~= ARGV[2] then return 0 end
ch.pendingRequest = nil
redis.call('SET', KEYS[1], cjson.encode(ch))
return 1`);

// A commit whose answer was lost (the connection dropped with Redis) may have landed while its call
// was answered 503: taken back when it is still the channel's last charge and nothing is pending on
// it. The voucher's signature stays (it allows up to its amount; claims take only what is charged).
const UNCOMMIT = script(`
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local ch = cjson.decode(raw)
if ch.settledPendingId ~= ARGV[1] or ch.chargedCumulativeAmount ~= ARGV[2] then return 0 end
if type(ch.pendingRequest) == 'table' then return 0 end
ch.chargedCumulativeAmount = ARGV[3]
ch.settledPendingId = nil
redis.call('SET', KEYS[1], cjson.encode(ch))
return 1`);

export class BatchVoucherStore {
  readonly #redis: Redis;
  readonly #record: (channelId: string) => string;

  /**
   * `keyPrefix`: the one given to the SDK's RedisChannelStorage (its keys are
   * `<keyPrefix>:server:channel:<id>`, on a Redis Cluster under the channel's tag: channelRecordKey).
   */
  constructor(redis: Redis, keyPrefix: string) {
    this.#redis = redis;
    this.#record = channelRecordKey(keyPrefix, slotTags(redis));
  }

  async #run(s: Script, key: string, args: string[]): Promise<unknown> {
    const options = { keys: [this.#record(key)], arguments: args };
    try {
      return await this.#redis.evalSha(s.sha, options);
    } catch (err) {
      // Not loaded yet (first use, or Redis restarted): once with its text, which loads it.
      if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
      return await this.#redis.eval(s.source, options);
    }
  }

  async admit(a: VoucherAdmission): Promise<Admitted> {
    const [kind, record] = (await this.#run(ADMIT, a.channelId, [
      a.cumulative,
      a.charged,
      a.pendingId,
      a.requestId,
      String(a.now),
      String(a.expiresAt),
      String(a.freshMs),
    ])) as [Admitted["kind"], string?];
    if (kind === "mismatch" || kind === "below_claimed" || kind === "exceeds_balance")
      return { kind, record: record ?? "" };
    if (kind === "reserved") return { kind, pendingId: record ?? "" };
    return { kind } as Admitted;
  }

  /**
   * Charges what `pendingId` holds for `requestId`: cumulative and signature become the channel's.
   * A commit whose answer was lost is run again once Redis answers (landed: "already", the call
   * served with its charge; not landed: it commits now), rather than answered 503 with the charge
   * perhaps made and taken back later (which another replica's admission of the payer's next voucher
   * could overtake).
   */
  async commit(
    channelId: string,
    pendingId: string,
    requestId: string,
    voucher: { cumulative: string; charged: string; signature: string },
    now: number,
  ): Promise<Committed> {
    // Run again should its answer be lost: a second run of a commit that landed answers "already".
    const args = [pendingId, voucher.cumulative, voucher.charged, voucher.signature, String(now), requestId];
    const [kind, record] = (await runAgainIfLost(() => this.#run(COMMIT, channelId, args), READ_BACK_MS)) as [
      Committed["kind"],
      string?,
    ];
    if (kind === "committed" || kind === "already")
      return { kind, record: JSON.parse(record ?? "{}") as ChannelRecord };
    return { kind } as Committed;
  }

  /**
   * Takes back the charge `pendingId` committed (from `voucher.cumulative` to `voucher.charged`)
   * when it is still the channel's last and nothing is pending; false otherwise.
   */
  async uncommit(
    channelId: string,
    pendingId: string,
    voucher: { cumulative: string; charged: string },
  ): Promise<boolean> {
    const undone = await this.#run(UNCOMMIT, channelId, [pendingId, voucher.cumulative, voucher.charged]);
    return undone === 1;
  }

  /** Frees the lock `pendingId` holds for `requestId`; false when it holds none. */
  async release(channelId: string, pendingId: string, requestId: string): Promise<boolean> {
    const freed = await this.#run(RELEASE, channelId, [pendingId, requestId]);
    return freed === 1;
  }
}
