// The payers' refund requests, the worker's side (libs/payment-rails batch-refunds.ts is the
// contract with payment-verifier, which takes them): one Lua script to take a request for sending
// (the channel's lock held a little longer, its mirrored chain state marked stale, so once the lock
// is let go every voucher on it is checked against the chain again; the channel marked refunded for
// this deposit, checked against the chain's own refund nonce and balance), one to record what became of
// it (the outcome payment-verifier answers with, the record deleted, updated or let go), and the
// refund's transaction itself: the spec's enriched refund payload (a claim of the charged total,
// the refund of the rest, both signed by the receiver authorizer) settled by the facilitator.
import {
  type Caip2,
  chainIdOf,
  channelRecordKey,
  type Facilitator,
  REFUND_MARK_MS,
  REFUND_OUTCOME_MS,
  type RefundChannelState,
  type RefundMark,
  type RefundOutcome,
  refundKeys,
} from "@tollgate/payment-rails";
import { type Redis, slotTags } from "@tollgate/platform";
import { BATCH_SETTLEMENT_ADDRESS, claimBatchTypes, refundTypes } from "@x402/evm";
import { getAddress, type Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import type { ChannelRecord, OnChainChannel } from "../core/x402-batch-claims.ts";

type FacilitatorClient = Facilitator["client"];
type PaymentRequirements = Parameters<FacilitatorClient["settle"]>[1];

/** How long a taken request holds its channel at least (a send and its receipt fit well inside). */
const SEND_HOLD_MS = 2 * 60_000;

const DECIMAL_GT = `
local function gt(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end`;

// KEYS: record, the channel's refund mark.
// ARGV: id, now, holdUntil, the chain's refund nonce and balance, the balance after this refund, mark
// TTL, the amount. {'taken', record} (the channel marked: this deposit's refund), {'refunded', mark}
// (a refund of this deposit landed already, this request's own sent before included: the chain's
// nonce moved past the mark's and its balance has not grown since), or {'gone'} (not this request's
// lock any more).
const TAKE = `${DECIMAL_GT}
local raw = redis.call('GET', KEYS[1])
if not raw then return {'gone'} end
local ch = cjson.decode(raw)
local p = ch.pendingRequest
local q = ch.refundRequest
if type(p) ~= 'table' or type(q) ~= 'table' or p.pendingId ~= ARGV[1] or q.id ~= ARGV[1] or not q.submitted then
  return {'gone'}
end
if tonumber(p.expiresAt) <= tonumber(ARGV[2]) then return {'gone'} end
local mark = redis.call('GET', KEYS[2])
if mark then
  local m = cjson.decode(mark)
  if gt(ARGV[4], m.nonce) and not gt(ARGV[5], m.balance) then return {'refunded', mark} end
end
if tonumber(ARGV[3]) > tonumber(p.expiresAt) then p.expiresAt = tonumber(ARGV[3]) end
ch.onchainSyncedAt = 0
local out = cjson.encode(ch)
redis.call('SET', KEYS[1], out)
redis.call('SET', KEYS[2], cjson.encode({id = ARGV[1], nonce = ARGV[4], balance = ARGV[6], amount = ARGV[8]}), 'PX', ARGV[7])
return {'taken', out}`;

// KEYS: record, the request's outcome, the channel's refund mark.
// ARGV: id, outcome JSON, after (delete | update | unlock | keep), balance, totalClaimed,
// refundNonce, now, outcome TTL (ms). Nothing sent (unlock): the request's mark goes.
const COMPLETE = `
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[8])
if ARGV[3] == 'unlock' then
  local mark = redis.call('GET', KEYS[3])
  if mark and cjson.decode(mark).id == ARGV[1] then redis.call('DEL', KEYS[3]) end
end
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local ch = cjson.decode(raw)
local p = ch.pendingRequest
if type(p) ~= 'table' or p.pendingId ~= ARGV[1] or ARGV[3] == 'keep' then return 0 end
if ARGV[3] == 'delete' then
  redis.call('DEL', KEYS[1])
  return 1
end
if ARGV[3] == 'update' then
  ch.balance = ARGV[4]
  ch.totalClaimed = ARGV[5]
  ch.refundNonce = tonumber(ARGV[6])
  ch.onchainSyncedAt = tonumber(ARGV[7])
  ch.lastRequestTimestamp = tonumber(ARGV[7])
end
ch.pendingRequest = nil
ch.refundRequest = nil
redis.call('SET', KEYS[1], cjson.encode(ch))
return 1`;

/** What the record becomes once a request is answered. */
export type RecordAfter =
  /** Refunded in full: the record goes, as the SDK's own refund deletes it. */
  | { kind: "delete" }
  /** Refunded in part: the channel's state after it, the lock let go. */
  | { kind: "update"; balance: bigint; totalClaimed: bigint; refundNonce: bigint }
  /** Refused, nothing sent: the lock let go (its chain state stays marked stale). */
  | { kind: "unlock" }
  /** Outcome unknown (a transaction may be pending): the lock lapses on its own. */
  | { kind: "keep" };

/** A request taken for sending, a deposit refunded already (the mark of the refund that landed), or gone. */
type Taken =
  | { kind: "taken"; record: ChannelRecord }
  | { kind: "refunded"; mark: RefundMark }
  | { kind: "gone" };

export interface RefundRequests {
  /**
   * Takes a submitted request for sending a refund of `amount` from a channel whose chain state is
   * `chain`, marking the channel (one refund per deposit), unless a refund of this deposit landed.
   */
  take(
    channelId: string,
    id: string,
    now: number,
    chain: { balance: bigint; refundNonce: bigint },
    amount: bigint,
  ): Promise<Taken>;
  complete(channelId: string, outcome: RefundOutcome, after: RecordAfter, now: number): Promise<void>;
}

export function redisRefundRequests(
  redis: Redis,
  channelsPrefix: string,
  paymentPrefix: string,
): RefundRequests {
  const record = channelRecordKey(channelsPrefix, slotTags(redis));
  const keys = refundKeys(paymentPrefix, slotTags(redis));
  return {
    async take(channelId, id, now, chain, amount) {
      const channel = channelId.toLowerCase();
      const [kind, raw] = (await redis.eval(TAKE, {
        keys: [record(channel), keys.mark(channel)],
        arguments: [
          id,
          String(now),
          String(now + SEND_HOLD_MS),
          String(chain.refundNonce),
          String(chain.balance),
          String(chain.balance - amount),
          String(REFUND_MARK_MS),
          String(amount),
        ],
      })) as [Taken["kind"], string?];
      if (kind === "taken") return { kind, record: JSON.parse(raw ?? "{}") as ChannelRecord };
      if (kind === "refunded") return { kind, mark: JSON.parse(raw ?? "{}") as RefundMark };
      return { kind: "gone" };
    },
    async complete(channelId, outcome, after, now) {
      const channel = channelId.toLowerCase();
      const state = after.kind === "update" ? after : undefined;
      await redis.eval(COMPLETE, {
        keys: [record(channel), keys.outcome(channel, outcome.id), keys.mark(channel)],
        arguments: [
          outcome.id,
          JSON.stringify(outcome),
          after.kind,
          String(state?.balance ?? ""),
          String(state?.totalClaimed ?? ""),
          String(state?.refundNonce ?? ""),
          String(now),
          String(REFUND_OUTCOME_MS),
        ],
      });
    },
  };
}

/** The facilitator's answer to a refund: sent (and mined), or refused with nothing moved. */
export type RefundSent =
  | { success: true; transaction: string; amount: bigint; channelState?: Partial<RefundChannelState> }
  | { success: false; transaction: string; errorReason: string; errorMessage: string };

/**
 * Sends a refund of `amount` from the channel `record` describes, claiming its charged total first
 * when `claim` (one transaction: the contract's multicall), with the chain's current refund nonce.
 * Throws when the facilitator or chain could not be reached (the outcome is then unknown).
 */
export type RefundSender = (
  record: ChannelRecord,
  chain: OnChainChannel,
  amount: bigint,
  claim: boolean,
) => Promise<RefundSent>;

export function refundSender(deps: {
  facilitator: FacilitatorClient;
  authorizer: PrivateKeyAccount;
  network: Caip2;
  asset: string;
  payTo: string;
}): RefundSender {
  const domain = {
    name: "x402 Batch Settlement",
    version: "1",
    chainId: chainIdOf(deps.network),
    verifyingContract: getAddress(BATCH_SETTLEMENT_ADDRESS),
  } as const;
  // The channel manager's own requirements for its claims, settles and refunds.
  const requirements: PaymentRequirements = {
    scheme: "batch-settlement",
    network: deps.network,
    asset: deps.asset,
    amount: "0",
    payTo: deps.payTo,
    maxTimeoutSeconds: 0,
    extra: {},
  };
  return async (record, chain, amount, claim) => {
    const channelId = record.channelId as Hex;
    const charged = record.chargedCumulativeAmount;
    const claims = claim
      ? [
          {
            voucher: {
              channel: record.channelConfig,
              maxClaimableAmount: record.signedMaxClaimable ?? charged,
            },
            signature: record.signature ?? "0x",
            totalClaimed: charged,
          },
        ]
      : [];
    const refundAuthorizerSignature = await deps.authorizer.signTypedData({
      domain,
      types: refundTypes,
      primaryType: "Refund",
      message: { channelId, nonce: chain.refundNonce, amount },
    });
    const claimAuthorizerSignature = claim
      ? await deps.authorizer.signTypedData({
          domain,
          types: claimBatchTypes,
          primaryType: "ClaimBatch",
          message: {
            claims: [
              {
                channelId,
                maxClaimableAmount: BigInt(record.signedMaxClaimable ?? charged),
                totalClaimed: BigInt(charged),
              },
            ],
          },
        })
      : undefined;
    const payload = {
      x402Version: 2,
      accepted: requirements,
      payload: {
        type: "refund",
        channelConfig: record.channelConfig,
        voucher: {
          channelId,
          maxClaimableAmount: record.signedMaxClaimable ?? charged,
          signature: record.signature,
        },
        amount: amount.toString(),
        refundNonce: chain.refundNonce.toString(),
        claims,
        refundAuthorizerSignature,
        ...(claimAuthorizerSignature ? { claimAuthorizerSignature } : {}),
      },
    };
    const response = await deps.facilitator.settle(payload, requirements);
    if (!response.success) {
      return {
        success: false,
        transaction: response.transaction ?? "",
        errorReason: response.errorReason ?? "invalid_batch_settlement_evm_refund_transaction_failed",
        errorMessage: response.errorMessage ?? "",
      };
    }
    const extra = (response.extra ?? {}) as { channelState?: Partial<RefundChannelState> };
    return {
      success: true,
      transaction: response.transaction,
      amount: /^[0-9]+$/.test(response.amount ?? "") ? BigInt(response.amount as string) : amount,
      ...(extra.channelState ? { channelState: extra.channelState } : {}),
    };
  };
}
