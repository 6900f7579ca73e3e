// The JSON API: one route per operation of the catalog's ACCOUNT_API (the description the
// gateway's /openapi.json is built from), validated with its zod schemas. Sessions, CSRF and
// error shapes are handled here once; the handlers speak plain objects.
import {
  ACCOUNT_API,
  ACCOUNT_ERRORS,
  type AccountApi,
  type AccountErrorCode,
  type AccountOperation,
  CREDIT_TOP_UPS,
  CREDITS_PATH,
  CSRF_HEADER,
  describePlan,
  type PlanFigures,
  planSource,
  SESSION_COOKIE,
  usdcOfAtomic,
} from "@tollgate/catalog";
import { CallError, grpc, type Logger } from "@tollgate/platform";
import type { ApiKey__Output } from "@tollgate/platform/generated/tollgate/quota/v1/ApiKey";
import type { Quota__Output } from "@tollgate/platform/generated/tollgate/quota/v1/Quota";
import express, { type Request, type Response } from "express";
import type { Hex } from "viem";
import type { z } from "zod";
import type { chainNamer } from "./chains.ts";
import type { Kv } from "./kv.ts";
import type { AccountClient } from "./quota-meter.ts";
import { csrfMatches, type Session, type Sessions } from "./sessions.ts";
import type { PaymentsClient } from "./settlement-worker.ts";
import type { Siwe } from "./siwe.ts";

export class ApiError extends Error {
  readonly code: AccountErrorCode;
  readonly parameter: string | undefined;
  constructor(code: AccountErrorCode, message: string, parameter?: string) {
    super(message);
    this.code = code;
    this.parameter = parameter;
  }
}

export interface ApiDeps {
  quota: AccountClient;
  payments: PaymentsClient;
  /** A payment's chain by name, and its transaction's explorer link (chains.ts states the rule). */
  chainOf: ReturnType<typeof chainNamer>;
  /** Where the credits page's top-up is paid (GATEWAY_URL); undefined: no button. */
  gatewayUrl: string | undefined;
  siwe: Siwe;
  sessions: Sessions;
  logger: Logger;
  origin: string;
  signUpOpen: boolean;
  /** Secure cookies everywhere but loopback http (the local run). */
  secureCookie: boolean;
  sessionTtlMs: number;
  /** Where the sign-in rate limit counts (shared by every replica). */
  kv: Kv;
  noncesPerMinute: number;
  /** New accounts one client address may make an hour (0 = no limit). */
  signUpsPerHour: number;
}

interface Call<Op extends AccountOperation> {
  params: Op["params"] extends z.ZodObject ? z.infer<Op["params"]> : Record<string, never>;
  query: Op["query"] extends z.ZodObject ? z.infer<Op["query"]> : Record<string, never>;
  body: Op["body"] extends z.ZodObject ? z.infer<Op["body"]> : Record<string, never>;
  /** Set on every operation with `session: true`. */
  session: Session;
  sessionId: string;
  /** The client's address (X-Forwarded-For as far as TRUST_PROXY allows). */
  ip: string;
  res: Response;
}

type Handlers = {
  [K in keyof AccountApi]: (call: Call<AccountApi[K]>) => Promise<z.input<AccountApi[K]["data"]>>;
};

const nullIfEmpty = (s: string) => (s === "" ? null : s);

/** Which protocol a ledger scheme belongs to (payment-verifier's names, old and new). */
const MPP_SCHEMES = new Set(["charge", "session", "mpp-charge", "mpp-session"]);

function apiKey(k: ApiKey__Output | null) {
  if (!k) throw new ApiError("service_unavailable", "quota-meter answered without a key");
  return {
    id: k.id,
    prefix: k.prefix,
    created_at: k.createdAt,
    last_used_at: nullIfEmpty(k.lastUsedAt),
    revoked_at: nullIfEmpty(k.revokedAt),
  };
}

function window(quota: Quota__Output | null, kind: "day" | "month", id: string) {
  const q = quota as Record<string, unknown> | null;
  const capped = q?.[`_${kind}Limit`] === `${kind}Limit`;
  return {
    window: id,
    used: capped ? Number(q?.[`${kind}Used`] ?? 0) : null,
    limit: capped ? Number(q?.[`${kind}Limit`]) : null,
  };
}

