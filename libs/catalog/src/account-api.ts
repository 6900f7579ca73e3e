// The dashboard's JSON API (issue 14), described once: the dashboard routes and validates with
// these schemas, and the gateway's /openapi.json lists the same operations under the tag
// `account`. The API is served by the dashboard (its own origin), never by the gateway.
import { z } from "zod";
import { PLAN_NAMES } from "./plans.ts";

/** Where the dashboard serves its JSON API. */
export const ACCOUNT_API_BASE = "/api/dashboard";

/** The session cookie and the CSRF header of state-changing calls (double submit, see the dashboard README). */
export const SESSION_COOKIE = "tollgate_session";
export const CSRF_HEADER = "x-csrf-token";

const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/)
  .describe("Wallet address, 0x and 40 hex digits (any casing).");
const keyId = z
  .string()
  .regex(/^key_[0-9a-f]{16}$/)
  .describe("Key id, as listed (key_ and 16 hex digits).");

const ApiKey = z.object({
  id: z.string(),
  prefix: z.string().describe("The key's first 12 characters: enough to recognise it, never to use it."),
  created_at: z.string().describe("RFC 3339."),
  last_used_at: z.string().nullable().describe("When a call with the key last reached the usage rollups."),
  revoked_at: z.string().nullable(),
});

const NewKey = z.object({
  key: ApiKey,
  secret: z.string().describe("The key itself. Shown once: it is not stored and cannot be shown again."),
});

const Account = z.object({
  id: z.string(),
  address: z.string().describe("The wallet address the account is bound to (lower case)."),
  status: z
    .enum(["active", "past_due", "canceled", "suspended"])
    .describe("Subscription status; only active keys are served (otherwise 403 subscription_inactive)."),
  created_at: z.string(),
});

const Window = z.object({
  window: z.string().describe("The UTC window: YYYY-MM-DD (day) or YYYY-MM (month)."),
  used: z
    .number()
    .int()
    .nullable()
    .describe("Calls counted, as X-Quota-*-Used; null when unknown right now."),
  limit: z.number().int().nullable().describe("The cap, as X-Quota-*-Limit; null when uncapped."),
});

const PlanFigures = z.object({
  daily_limit: z.number().int().describe("Calls a UTC day; 0 = uncapped."),
  monthly_limit: z.number().int().describe("Calls a calendar month; 0 = uncapped."),
  burst_per_second: z.number().int().describe("Burst guard across all replicas (0 = none)."),
});

const Usage = z.object({
  account: Account,
  plan: PlanFigures.extend({
    name: z
      .enum(PLAN_NAMES)
      .describe(
        "`free`: made by a first sign-in (self-serve); `standard`: a plan the operator gave. The figures are the account's own.",
      ),
  }),
  today: Window,
  month: Window,
  days: z
    .array(z.object({ day: z.string(), calls: z.number().int(), errors: z.number().int() }))
    .describe("Per UTC day, oldest first, zero days included (from the usage rollups)."),
});

const Session = z.object({
  account: Account,
  csrf_token: z.string().describe(`Send it back in the ${CSRF_HEADER} header of every POST.`),
  expires_at: z.string(),
  sign_up_open: z.boolean(),
});

/** Every error the account API answers, with its status. */
/**
 * What one account may make through the dashboard (quota-meter enforces it): live keys, and keys in
 * all (revoked ones stay as records). Sign-up is free, so both are bounded.
 */
export const ACCOUNT_KEY_LIMITS = { live: 20, total: 200 } as const;

export const ACCOUNT_ERRORS = {
  invalid_parameter: {
    status: 400,
    description: "A parameter is missing or malformed; `parameter` names it.",
  },
  not_signed_in: { status: 401, description: "No session, or it ended (sign in again)." },
  siwe_refused: {
    status: 401,
    description:
      "The sign-in message or its signature was refused: unknown or used nonce, expired, wrong domain, URI or chain, or a signature of another address.",
  },
  csrf_refused: {
    status: 403,
    description: `A state-changing call without the session's ${CSRF_HEADER} header, or from another origin.`,
  },
  sign_up_closed: {
    status: 403,
    description: "The operator has closed sign-up; existing accounts can sign in.",
  },
  not_found: { status: 404, description: "No such key on this account." },
  key_revoked: { status: 409, description: "The key is already revoked." },
  too_many_keys: {
    status: 409,
    description: `The account holds ${ACCOUNT_KEY_LIMITS.live} live keys (revoke one first), or has made ${ACCOUNT_KEY_LIMITS.total} keys in all.`,
  },
  rate_limited: {
    status: 429,
    description:
      "Too many sign-in messages asked for from this client address in a minute, or too many new accounts made from it in an hour (a returning wallet is never held back); `Retry-After` says when to try again.",
  },
  service_unavailable: { status: 503, description: "A dependency is unreachable; retry with backoff." },
} as const;

export type AccountErrorCode = keyof typeof ACCOUNT_ERRORS;

export const AccountError = z.object({
  error: z.object({
    code: z.enum(Object.keys(ACCOUNT_ERRORS) as [AccountErrorCode, ...AccountErrorCode[]]),
    message: z.string(),
    parameter: z.string().optional(),
  }),
});

export interface AccountOperation {
  id: string;
  method: "GET" | "POST";
  /** OpenAPI-style template ({key_id}); the dashboard turns it into its router's syntax. */
  path: string;
  summary: string;
  description: string;
  /** Needs a session cookie (and, for POST, the CSRF header). */
  session: boolean;
  params?: z.ZodObject;
  body?: z.ZodObject;
  data: z.ZodType;
  errors: readonly AccountErrorCode[];
}

const path = (p: string) => `${ACCOUNT_API_BASE}${p}`;

