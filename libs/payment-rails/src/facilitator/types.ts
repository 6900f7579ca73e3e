// What the x402 facilitator is to the services that use it (payment-verifier's resource server,
// the settlement worker's x402-batch claims), whichever mode it runs in (see facilitator.ts).
import type { Logger } from "@tollgate/platform";
import type { SignerLock } from "@tollgate/settlement-signer";
import type { PendingSettlementStore } from "@x402/core/facilitator";
import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";

export interface Facilitator {
  readonly mode: "remote" | "local";
  readonly client: FacilitatorClient;
  /** The settlement account (local mode). */
  readonly address?: `0x${string}`;
  /**
   * Local mode: settles an `exact` EIP-3009 payment that Verify accepted, with the same payload and
   * requirements, without verifying it a second time (see settleVerifiedTransfer), with the gas and
   * fees this process read while verifying it, if they are still fresh (see PreparedFees).
   */
  readonly settleVerified?: (
    payload: PaymentPayload,
    requirements: PaymentRequirements,
  ) => Promise<SettleResponse>;
  close(): Promise<void>;
}

export interface FacilitatorDeps {
  logger: Logger;
  /** A settlement transaction of ours was mined and reverted: its scheme and the fee it cost (wei). */
  onReverted?: (scheme: string, feeWei: bigint) => void;
  /** A settlement was not sent: the check just before sending found it failing (the refusal code). */
  onWithheld?: (scheme: string, reason: string) => void;
  /** Shares broadcast-but-unconfirmed settlements across replicas (Redis). */
  pendingSettlementStore?: PendingSettlementStore;
  /** Serialises the settlement key's transactions across every replica that holds it. */
  signerLock: SignerLock;
}