/** quota-meter's refusals as the API's errors; anything else is a 503 (never a 500). */
function fromCall(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof CallError) {
    const f = err.failure;
    if (f.code === "not_found" || f.grpcCode === grpc.status.NOT_FOUND)
      return new ApiError("not_found", f.message);
    if (f.code === "key_revoked") return new ApiError("key_revoked", f.message);
    if (f.code === "too_many_keys") return new ApiError("too_many_keys", f.message);
    if (f.code === "invalid_argument") return new ApiError("invalid_parameter", f.message);
  }
  return new ApiError("service_unavailable", "the account service is unavailable; retry with backoff");
}

/**
 * Who a rate limit counts: an IPv4 address, or an IPv6 address's /64 (one subscriber's usual
 * allocation: counting single IPv6 addresses would let one client mint 2^64 of them).
 */
function clientKey(ip: string): string {
  const v4 = ip.startsWith("::ffff:") ? ip.slice(7) : ip;
  if (!v4.includes(":")) return v4;
  const [head = "", tail] = v4.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups =
    tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g || "0", 16).toString(16))
    .join(":")}::/64`;
}

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

/** A plan's figures as the JSON API names them. */
const planJson = (p: PlanFigures) => ({
  daily_limit: p.dailyLimit,
  monthly_limit: p.monthlyLimit,
  burst_per_second: p.burstPerSecond,
});

function readCookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function sendApiError(res: Response, err: ApiError): void {
  res.status(ACCOUNT_ERRORS[err.code].status).json({
    error: { code: err.code, message: err.message, ...(err.parameter ? { parameter: err.parameter } : {}) },
  });
}

function firstIssue(error: z.ZodError, where: string): ApiError {
  const issue = error.issues[0];
  const parameter = issue?.path.length ? String(issue.path[0]) : where;
  return new ApiError("invalid_parameter", `${parameter}: ${issue?.message ?? "invalid"}`, parameter);
}

export function accountRouter(deps: ApiDeps): express.Router {
  const { quota, sessions } = deps;
  // The free plan's figures are quota-meter's (DescribePlans), asked at most once a minute.
  const plans = planSource(() => quota.plans(), {
    ttlMs: MINUTE_MS,
    retryMs: 5_000,
    onError: (err) =>
      deps.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "plans unavailable"),
  });

  /**
   * Counts one hit of this client address on `name` in a window of `windowMs`; past `max`, 429
   * `rate_limited` with Retry-After. Counted in the shared store, so across every replica.
   */
  const limitRate = async (
    name: string,
    ip: string,
    windowMs: number,
    max: number,
    res: Response,
    message: string,
  ) => {
    const { count, resetMs } = await deps.kv.hit(`rate:${name}:${clientKey(ip)}`, windowMs);
    if (count > max) {
      res.setHeader("Retry-After", String(Math.max(1, Math.ceil(resetMs / 1000))));
      throw new ApiError("rate_limited", message);
    }
  };

  /** Counts a sign-up of this client address: the seconds to wait past SIGN_UPS_PER_HOUR, else 0. */
  const signUpWait = async (ip: string) => {
    if (deps.signUpsPerHour <= 0) return 0;
    const { count, resetMs } = await deps.kv.hit(`rate:signup:${clientKey(ip)}`, HOUR_MS);
    return count <= deps.signUpsPerHour ? 0 : Math.max(1, Math.ceil(resetMs / 1000));
  };

  /**
   * The wallet's account. A returning wallet is one call and never limited. A new one needs sign-up
   * open and room in its client address's allowance of new accounts an hour: a wallet costs nothing
   * to make, and each new account gets the free plan (issue 34). A wallet whose account a credits
   * top-up made (credits only, issue 40) signs in at any time; its first sign-in the policy allows
   * is its sign-up, counted as one, and moves it to the free plan; until then it stays credits only.
   */
  const accountOf = async (address: string, ip: string, res: Response) => {
    const found = await quota.resolve(address, false).catch((err: unknown) => {
      const e = fromCall(err);
      if (e.code === "not_found") return undefined;
      throw e;
    });
    if (found) {
      if (!found.signUpPending || !deps.signUpOpen || (await signUpWait(ip)) > 0) return found;
      return quota.resolve(address, true);
    }
    if (!deps.signUpOpen)
      throw new ApiError("sign_up_closed", "sign-up is closed: this address has no account");
    const wait = await signUpWait(ip);
    if (wait > 0) {
      res.setHeader("Retry-After", String(wait));
      throw new ApiError(
        "rate_limited",
        `at most ${deps.signUpsPerHour} new accounts an hour from one address: retry after the Retry-After seconds (a wallet that already has an account signs in at any time)`,
      );
    }
    return quota.resolve(address, true);
  };
  const cookie = (id: string, maxAgeMs: number) =>
    `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(maxAgeMs / 1000)}${deps.secureCookie ? "; Secure" : ""}`;

  const sessionView = (s: Session) => ({
    account: {
      id: s.accountId,
      address: s.address,
      status: s.status as never,
      created_at: s.accountCreatedAt,
    },
    csrf_token: s.csrf,
    expires_at: s.expiresAt,
    sign_up_open: deps.signUpOpen,
  });

  const handlers: Handlers = {
    async nonce({ body, ip, res }) {
      // Every message issued is kept until it expires: bound what anonymous callers can store.
      await limitRate(
        "nonce",
        ip,
        MINUTE_MS,
        deps.noncesPerMinute,
        res,
        `at most ${deps.noncesPerMinute} sign-in messages a minute from one address; retry after the Retry-After seconds`,
      );
      const issued = await deps.siwe.issue(body.address);
      return { message: issued.message, nonce: issued.nonce, expires_at: issued.expiresAt };
    },
    async signIn({ body, ip, res }) {
      const outcome = await deps.siwe.verify(body.message, body.signature as Hex);
      if (!outcome.ok) throw new ApiError("siwe_refused", `sign-in refused: ${outcome.reason}`);
      const resolved = await accountOf(outcome.address, ip, res);
      const account = resolved.account;
      if (!account) throw new ApiError("service_unavailable", "quota-meter answered without an account");
      const { id, session } = await sessions.start({
        accountId: account.id,
        address: resolved.address,
        status: account.status,
        accountCreatedAt: account.createdAt,
      });
      res.setHeader("Set-Cookie", cookie(id, deps.sessionTtlMs));
      deps.logger.info({ accountId: account.id, created: resolved.created }, "signed in");
      return { ...sessionView(session), created: resolved.created };
    },
    async session({ session }) {
      return sessionView(session);
    },
    async plans() {
      const { free } = await plans.get();
      return {
        free: planJson(free),
        free_summary: describePlan(free),
        sign_up_open: deps.signUpOpen,
        sign_ups_per_hour: deps.signUpsPerHour,
      };
    },
    async signOut({ sessionId, session, res }) {
      await sessions.end(sessionId);
      res.setHeader("Set-Cookie", cookie("", 0));
      deps.logger.info({ accountId: session.accountId }, "signed out");
      return { signed_out: true as const };
    },
    async listKeys({ session }) {
      const { keys } = await quota.listKeys(session.accountId);
      return { keys: keys.map(apiKey).reverse() };
    },
    async createKey({ session }) {
      const created = await quota.createKey(session.accountId);
      return { key: apiKey(created.key), secret: created.secret };
    },
    async revokeKey({ session, params }) {
      const { key } = await quota.revokeKey(session.accountId, params.key_id);
      return { key: apiKey(key) };
    },
    async replaceKey({ session, params }) {
      const r = await quota.replaceKey(session.accountId, params.key_id);
      return { key: apiKey(r.key), secret: r.secret, revoked: apiKey(r.revoked) };
    },
    async usage({ session }) {
      const u = await quota.usage(session.accountId, 30);
      const a = u.account;
      if (!a) throw new ApiError("service_unavailable", "quota-meter answered without an account");
      return {
        account: {
          id: a.id,
          address: session.address,
          status: a.status as never,
          created_at: a.createdAt,
        },
        plan: {
          name: a.plan === "free" ? ("free" as const) : ("standard" as const),
          ...planJson({
            dailyLimit: a.dailyLimit,
            monthlyLimit: a.monthlyLimit,
            burstPerSecond: u.burstPerSecond,
          }),
        },
        today: window(u.quota, "day", u.dayWindow),
        month: window(u.quota, "month", u.monthWindow),
        days: u.days.map((d) => ({ day: d.day, calls: d.requests, errors: d.errors })),
      };
    },
    async credits({ session }) {
      const c = await quota.credits(session.accountId, 30);
      return {
        balance_usdc: usdcOfAtomic(c.balance),
        credits_only: c.creditsOnly,
        top_up: {
          path: CREDITS_PATH,
          gateway_url: deps.gatewayUrl ?? null,
          amounts_usdc: [...CREDIT_TOP_UPS],
        },
        days: c.days.map((d) => ({
          day: d.day,
          top_ups_usdc: usdcOfAtomic(d.topUps),
          draws_usdc: usdcOfAtomic(d.draws),
          refunds_usdc: usdcOfAtomic(d.refunds),
        })),
      };
    },
    async payments({ session, query }) {
      // The payer is the session's address (proved by its signature at sign-in), never a parameter.
      const page = await deps.payments.ownPayments(session.address, query.limit ?? 50, query.cursor ?? "");
      return {
        payments: page.settlements.map((s) => {
          const chain = deps.chainOf(s.paymentNetwork, nullIfEmpty(s.transaction));
          return {
            id: s.id,
            time: s.time,
            outcome: s.outcome as "settled" | "accrued",
            protocol: MPP_SCHEMES.has(s.scheme) ? ("MPP" as const) : ("x402" as const),
            scheme: s.scheme,
            endpoint: nullIfEmpty(s.endpoint),
            network: nullIfEmpty(s.network),
            amount: usdcOfAtomic(BigInt(s.amount)),
            amount_atomic: s.amount,
            asset: s.asset,
            chain: { id: s.paymentNetwork, name: chain.name },
            transaction: nullIfEmpty(s.transaction),
            transaction_url: chain.transactionUrl,
            channel: nullIfEmpty(s.channel),
          };
        }),
        next_cursor: nullIfEmpty(page.nextCursor),
      };
    },
  };

  const router = express.Router({ caseSensitive: true, strict: true });
  for (const [name, op] of Object.entries(ACCOUNT_API) as [keyof AccountApi, AccountOperation][]) {
    const route = op.path.replace(/\{(\w+)\}/g, ":$1");
    const handler = handlers[name] as (call: Call<AccountOperation>) => Promise<unknown>;
    router[op.method === "GET" ? "get" : "post"](route, async (req, res) => {
      res.locals.endpoint = op.path;
      try {
        if (op.method === "POST") {
          // A browser always names the page's origin on a POST; a foreign one is a cross-site request.
          const origin = req.headers.origin;
          if ((origin && origin !== deps.origin) || req.headers["sec-fetch-site"] === "cross-site") {
            throw new ApiError("csrf_refused", "this call is only accepted from the dashboard's own pages");
          }
        }
        let session: Session | undefined;
        let sessionId = "";
        if (op.session) {
          sessionId = readCookie(req, SESSION_COOKIE) ?? "";
          session = await sessions.read(sessionId).catch(() => {
            throw new ApiError("service_unavailable", "sessions are unavailable; retry with backoff");
          });
          if (!session) throw new ApiError("not_signed_in", "sign in first (no session, or it has ended)");
          res.locals.principal = session.accountId;
          if (op.method === "POST" && !csrfMatches(session, req.get(CSRF_HEADER))) {
            throw new ApiError("csrf_refused", `send the session's CSRF token in the ${CSRF_HEADER} header`);
          }
        }
        const params = op.params ? op.params.safeParse(req.params) : { success: true as const, data: {} };
        if (!params.success) throw firstIssue(params.error, "path");
        const body = op.body ? op.body.safeParse(req.body ?? {}) : { success: true as const, data: {} };
        if (!body.success) throw firstIssue(body.error, "body");
        const query = op.query ? op.query.safeParse(req.query) : { success: true as const, data: {} };
        if (!query.success) throw firstIssue(query.error, "query");
        const data = await handler({
          params: params.data as never,
          query: query.data as never,
          body: body.data as never,
          session: session as Session,
          sessionId,
          ip: req.ip ?? "",
          res,
        });
        res.setHeader("Cache-Control", "no-store");
        res.json({ data });
      } catch (err) {
        const e = fromCall(err);
        if (e.code === "service_unavailable") {
          deps.logger.warn(
            { endpoint: op.path, err: err instanceof Error ? err.message : String(err) },
            "call failed",
          );
        }
        sendApiError(res, e);
      }
    });
  }
  return router;
}
