// MPP `charge` (method tempo): one TIP-20 transfer per call, in pathUSD or USDC.e, through the
// official mppx tempo.charge method. One method serves both currencies (two tempo.charge instances
// would collide on mppx's handler key "tempo/charge"); each offer names its currency and chain id.
//
// Both payload kinds the official client sends:
//   - `transaction` (pull): a client-signed Tempo transaction. Verify simulates it; Settle (after
//     the node answered) broadcasts it, so a call with no answer moves no money.
//   - `hash` (push): the client already broadcast its transfer. Verify reads the receipt; Settle
//     only claims the hash. A call with no answer leaves the hash unclaimed: the same credential
//     pays for a retry until its challenge expires (5 minutes); after that the transfer stays with
//     the receiver and nothing else can be bought with it.
// Each credential is used at most once across replicas: the core's reservation of its transaction
// hash, then mppx's own claim of it in the shared store (mppx-store.ts).
import type { MppxState, TempoClient } from "@tollgate/payment-rails";
import type { Logger } from "@tollgate/platform";
import { tempo } from "mppx/server";
import { getAddress, type Hex, keccak256 } from "viem";
import { getTransaction, getTransactionReceipt, waitForTransactionReceipt } from "viem/actions";
import { Transaction } from "viem/tempo";
import { z } from "zod";
import type { MppConfig } from "../config.ts";
import type {
  Claim,
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
import { MPP_METHOD, type MppCredential, type MppOffer, type MppProtocol } from "../protocols/mpp.ts";

/** A used credential is remembered past its challenge's expiry (mppx refuses it after that anyway). */
const USED_MARGIN_MS = 10 * 60_000;
/** How long a taken-over settlement waits for the dead owner's broadcast transfer to be mined. */
const TAKEOVER_WAIT_MS = 15_000;
const hex = z.string().regex(/^0x[0-9a-fA-F]+$/, "expected hex");
const chargePayload = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("hash"),
    hash: z.string().regex(/^0x[0-9a-fA-F]{64}$/, "expected a 32-byte hash"),
  }),
  z.object({ type: z.literal("transaction"), signature: hex }),
  z.object({ type: z.literal("proof"), signature: hex }),
]);
const chargeRequest = z.looseObject({
  amount: z.string().regex(/^[0-9]{1,30}$/, "expected atomic units"),
  currency: z.string(),
  recipient: z.string().optional(),
  methodDetails: z.looseObject({ chainId: z.number().optional() }).optional(),
});

export interface ChargePayment {
  credential: MppCredential;
  kind: "hash" | "transaction";
  /** The transaction that moves (or moved) the money. */
  hash: Hex;
  /** The currency the credential pays in, as configured (checksummed). */
  currency: { address: `0x${string}`; symbol: string } | undefined;
  request: z.infer<typeof chargeRequest>;
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** The address in a `did:pkh:eip155:<chain>:<address>` source, if that is what it is. */
function sourceAddress(source: string | undefined): string | undefined {
  const match = /^did:pkh:eip155:[0-9]+:(0x[0-9a-fA-F]{40})$/.exec(source ?? "");
  return match?.[1];
}

export interface MppChargeDeps {
  protocol: MppProtocol;
  state: MppxState;
  client: TempoClient;
  logger: Logger;
}

export class MppChargeScheme implements PaymentScheme<MppCredential, MppOffer, ChargePayment> {
  readonly name = "mpp-charge";
  readonly protocol: MppProtocol;
  readonly #cfg: MppConfig;
  readonly #deps: MppChargeDeps;
  readonly #network: string;

  constructor(cfg: MppConfig, deps: MppChargeDeps) {
    this.#cfg = cfg;
    this.#deps = deps;
    this.protocol = deps.protocol;
    this.#network = `eip155:${cfg.chainId}`;
    deps.protocol.register(
      tempo.charge({
        recipient: cfg.payTo,
        getClient: () => deps.client,
        store: deps.state.charges,
        // Collect only what landed: the receipt is checked for the transfer to us.
        waitForConfirmation: true,
      }),
    );
  }

  async init(): Promise<void> {}

