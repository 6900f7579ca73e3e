// The gateway's environment, declared once: config.ts reads through it, the README table is rendered
// from it (pnpm gen:env) and the Kubernetes manifests are checked against it (test/k8s).
import { DEFAULT_PORTS, defaultGrpcAddr, envTable, serviceEnv } from "@tollgate/platform";

export const ENV = envTable([
  ...serviceEnv(DEFAULT_PORTS.gateway),
  {
    name: "MESH_TOKEN",
    required: true,
    secret: true,
    description:
      "the token presented on every gRPC call; the services accept its SHA-256 (`MESH_CALLER_GATEWAY_SHA256`), see SECURITY.md",
  },
  {
    name: "QUOTA_METER_ADDR",
    default: defaultGrpcAddr("quota-meter"),
    description:
      "quota-meter's gRPC address; `dns:///<service>:<port>` spreads calls over every pod behind a headless Service",
  },
  {
    name: "PAYMENT_VERIFIER_ADDR",
    default: defaultGrpcAddr("payment-verifier"),
    description: "payment-verifier's gRPC address",
  },
  { name: "RPC_PROXY_ADDR", default: defaultGrpcAddr("rpc-proxy"), description: "rpc-proxy's gRPC address" },
  {
    name: "AUTHORIZE_DEADLINE_MS",
    default: "1000",
    description: "deadline of the quota-meter hop (1–60000)",
  },
  { name: "EXECUTE_DEADLINE_MS", default: "10000", description: "deadline of the rpc-proxy hop (1–60000)" },
  { name: "VERIFY_DEADLINE_MS", default: "10000", description: "deadline of a payment's Verify (1–60000)" },
  { name: "SETTLE_DEADLINE_MS", default: "30000", description: "deadline of a payment's Settle (1–60000)" },
  {
    name: "PUBLIC_BASE_URL",
    description:
      "the origin clients use (http(s), optional path prefix): OpenAPI `servers`, llms.txt links, payment resource URLs and the domain sign-in-with-x proofs are bound to (never taken from the caller's `Host`); unset, the docs are relative and sign-in-with-x is not offered",
  },
  {
    name: "DASHBOARD_URL",
    description:
      "where the account dashboard is served (http(s)): the `servers` of the `account` operations in /openapi.json; unset, a `{dashboard}` placeholder",
  },
  { name: "BODY_LIMIT_BYTES", default: "131072", description: "larger bodies: 413 `payload_too_large`" },
  {
    name: "LEASE_MAX_UNITS",
    default: "64",
    description:
      "the largest quota lease asked for a hot key (1 = ask quota-meter on every call); see quota-meter's README",
  },
  {
    name: "LEASE_BOOK_MAX_KEYS",
    default: "20000",
    description:
      "the most API keys the gateway remembers (leases, pace); past it an idle key is forgotten first. Unknown keys are forgotten once refused",
  },
  {
    name: "UNKNOWN_KEYS_PER_CLIENT_PER_SECOND",
    default: "5",
    description:
      "API keys quota-meter calls unknown or revoked, per client address and gateway (0 = off); past it 429 `rate_limited`, quota-meter not asked",
  },
  { name: "UNKNOWN_KEYS_PER_CLIENT_BURST", default: "20", description: "… and their burst" },
  {
    name: "RPC_SEND_RAW_TRANSACTION",
    default: "false",
    description:
      "`true`: `POST /rpc/{network}` relays `eth_sendRawTransaction` (priced in the catalog, listed in /api/pricing); `false`: answered -32601 like any method not served",
  },
  {
    name: "EARLY_CALL_TRUST_MS",
    default: "60000",
    description:
      "how long after a settled payment a client address's next paid call starts its node call beside Verify, one such call at a time (0 = never)",
  },
  {
    name: "TRUST_PROXY",
    default: "0",
    description:
      "`X-Forwarded-For` to believe for the client address (payment attempt limits): a hop count, or the proxies' addresses/CIDRs",
  },
  {
    name: "USAGE_BATCH_MAX",
    default: "200",
    description: "usage reports to quota-meter are flushed at this many records",
  },
  { name: "USAGE_BATCH_DELAY_MS", default: "100", description: "… or at this age (off the hot path)" },
  {
    name: "ACCESS_LOG",
    default: "true",
    description:
      "one JSON line per `/api/*` call (request id, endpoint, status, latency, auth kind, account or payer); `false` for raw throughput",
  },
]);
