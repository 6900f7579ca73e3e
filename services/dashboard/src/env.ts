// The dashboard's environment, declared once: config.ts reads through it, the README table is
// rendered from it (pnpm gen:env) and the Kubernetes manifests are checked against it (test/k8s).
import { DEFAULT_PORTS, defaultGrpcAddr, envTable, REDIS_ENV, serviceEnv } from "@tollgate/platform";

export const ENV = envTable([
  ...serviceEnv(DEFAULT_PORTS.dashboard),
  {
    name: "DASHBOARD_PUBLIC_URL",
    description:
      "the origin users reach the dashboard at (no path): sign-in messages name its host and URI, POSTs from any other `Origin` are refused, cookies are `Secure` unless it is loopback `http`; unset: `http://<BIND_HOST>:<port>`",
  },
  {
    name: "SIGN_UP",
    default: "open",
    description:
      "`open`: a first sign-in creates an account on the free plan (quota-meter's `FREE_*`); `closed`: only addresses that already have an account sign in (others get 403 `sign_up_closed`)",
  },
  {
    name: "SIGN_UPS_PER_HOUR",
    default: "3",
    description:
      "accounts first sign-ins from one client address may create an hour (more: 429 `rate_limited` with `Retry-After`; returning wallets are never held back; 0 = no limit)",
  },
  {
    name: "QUOTA_METER_ADDR",
    default: defaultGrpcAddr("quota-meter"),
    description: "quota-meter's gRPC address",
  },
  { name: "QUOTA_METER_DEADLINE_MS", default: "3000", description: "deadline of every gRPC call" },
  {
    name: "SETTLEMENT_WORKER_ADDR",
    default: defaultGrpcAddr("settlement-worker"),
    description:
      "settlement-worker's gRPC address: the payments page lists the signed-in wallet's own payments (`SettlementAccountService`, which accepts this token by `MESH_CALLER_DASHBOARD_SHA256` on the worker)",
  },
  {
    name: "GATEWAY_URL",
    description:
      "the gateway's public origin: the credits page's top-up button pays `POST /api/credits` there from the browser (and the page's `connect-src` allows it); unset: the page shows the balance, no button",
  },
  {
    name: "LOCAL_CHAINS",
    description:
      'CAIP-2 ids (comma-separated) of payment chains with no public explorer, e.g. local devnets that reuse a public chain id: the payments page names them "<name> (local)" without transaction links (`pnpm start` sets its devnets)',
  },
  {
    name: "MESH_TOKEN",
    required: true,
    secret: true,
    description:
      "the dashboard's own mesh token; quota-meter accepts it by `MESH_CALLER_DASHBOARD_SHA256` (AccountService and GetUsage only), settlement-worker by its own `MESH_CALLER_DASHBOARD_SHA256` (ListOwnPayments only)",
  },
  ...REDIS_ENV,
  { name: "REDIS_CONNECT_TIMEOUT_MS", default: "1500", description: "how long start-up waits for Redis" },
  { name: "SIWE_CHAIN_ID", default: "1", description: "the chain sign-in messages name" },
  {
    name: "SIWE_RPC_URL",
    secret: true,
    description:
      "a node of that chain: contract wallets (EIP-1271, and ERC-6492 not yet deployed) can sign in; unset: wallet keys (EOA) only",
  },
  {
    name: "SIWE_NONCE_TTL_SECONDS",
    default: "300",
    description: "how long a sign-in message (and its nonce) is valid",
  },
  {
    name: "SIWE_NONCES_PER_MINUTE",
    default: "20",
    description:
      "sign-in messages one client address may ask for per minute (more: 429 `rate_limited`); each is kept in Redis until it expires, so this bounds what anonymous callers can store",
  },
  {
    name: "TRUST_PROXY",
    default: "0",
    description:
      "`X-Forwarded-For` to believe for the client address (the sign-in and sign-up rate limits): a hop count, or the proxies' addresses/CIDRs",
  },
  { name: "SESSION_TTL_HOURS", default: "12", description: "session lifetime (absolute)" },
]);