  /** This call's offer in `currency`: what the 402 lists, and what a credential is checked against. */
  #offer(call: PricedCall, currency: string): MppOffer {
    return {
      intent: "charge",
      request: { amount: call.endpoint.price, currency, chainId: this.#cfg.chainId },
    };
  }

  async offers(call: PricedCall): Promise<MppOffer[]> {
    return [
      this.#offer(call, MPP_CURRENCIES.pathUsd.address),
      this.#offer(call, MPP_CURRENCIES.usdce.address),
    ];
  }

  claim(credential: MppCredential): Claim<ChargePayment> {
    const { challenge } = credential;
    if (challenge.method !== MPP_METHOD || challenge.intent !== "charge") return { kind: "not-mine" };
    const payload = chargePayload.safeParse(credential.payload);
    if (!payload.success) {
      const issue = payload.error.issues[0];
      return {
        kind: "invalid",
        reason: `the MPP charge payload must be a transaction or a hash: payload.${issue?.path.join(".")}: ${issue?.message}`,
      };
    }
    if (payload.data.type === "proof") {
      return {
        kind: "invalid",
        reason: "proof credentials pay zero-amount challenges; none is offered here",
      };
    }
    const request = chargeRequest.safeParse(challenge.request);
    if (!request.success)
      return { kind: "invalid", reason: "the credential's challenge is not an MPP charge request" };
    let hash: Hex;
    let payer = sourceAddress(credential.source);
    if (payload.data.type === "hash") {
      hash = payload.data.hash.toLowerCase() as Hex;
    } else {
      hash = keccak256(payload.data.signature as Hex);
      if (!payer) {
        try {
          payer = (Transaction.deserialize(payload.data.signature as Hex) as { from?: string }).from;
        } catch {
          return { kind: "invalid", reason: "the MPP charge transaction is not a signed Tempo transaction" };
        }
      }
    }
    const currency = Object.values(MPP_CURRENCIES).find((c) => sameAddress(request.data.currency, c.address));
    const chain = request.data.methodDetails?.chainId ?? this.#cfg.chainId;
    return {
      kind: "payment",
      payment: {
        key: `mpp-charge:${chain}:${hash}`,
        payer: payer ?? "unknown",
        amount: request.data.amount,
        asset: currency?.address ?? request.data.currency,
        paymentNetwork: `eip155:${chain}`,
        payload: { credential, kind: payload.data.type, hash, currency, request: request.data },
      },
    };
  }

  /** Our own checks first, each with a precise reason (mppx would say "does not match" at best). */
  #refusal(call: PricedCall, payment: ChargePayment) {
    const { request, credential, currency } = payment;
    const { pathUsd, usdce } = MPP_CURRENCIES;
    if (!currency) {
      return this.protocol.refuse(
        `the credential pays in token ${request.currency}; this API takes ${pathUsd.symbol} ${pathUsd.address} or ${usdce.symbol} ${usdce.address}`,
        "challenge",
      );
    }
    return this.protocol.refuseForCall(call, credential, request, {
      chainId: this.#cfg.chainId,
      payTo: this.#cfg.payTo,
      symbol: currency.symbol,
    });
  }

  async verify(call: PricedCall, parsed: ParsedPayment<ChargePayment>): Promise<Verdict> {
    const payment = parsed.payload;
    const refusal = this.#refusal(call, payment);
    if (refusal) return { ok: false, ...refusal };
    return this.protocol.validate(payment.credential, this.#offer(call, payment.request.currency));
  }

  async settle(
    call: PricedCall,
    parsed: ParsedPayment<ChargePayment>,
    verified?: VerifiedPayment,
  ): Promise<SettleResult> {
    const payment = parsed.payload;
    if (verified?.takenOver && payment.kind === "transaction") {
      const sent = await this.#sentByDeadOwner(payment);
      if (sent) return sent;
    }
    const offer = this.#offer(call, payment.request.currency);
    try {
      const receipt = await this.protocol.broadcast(payment.credential, offer);
      return {
        ok: true,
        collection: { kind: "transaction", transaction: receipt.reference },
        receipt: [this.protocol.receipt(receipt)],
      };
    } catch (err) {
      const refused = this.protocol.refusalOf(err, "collected");
      // A broadcast whose answer was lost may still have landed: then the call is paid.
      if (payment.kind === "transaction" && refused.code === "service_unavailable") {
        const landed = await this.#landed(payment).catch(() => undefined);
        if (landed) {
          this.#deps.logger.info(
            { transaction: landed },
            "mpp-charge transfer landed after its answer was lost",
          );
          return this.#collected(landed);
        }
      }
      this.#deps.logger.info({ reason: refused.reason }, "mpp-charge collection failed");
      return { ok: false, ...refused, transaction: "", receipt: [] };
    }
  }