export const ACCOUNT_API = {
  nonce: {
    id: "accountNonce",
    method: "POST",
    path: path("/nonce"),
    summary: "Start a wallet sign-in (EIP-4361)",
    description:
      "Returns the Sign-In with Ethereum message for the address to sign (personal_sign): a server nonce (single use, valid 5 minutes), this dashboard's domain and URI, the chain contract wallets are checked on, and an expiration time. Each client address may ask for a limited number per minute (the dashboard's `SIWE_NONCES_PER_MINUTE`); past it, 429 `rate_limited` with `Retry-After`.",
    session: false,
    body: z.object({ address }),
    data: z.object({ message: z.string(), nonce: z.string(), expires_at: z.string() }),
    errors: ["invalid_parameter", "csrf_refused", "rate_limited", "service_unavailable"],
  },
  signIn: {
    id: "accountSignIn",
    method: "POST",
    path: path("/sign-in"),
    summary: "Finish a wallet sign-in",
    description:
      "Verifies the signed message (EOA signatures, and EIP-1271 / ERC-6492 smart wallets against the chain), uses up its nonce, and starts a session (HttpOnly, SameSite=Strict cookie). The first sign-in of an address creates its account on the free plan (see plans) while sign-up is open; each client address may make a limited number of accounts an hour (the dashboard's `SIGN_UPS_PER_HOUR`; past it, 429 `rate_limited` with `Retry-After`). A wallet that already has an account is never held back.",
    session: false,
    body: z.object({
      message: z.string().min(1).max(4096).describe("The message exactly as returned by nonce."),
      signature: z
        .string()
        .regex(/^0x[0-9a-fA-F]+$/)
        .max(20000)
        .describe("The wallet's personal_sign signature (hex)."),
    }),
    data: Session.extend({ created: z.boolean().describe("The account was created by this sign-in.") }),
    errors: [
      "invalid_parameter",
      "siwe_refused",
      "csrf_refused",
      "sign_up_closed",
      "rate_limited",
      "service_unavailable",
    ],
  },
  plans: {
    id: "accountPlans",
    method: "GET",
    path: path("/plans"),
    summary: "The free plan a new account gets",
    description:
      "The free plan's figures as quota-meter enforces them (what a first sign-in gets), whether sign-up is open, and how many new accounts one client address may make an hour (0 = no limit). For more than the free plan: pay per call with x402 or MPP (no account), or ask the operator for a larger plan.",
    session: false,
    data: z.object({
      free: PlanFigures,
      free_summary: z
        .string()
        .describe('The same figures in words: "1,000 calls a day, 10,000 a month, at most 5 a second".'),
      sign_up_open: z.boolean(),
      sign_ups_per_hour: z.number().int(),
    }),
    errors: ["service_unavailable"],
  },
  session: {
    id: "accountSession",
    method: "GET",
    path: path("/session"),
    summary: "The signed-in account and the CSRF token",
    description: "The current session's account, its CSRF token and when it ends.",
    session: true,
    data: Session,
    errors: ["not_signed_in", "service_unavailable"],
  },
  signOut: {
    id: "accountSignOut",
    method: "POST",
    path: path("/sign-out"),
    summary: "Sign out",
    description: "Deletes the session on the server and clears the cookie.",
    session: true,
    data: z.object({ signed_out: z.literal(true) }),
    errors: ["not_signed_in", "csrf_refused", "service_unavailable"],
  },
  listKeys: {
    id: "accountListKeys",
    method: "GET",
    path: path("/keys"),
    summary: "The account's API keys",
    description: "Every key of the signed-in account, live and revoked: prefix, created, last used, revoked.",
    session: true,
    data: z.object({ keys: z.array(ApiKey) }),
    errors: ["not_signed_in", "service_unavailable"],
  },
  createKey: {
    id: "accountCreateKey",
    method: "POST",
    path: path("/keys"),
    summary: "Create an API key (shown once)",
    description:
      "A new key for `Authorization: Bearer`. The secret is in this answer only: it is stored hashed and cannot be shown again. All keys share the account's quota (spec 5.3).",
    session: true,
    data: NewKey,
    errors: ["not_signed_in", "csrf_refused", "too_many_keys", "service_unavailable"],
  },
  revokeKey: {
    id: "accountRevokeKey",
    method: "POST",
    path: path("/keys/{key_id}/revoke"),
    summary: "Revoke an API key",
    description: "The key stops working at once (calls with it get 401 within a second).",
    session: true,
    params: z.object({ key_id: keyId }),
    data: z.object({ key: ApiKey }),
    errors: ["invalid_parameter", "not_signed_in", "csrf_refused", "not_found", "service_unavailable"],
  },
  replaceKey: {
    id: "accountReplaceKey",
    method: "POST",
    path: path("/keys/{key_id}/replace"),
    summary: "Replace a lost API key",
    description: "Creates a new key (shown once), then revokes the old one (spec 5.4).",
    session: true,
    params: z.object({ key_id: keyId }),
    data: NewKey.extend({ revoked: ApiKey }),
    errors: [
      "invalid_parameter",
      "not_signed_in",
      "csrf_refused",
      "not_found",
      "key_revoked",
      "too_many_keys",
      "service_unavailable",
    ],
  },
  usage: {
    id: "accountUsage30Days",
    method: "GET",
    path: path("/usage"),
    summary: "Usage against the plan",
    description:
      "Today's and this month's calls against the account's limits (the numbers the X-Quota-* headers carry), the plan as quota-meter enforces it, the subscription status, and calls and errors per UTC day for the last 30 days.",
    session: true,
    data: Usage,
    errors: ["not_signed_in", "service_unavailable"],
  },
} as const satisfies Record<string, AccountOperation>;

export type AccountApi = typeof ACCOUNT_API;
