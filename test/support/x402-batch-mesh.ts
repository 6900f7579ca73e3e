// A mesh of its own for the x402-batch money suites: payment-verifier offers exact and x402-batch
// with a spare settlement key of the shared devnet, paying the suite's own receiver (so payTo's
// balance is only that suite's), and a settlement worker that claims every 2 s or at 0.1 USDC,
// makes a pass every 0.5 s and refunds a channel idle for 15 s.
import type { Mesh } from "@tollgate/local";
import { parseAbi } from "viem";
import { sharedSettlementEnv } from "./devnet.ts";
import { startOwnMesh } from "./own-mesh.ts";

/** The escrow's reads and its claim event (our solc-compiled escrow at the canonical address). */
export const ESCROW_ABI = parseAbi([
  "function channels(bytes32) view returns (uint128 balance, uint128 totalClaimed)",
  "event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed)",
]);

export function batchMeshEnv(payTo: string, spare = "spare5") {
  const base = sharedSettlementEnv(spare);
  const x402 = {
    X402_NETWORK: base.X402_NETWORK ?? "",
    X402_ASSET: base.X402_ASSET ?? "",
    X402_ASSET_NAME: base.X402_ASSET_NAME ?? "",
    X402_ASSET_VERSION: base.X402_ASSET_VERSION ?? "",
    X402_PAY_TO: payTo,
    X402_SETTLEMENT_RPC_URL: base.X402_SETTLEMENT_RPC_URL ?? "",
    X402_FACILITATOR_PRIVATE_KEY: base.X402_FACILITATOR_PRIVATE_KEY ?? "",
    X402_BATCH_AUTHORIZER_PRIVATE_KEY: base.X402_BATCH_AUTHORIZER_PRIVATE_KEY ?? "",
  };
  return {
    base,
    paymentVerifier: { ...base, ...x402, PAYMENT_SCHEMES: "exact,x402-batch" },
    worker: {
      ...x402,
      X402_BATCH_TICK_MS: "500",
      X402_BATCH_LEASE_MS: "3000",
      X402_BATCH_CLAIM_INTERVAL_SECONDS: "2",
      X402_BATCH_MIN_CLAIM_AMOUNT: "100000",
      X402_BATCH_IDLE_REFUND_SECONDS: "15",
    },
  };
}

export function startBatchMesh(opts: {
  stateDir: string;
  namespace: string;
  payTo: string;
  upstreams: { ethereum: string; sepolia: string };
  /** The worker's settings over these (e.g. no idle refunds). */
  worker?: Record<string, string>;
}): Promise<Mesh> {
  const env = batchMeshEnv(opts.payTo);
  return startOwnMesh({
    stateDir: opts.stateDir,
    namespace: opts.namespace,
    onLine: (s, l) => process.env.MESH_LOGS && process.stderr.write(`[${s}] ${l}\n`),
    env: {
      LOG_LEVEL: "warn",
      // Redis is on this machine: no replica may fall back to a stand-in.
      REDIS_STANDIN: "false",
      UPSTREAMS_ETHEREUM: opts.upstreams.ethereum,
      UPSTREAMS_SEPOLIA: opts.upstreams.sepolia,
    },
    serviceEnv: {
      "payment-verifier": env.paymentVerifier,
      "settlement-worker": { ...env.worker, ...opts.worker },
    },
  });
}