  #collected(transaction: Hex): SettleResult {
    const receipt = {
      method: MPP_METHOD,
      reference: transaction,
      status: "success" as const,
      timestamp: new Date().toISOString(),
    };
    return {
      ok: true,
      collection: { kind: "transaction", transaction },
      receipt: [this.protocol.receipt(receipt)],
    };
  }

  /**
   * A settlement taken over from a replica that died running it: mppx there claimed the
   * transaction's hash (so mppx here would refuse it as used) and may have broadcast it. Sent (in
   * the mempool or mined): its outcome is this call's. Never sent: the dead owner's claims are let
   * go and the settlement runs here (undefined).
   */
  async #sentByDeadOwner(payment: ChargePayment): Promise<SettleResult | undefined> {
    const signature = (payment.credential.payload as { signature: Hex }).signature;
    const canonical = keccak256(await Transaction.serialize(Transaction.deserialize(signature)));
    const client = this.#deps.client;
    const known = await getTransaction(client, { hash: canonical }).then(
      () => true,
      () => false,
    );
    if (!known) {
      for (const hash of new Set([payment.hash, canonical.toLowerCase()]))
        await this.#deps.state.charges.delete(`mppx:charge:${hash.toLowerCase()}`);
      return undefined;
    }
    const receipt = await waitForTransactionReceipt(client, {
      hash: canonical,
      timeout: TAKEOVER_WAIT_MS,
      pollingInterval: 250,
    }).catch(() => undefined);
    if (!receipt) {
      const reason = "the payment's transfer is still pending on the Tempo chain; retry";
      return { ok: false, code: "service_unavailable", reason, transaction: canonical, receipt: [] };
    }
    if (receipt.status !== "success") {
      const reason = "the payment's transfer reverted on the Tempo chain; sign a new payment";
      return { ok: false, code: "payment_invalid", reason, transaction: canonical, receipt: [] };
    }
    this.#deps.logger.info({ transaction: canonical }, "mpp-charge transfer sent by a dead replica landed");
    return this.#collected(receipt.transactionHash);
  }

  /** The client's transaction, mined successfully (mppx broadcasts its canonical serialization). */
  async #landed(payment: ChargePayment): Promise<Hex | undefined> {
    const signature = (payment.credential.payload as { signature: Hex }).signature;
    const canonical = keccak256(await Transaction.serialize(Transaction.deserialize(signature)));
    const receipt = await getTransactionReceipt(this.#deps.client, { hash: canonical });
    return receipt.status === "success" ? receipt.transactionHash : undefined;
  }

  receiptFor(): Header[] {
    return []; // nothing is collected before Settle: Verify never reports money as already moved
  }

  retentionMs(parsed: ParsedPayment<ChargePayment>): number {
    const expires = Date.parse(parsed.payload.credential.challenge.expires ?? "") || Date.now();
    return Math.max(0, expires - Date.now()) + USED_MARGIN_MS;
  }

  meta(call: PricedCall, parsed: ParsedPayment<ChargePayment>): PaymentMeta {
    const token = parsed.payload.currency?.address ?? getAddress(parsed.payload.request.currency);
    return { costUsdc: call.endpoint.price, paymentChain: this.#network, paymentToken: token };
  }

  methods(): PaymentMethodInfo[] {
    return [MPP_CURRENCIES.pathUsd, MPP_CURRENCIES.usdce].map((c) => ({
      protocol: "mpp",
      scheme: "charge",
      network: this.#network,
      asset: c.address,
      symbol: c.symbol,
      decimals: 6,
      payTo: this.#cfg.payTo,
      method: MPP_METHOD,
    }));
  }

  async close(): Promise<void> {}
}
