// Builds the configured schemes and the protocols they speak. Adding a scheme: implement
// PaymentScheme (core/types.ts) in this folder, give it a name in domain.ts's SCHEME_NAMES, and a
// line below.
import { type Facilitator, type MppxState, tempoClient } from "@tollgate/payment-rails";
import type { Logger } from "@tollgate/platform";
import type { ChannelStorage } from "@x402/evm/batch-settlement/server";
import { privateKeyToAccount } from "viem/accounts";
import type { SettlementChain } from "../adapters/settlement-chain.ts";
import type { PaymentVerifierConfig } from "../config.ts";
import type { PaymentMetrics } from "../core/metrics.ts";
import type { PaymentScheme } from "../core/types.ts";
import type { SchemeName } from "../domain.ts";
import { MppProtocol } from "../protocols/mpp.ts";
import type { SignInWithX } from "../protocols/sign-in-with-x.ts";
import { X402Protocol } from "../protocols/x402.ts";
import type { BatchRefundStore } from "../stores/batch-refunds.ts";
import type { BatchVoucherStore } from "../stores/batch-vouchers.ts";
import type { ReservationStore } from "../stores/reservations.ts";
import { MppChargeScheme } from "./mpp-charge.ts";
import { MppSessionScheme } from "./mpp-session.ts";
import { X402BatchScheme } from "./x402-batch.ts";
import { X402ExactScheme } from "./x402-exact.ts";

export interface SchemeDeps {
  logger: Logger;
  metrics: PaymentMetrics;
  /** The x402 facilitators, in the order they are asked. */
  x402Facilitators: readonly Facilitator[];
  settlementChain: SettlementChain | undefined;
  /** Where x402-batch keeps channel state (Redis; without it the scheme is not offered). */
  channelStorage: ChannelStorage | undefined;
  /** The same channel records, one Redis script per step, for vouchers on known channels. */
  batchVouchers: BatchVoucherStore | undefined;
  /** Refund requests on the same records, for the settlement worker to send. */
  batchRefunds: BatchRefundStore | undefined;
  /** Where MPP keeps replay claims and session channels (Redis, or the single-node stand-in). */
  mppState: MppxState;
  /** Where a payer is penalized (refused at Verify for a while), shared by every replica. */
  penalties: Pick<ReservationStore, "penalize">;
  /** Sign-in-with-x, declared in every x402 402 (unset: not offered). */
  signIn?: SignInWithX;
}

export function buildSchemes(config: PaymentVerifierConfig, deps: SchemeDeps): PaymentScheme[] {
  const x402 = new X402Protocol(
    deps.x402Facilitators.map((f) => f.client),
    deps.signIn,
  );
  // MPP: one protocol (one mppx server, one challenge secret) and one Tempo client for both schemes.
  const mpp = config.mpp;
  const account = mpp?.serverKey ? privateKeyToAccount(mpp.serverKey) : undefined;
  const tempo = mpp && {
    protocol: new MppProtocol({ secretKey: mpp.secretKey, realm: mpp.realm }),
    client: tempoClient({ rpcUrl: mpp.rpcUrl, chainId: mpp.chainId, account }),
  };
  const mppTerms = () => {
    if (!mpp || !tempo) throw new Error("an MPP scheme is offered without its settings (config.mpp)");
    return { cfg: mpp, ...tempo, state: deps.mppState, logger: deps.logger };
  };
  // Only when it is the sole facilitator did it verify what it would settle without a second check.
  const [only, ...others] = deps.x402Facilitators;
  const local = only?.mode === "local" && others.length === 0 ? only : undefined;
  const factories: Record<SchemeName, () => PaymentScheme> = {
    exact: () =>
      new X402ExactScheme(config.x402, {
        protocol: x402,
        chain: deps.settlementChain,
        ...(local ? { local } : {}),
        penalties: deps.penalties,
        logger: deps.logger,
        onInitFailure: () => deps.metrics.facilitatorInitFailures.inc({ scheme: "exact" }),
      }) as PaymentScheme,
    "x402-batch": () => {
      const terms = config.x402.batch;
      if (!terms) throw new Error("x402-batch is offered without its terms (config.x402.batch)");
      if (!deps.channelStorage || !deps.batchVouchers || !deps.batchRefunds)
        throw new Error("x402-batch is offered without its Redis channel storage");
      return new X402BatchScheme(config.x402, terms, {
        protocol: x402,
        storage: deps.channelStorage,
        vouchers: deps.batchVouchers,
        refunds: deps.batchRefunds,
        authorizer: privateKeyToAccount(terms.authorizerKey),
        chain: deps.settlementChain,
        logger: deps.logger,
        onInitFailure: () => deps.metrics.facilitatorInitFailures.inc({ scheme: "x402-batch" }),
      }) as PaymentScheme;
    },
    "mpp-charge": () => {
      const { cfg, ...d } = mppTerms();
      return new MppChargeScheme(cfg, d) as PaymentScheme;
    },
    "mpp-session": () => {
      const { cfg, ...d } = mppTerms();
      if (!account)
        throw new Error("mpp-session is offered without the server's key (MPP_SERVER_PRIVATE_KEY)");
      return new MppSessionScheme(cfg, { ...d, account }) as PaymentScheme;
    },
  };
  return config.schemes.map((name) => factories[name]());
}
