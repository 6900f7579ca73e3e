// The settlement worker's environment, declared once: config.ts reads through it, the README table is
// rendered from it (pnpm gen:env) and the Kubernetes manifests are checked against it (test/k8s).
import { mppChainEnv } from "@tollgate/payment-verifier/env";
import {
  DATABASE_ENV,
  envTable,
  NATS_ENV,
  OPERATOR_ENV,
  outboxEnv,
  REDIS_ENV,
  serviceEnv,
} from "@tollgate/platform";

const RECONCILIATION =
  "the chain payment-verifier settles on, for reconciliation: all four or none (none: `Reconcile` answers `FAILED_PRECONDITION`)";

export const ENV = envTable([
  ...serviceEnv({ grpc: 50054, metrics: 9464 }),
  ...DATABASE_ENV,
  ...NATS_ENV,
  ...outboxEnv("settlement-worker"),
  ...OPERATOR_ENV,
  { name: "X402_SETTLEMENT_RPC_URL", secret: true, description: `${RECONCILIATION}: its JSON-RPC` },
  { name: "X402_NETWORK", description: `${RECONCILIATION}: CAIP-2 (\`eip155:<chain id>\`)` },
  { name: "X402_ASSET", description: `${RECONCILIATION}: the token` },
  { name: "X402_PAY_TO", description: `${RECONCILIATION}: the receiver` },
  ...mppChainEnv({ rpc: "with MPP_SERVER_PRIVATE_KEY" }),
  ...REDIS_ENV.filter((v) => v.name !== "REDIS_STANDIN").map((v) =>
    v.name === "REDIS_URL"
      ? { ...v, description: "payment-verifier's Redis (its MPP state, the settling lease); never logged" }
      : v,
  ),
]);
