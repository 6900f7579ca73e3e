// MPP `session` (method tempo, USDC.e only) through the official mppx tempo.session method: the
// payer opens a payment channel in the TIP-1034 channel reserve with a deposit (the first call
// carries the open transaction), then pays each call with an off-chain cumulative voucher.
//
//   Verify   mppx validate: the voucher (or open, top-up, close) checked against the channel in the
//            shared store and this call's offer; nothing written, nothing broadcast.
//   Settle   (the node answered) mppx broadcast with the captured request: an open is broadcast,
//            the voucher raised in the store, then this call's price deducted from its headroom
//            (two updates, each a Lua compare-and-set in mppx-store.ts), so `spent` is persisted
//            before the response goes out and one channel's calls are linearizable across replicas.
//            A deduction whose answer was lost is read back (landed: the call is charged and
//            served). One that fails leaves the voucher accepted and the call uncharged (should it
//            have landed after all, it is given back once Redis answers, unless a takeover could
//            have served the call: undoDeduction, SettleResult.undo): the payer's next call re-sends
//            it and spends it (the settlement worker settles only what was spent).
//   Release  nothing to undo: a call with no answer charges nothing.
//
// Close and top-up need no upstream call (ParsedPayment.noService): the gateway settles them at
// once. A close has the server's account (the channel operator) close the channel on chain,
// capturing exactly what was spent; scheduled settles run elsewhere, in ONE place
// (session-settlement.ts, never in the request path).
import { priceAtomic, RPC_ENDPOINT } from "@tollgate/catalog";
import { type MppxState, type StoreScope, storeScope, type TempoClient } from "@tollgate/payment-rails";
import type { Logger } from "@tollgate/platform";
import { tempo } from "mppx/server";
import { formatUnits, type Hex, keccak256 } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { z } from "zod";
import type { MppConfig } from "../config.ts";
import type {
  Claim,
  Collection,
  Header,
  ParsedPayment,
  PaymentMeta,
  PaymentMethodInfo,
  PaymentScheme,
  PricedCall,
  SettleResult,
  Verdict,
  VerifiedPayment,
} from "../core/types.ts";
import { MPP_CURRENCIES } from "../domain.ts";
import {
  type CapturedRequest,
  MPP_METHOD,
  type MppCredential,
  type MppOffer,
  type MppProtocol,
} from "../protocols/mpp.ts";

/** How long a used voucher's key stays reserved: past it the channel's headroom refuses a replay. */
const USED_VOUCHER_MS = 60 * 60_000;
const CLOSED_MS = 7 * 24 * 3_600_000;

/** A session payment met a channel store that failed: retry, nothing is wrong with the payment. */
const CHANNELS_UNAVAILABLE = {
  code: "service_unavailable",
  reason: "MPP session channels are unavailable right now; retry",
} as const;

const hash32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "expected a 32-byte hex id");
const atomic = z.string().regex(/^[0-9]{1,30}$/, "expected atomic units");
const hex = z.string().regex(/^0x[0-9a-fA-F]+$/, "expected hex");
const descriptor = z.looseObject({ payer: z.string() }).optional();
const sessionPayload = z.discriminatedUnion("action", [
  z.looseObject({
    action: z.literal("open"),
    channelId: hash32,
    cumulativeAmount: atomic,
    descriptor,
    transaction: hex,
  }),
  z.looseObject({ action: z.literal("voucher"), channelId: hash32, cumulativeAmount: atomic, descriptor }),
  z.looseObject({
    action: z.literal("topUp"),
    channelId: hash32,
    additionalDeposit: atomic,
    descriptor,
    transaction: hex,
  }),
  z.looseObject({ action: z.literal("close"), channelId: hash32, cumulativeAmount: atomic, descriptor }),
]);
const sessionRequest = z.looseObject({
  amount: atomic,
  currency: z.string(),
  recipient: z.string().optional(),
  methodDetails: z.looseObject({ chainId: z.number().optional() }).optional(),
});

