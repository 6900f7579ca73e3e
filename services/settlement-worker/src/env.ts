// The settlement worker's environment, declared once: config.ts reads through it, the README table is
// rendered from it (pnpm gen:env) and the Kubernetes manifests are checked against it (test/k8s).
import { mppChainEnv, X402_BATCH_TERMS_ENV, X402_FACILITATOR_ENV } from "@tollgate/payment-rails";
import {
  DATABASE_ENV,
  DEFAULT_PORTS,
  envTable,
  meshCallerRows,
  NATS_ENV,
  OPERATOR_ENV,
  outboxEnv,
  REDIS_ENV,
  serviceEnv,
} from "@tollgate/platform";

const RECONCILIATION =
  "the chain payment-verifier settles on, for reconciliation: all four or none (none: `Reconcile` answers `FAILED_PRECONDITION`)";

export const ENV = envTable([
  ...serviceEnv(DEFAULT_PORTS["settlement-worker"]),
  ...DATABASE_ENV,
  ...NATS_ENV,
  ...outboxEnv("settlement-worker"),
  ...OPERATOR_ENV,
  // The dashboard lists a signed-in wallet's own payments (SettlementAccountService).
  ...meshCallerRows([], ["dashboard"]),
  {
    name: "LEDGER_RELEASED_PER_HOUR",
    default: "20",
    description:
      "released calls (no answer, nothing owed) kept as ledger rows per payer per UTC hour; the rest are only counted",
  },
  {
    name: "LEDGER_RELEASED_RETENTION_DAYS",
    default: "30",
    description: "released calls' rows are deleted after this many days (at least 1)",
  },
  { name: "X402_SETTLEMENT_RPC_URL", secret: true, description: `${RECONCILIATION}: its JSON-RPC` },
  { name: "X402_NETWORK", description: `${RECONCILIATION}: CAIP-2 (\`eip155:<chain id>\`)` },
  { name: "X402_ASSET", description: `${RECONCILIATION}: the token` },
  { name: "X402_PAY_TO", description: `${RECONCILIATION}: the receiver` },
  ...mppChainEnv({ rpc: "with MPP_SERVER_PRIVATE_KEY" }),
  ...REDIS_ENV.filter((v) => v.name !== "REDIS_STANDIN").map((v) =>
    v.name === "REDIS_URL"
      ? {
          ...v,
          description:
            "payment-verifier's Redis (its MPP state and x402-batch channels, the signer lock, the leases); never logged",
        }
      : v.name === "REDIS_PREFIX"
        ? {
            ...v,
            description: `${v.description}; the same as payment-verifier's: the worker reads its keys under \`<prefix>payment:\``,
          }
        : v,
  ),
  ...X402_BATCH_TERMS_ENV.map((v) =>
    v.name === "X402_BATCH_AUTHORIZER_PRIVATE_KEY"
      ? {
          name: v.name,
          secret: v.secret,
          description:
            "set: x402-batch channels are claimed here, signed with this key (payment-verifier's); needs the four reconciliation variables above and a facilitator",
        }
      : { ...v, description: `${v.description}; payment-verifier's channel terms (the same value)` },
  ),
  ...X402_FACILITATOR_ENV.map((v) =>
    v.name === "X402_FACILITATOR_URL" || v.name === "X402_FACILITATOR_PRIVATE_KEY"
      ? {
          ...v,
          description: `${v.description}; here: x402-batch claims go through it (set as on payment-verifier)`,
        }
      : v,
  ),
  {
    name: "X402_BATCH_CLAIM_INTERVAL_SECONDS",
    description:
      "claim anything unclaimed this often (unset: a quarter of the withdraw delay, 60 to 3600); at most half the withdraw delay",
  },
  {
    name: "X402_BATCH_MIN_CLAIM_AMOUNT",
    default: "1000000",
    description: "claim once this much (atomic units, all channels together) is unclaimed",
  },
  {
    name: "X402_BATCH_IDLE_REFUND_SECONDS",
    default: "86400",
    description: "refund a channel with no request for this long; `0`: never",
  },
  {
    name: "X402_BATCH_TICK_MS",
    default: "5000",
    description: "how often the lease holder passes (claims, settles, refunds); at least 50",
  },
  {
    name: "X402_BATCH_LEASE_MS",
    description: "how long the claim lease outlives its last renewal (unset: 3 ticks, at least 30 s)",
  },
  {
    name: "X402_BATCH_MAX_CLAIMS_PER_BATCH",
    default: "100",
    description: "channels per claim transaction",
  },
]);