export interface SessionPayment {
  credential: MppCredential;
  action: "open" | "voucher" | "topUp" | "close";
  channelId: Hex;
  request: z.infer<typeof sessionRequest>;
}

/** The fields of mppx's session receipt this scheme reads. */
interface SessionReceipt {
  channelId: string;
  spent: string;
  txHash?: string;
}

export interface MppSessionDeps {
  protocol: MppProtocol;
  state: MppxState;
  client: TempoClient;
  /** The server's account: the channels' operator (settle, close) and the payer of their fees. */
  account: PrivateKeyAccount;
  logger: Logger;
}

export class MppSessionScheme implements PaymentScheme<MppCredential, MppOffer, SessionPayment> {
  readonly name = "mpp-session";
  readonly protocol: MppProtocol;
  readonly #cfg: MppConfig;
  readonly #deps: MppSessionDeps;
  readonly #network: string;
  /** What each close moved to the receiver, by its transaction (mppx reports it to a hook). */
  readonly #closed = new Map<string, { amount: bigint; delta: bigint }>();

  constructor(cfg: MppConfig, deps: MppSessionDeps) {
    this.#cfg = cfg;
    this.#deps = deps;
    this.protocol = deps.protocol;
    this.#network = `eip155:${cfg.chainId}`;
    deps.protocol.register(
      tempo.session({
        account: deps.account,
        recipient: cfg.payTo,
        operator: deps.account.address,
        currency: MPP_CURRENCIES.usdce.address,
        chainId: cfg.chainId,
        escrowContract: cfg.channelReserve,
        getClient: () => deps.client,
        store: deps.state.channels,
        feeToken: cfg.feeToken,
        suggestedDeposit: cfg.suggestedDeposit,
        unitType: "request",
        onSessionSettlement: (ctx) => {
          if (ctx.trigger !== "close") return;
          this.#closed.set(ctx.txHash.toLowerCase(), { amount: ctx.amount, delta: ctx.delta });
        },
        // No settlementSchedule: a settle in the request path would race other replicas.
      }),
    );
  }

  async init(): Promise<void> {}

  #offer(call: PricedCall): MppOffer {
    return {
      intent: "session",
      request: {
        amount: call.endpoint.price,
        currency: MPP_CURRENCIES.usdce.address,
        chainId: this.#cfg.chainId,
      },
    };
  }

  async offers(call: PricedCall): Promise<MppOffer[]> {
    return [this.#offer(call)];
  }

  claim(credential: MppCredential): Claim<SessionPayment> {
    const { challenge } = credential;
    if (challenge.method !== MPP_METHOD || challenge.intent !== "session") return { kind: "not-mine" };
    const payload = sessionPayload.safeParse(credential.payload);
    if (!payload.success) {
      const issue = payload.error.issues[0];
      return {
        kind: "invalid",
        reason: `the MPP session payload must be an open, voucher, top-up or close: payload.${issue?.path.join(".")}: ${issue?.message}`,
      };
    }
    const request = sessionRequest.safeParse(challenge.request);
    if (!request.success)
      return { kind: "invalid", reason: "the credential's challenge is not an MPP session request" };
    const p = payload.data;
    const channelId = p.channelId.toLowerCase() as Hex;
    const chain = request.data.methodDetails?.chainId ?? this.#cfg.chainId;
    const base = `mpp-session:${chain}:${channelId}`;
    const key =
      p.action === "close"
        ? `${base}:close`
        : p.action === "topUp"
          ? `${base}:top-up:${keccak256(p.transaction as Hex)}`
          : `${base}:${p.cumulativeAmount}`;
    const source = /^did:pkh:eip155:[0-9]+:(0x[0-9a-fA-F]{40})$/.exec(credential.source ?? "")?.[1];
    const management = p.action === "close" || p.action === "topUp";
    return {
      kind: "payment",
      payment: {
        key,
        payer: p.descriptor?.payer ?? source ?? "unknown",
        // What this call owes: the price for a served call; management actions owe nothing.
        amount: management ? "0" : request.data.amount,
        asset: request.data.currency,
        paymentNetwork: `eip155:${chain}`,
        payload: { credential, action: p.action, channelId, request: request.data },
        ...(management ? { noService: true } : {}),
      },
    };
  }

  /** Our own checks first, each with a precise reason; sessions are in USDC.e only. */
  #refusal(call: PricedCall, payment: SessionPayment) {
    const { request, credential } = payment;
    const usdce = MPP_CURRENCIES.usdce;
    if (request.currency.toLowerCase() !== usdce.address.toLowerCase()) {
      return this.protocol.refuse(
        `sessions are paid in ${usdce.symbol} ${usdce.address} only; the credential's channel is in ${request.currency}`,
        "challenge",
      );
    }
    return this.protocol.refuseForCall(call, credential, request, {
      chainId: this.#cfg.chainId,
      payTo: this.#cfg.payTo,
      symbol: usdce.symbol,
    });
  }

  /**
   * A close or top-up posted to /rpc/{network} names no body to price it by (its challenge was
   * issued at the price of the body that preceded it): it is checked at its challenge's own amount,
   * which it does not charge. The challenge is still this server's (HMAC), for this recipient, chain
   * and currency, and unexpired.
   */
  #asIssued(call: PricedCall, payment: SessionPayment): PricedCall {
    const management = payment.action === "close" || payment.action === "topUp";
    if (!call.noService || !management || call.endpoint.id !== RPC_ENDPOINT.id) return call;
    const price = formatUnits(BigInt(payment.request.amount), 6); // TIP-20: 6 decimals
    return { ...call, endpoint: { ...call.endpoint, price } };
  }

  async verify(priced: PricedCall, parsed: ParsedPayment<SessionPayment>): Promise<Verdict> {
    const payment = parsed.payload;
    const call = this.#asIssued(priced, payment);
    const refusal = this.#refusal(call, payment);
    if (refusal) return { ok: false, ...refusal };
    const scope: StoreScope = {};
    const verdict = await storeScope.run(scope, () =>
      this.protocol.validate(payment.credential, this.#offer(call)),
    );
    // The channel store failed under mppx (which reports it as a refusal): 503, not a refusal.
    if (!verdict.ok && scope.failed) return { ok: false, ...CHANNELS_UNAVAILABLE };
    return verdict;
  }

  /** The served call, as mppx's accounting classifies it: a content request, so it is charged. */
  #served(call: PricedCall): CapturedRequest {
    const url = URL.parse(call.url) ?? new URL(`http://tollgate.invalid${call.endpoint.path}`);
    return { method: "GET", url, headers: new Headers(), hasBody: false };
  }

  async settle(
    priced: PricedCall,
    parsed: ParsedPayment<SessionPayment>,
    verified?: VerifiedPayment,
  ): Promise<SettleResult> {
    const payment = parsed.payload;
    const call = this.#asIssued(priced, payment);
    if (verified?.takenOver && (payment.action === "voucher" || payment.action === "open")) {
      const charged = await this.#chargedByDeadOwner(call, payment);
      if (charged) return charged;
    }
    let receipt: SessionReceipt;
    let header: Header;
    // Where the store says it failed, and leaves the undo of a deduction whose outcome it could not learn.
    const scope: StoreScope = {};
    try {
      const served = payment.action === "open" || payment.action === "voucher";
      const result = await storeScope.run(scope, () =>
        this.protocol.broadcast(
          payment.credential,
          this.#offer(call),
          served ? this.#served(call) : undefined,
        ),
      );
      receipt = result as unknown as SessionReceipt;
      header = this.protocol.receipt(result);
    } catch (err) {
      // The channel store failed under mppx (a failed deduction reads "channel not found", another
      // failure "could not be collected"): a 503 to retry, not a refused payment.
      const refused = scope.failed ? CHANNELS_UNAVAILABLE : this.protocol.refusalOf(err, "collected");
      this.#deps.logger.info(
        { reason: refused.reason, action: payment.action },
        "mpp-session settlement failed",
      );
      return {
        ok: false,
        ...refused,
        transaction: "",
        receipt: [],
        ...(scope.undo ? { undo: scope.undo } : {}),
      };
    }
    return { ok: true, collection: this.#collection(call, payment, receipt), receipt: [header] };
  }

  /**
   * A settlement taken over from a replica that died running it: when the channel's record shows
   * this voucher's amount spent already, the dead owner charged this call (mppx would now refuse
   * it: nothing left to spend), so its receipt is answered again, as mppx makes it.
   */
  async #chargedByDeadOwner(call: PricedCall, payment: SessionPayment): Promise<SettleResult | undefined> {
    const cumulative = (payment.credential.payload as { cumulativeAmount?: string }).cumulativeAmount;
    const channel = (await this.#deps.state.channels.get(payment.channelId)) as {
      spent?: bigint;
      highestVoucherAmount?: bigint;
      units?: number;
    } | null;
    if (!cumulative || channel?.spent === undefined || channel.spent < BigInt(cumulative)) return undefined;
    const result = {
      method: "tempo",
      intent: "session",
      status: "success",
      timestamp: new Date().toISOString(),
      reference: payment.channelId,
      challengeId: payment.credential.challenge.id,
      channelId: payment.channelId,
      acceptedCumulative: String(channel.highestVoucherAmount ?? channel.spent),
      spent: String(channel.spent),
      ...(channel.units !== undefined ? { units: channel.units } : {}),
    };
    this.#deps.logger.info({ channel: payment.channelId }, "mpp-session voucher charged by a dead replica");
    const header = this.protocol.receipt(result as unknown as Parameters<MppProtocol["receipt"]>[0]);
    return { ok: true, collection: this.#collection(call, payment, result), receipt: [header] };
  }

  #collection(call: PricedCall, payment: SessionPayment, receipt: SessionReceipt): Collection {
    const channel = payment.channelId;
    if (payment.action === "close") {
      const txHash = receipt.txHash ?? "";
      const closed = this.#closed.get(txHash.toLowerCase());
      this.#closed.delete(txHash.toLowerCase());
      return {
        kind: "channel_settled",
        channel,
        amount: String(closed?.delta ?? 0n),
        cumulative: String(closed?.amount ?? receipt.spent),
        transaction: txHash,
      };
    }
    return {
      kind: "accrual",
      channel,
      // A top-up moves the payer's deposit, not a charge.
      amount: payment.action === "topUp" ? "0" : String(priceAtomic(call.endpoint.price)),
      cumulative: receipt.spent,
      // The open (or top-up) transaction that came with this call.
      ...(receipt.txHash ? { transaction: receipt.txHash } : {}),
    };
  }

  receiptFor(): Header[] {
    return []; // a channel payment never arrives already collected
  }

  retentionMs(parsed: ParsedPayment<SessionPayment>): number {
    return parsed.payload.action === "close" ? CLOSED_MS : USED_VOUCHER_MS;
  }

  meta(call: PricedCall): PaymentMeta {
    return {
      costUsdc: call.endpoint.price,
      paymentChain: this.#network,
      paymentToken: MPP_CURRENCIES.usdce.address,
    };
  }

  methods(): PaymentMethodInfo[] {
    const { address, symbol } = MPP_CURRENCIES.usdce;
    return [
      {
        protocol: "mpp",
        scheme: "session",
        network: this.#network,
        asset: address,
        symbol,
        decimals: 6,
        payTo: this.#cfg.payTo,
        method: MPP_METHOD,
      },
    ];
  }

  async close(): Promise<void> {}
}
