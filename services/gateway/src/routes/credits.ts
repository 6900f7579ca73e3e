// POST /api/credits: buying prepaid credits. The amount picks one priced product of the catalog
// (TOP_UP_PRODUCTS); payment-verifier offers and takes it with x402 `exact` and MPP `charge` only,
// Verify and Settle run back to back (no node call), and quota-meter credits the settled amount under
// the settlement's mesh-generated id, once. When that credit call fails after the payer paid, the
// answer is 202 with the receipt: quota-meter credits the same settlement from the settlement stream
// (its event carries the top-up and the account), still once (docs/decisions.md).
import {
  CREDITS_ENDPOINT,
  CREDITS_PATH,
  isCreditTopUp,
  PAYMENT_HEADERS,
  paidResource,
  priceAtomic,
  TOP_UP_KEY_HEADER,
  topUpResource,
  usdcOfAtomic,
  validateRequest,
} from "@tollgate/catalog";
import type { Logger } from "@tollgate/platform";
import { type Request, type Response, Router } from "express";
import type { paymentAuth } from "../auth/payment.ts";
import type { Header } from "../clients/payment-verifier.ts";
import type { QuotaMeterClient } from "../clients/quota-meter.ts";
import { topUpRequiredMessage } from "../docs/credits-paths.ts";
import { type Meta, sendData, sendError, sendLimit } from "../envelope.ts";
import type { UnknownKeyLimiter } from "../leases.ts";
import { type AcceptedMethods, inactiveMessage } from "../payment-methods.ts";

export interface CreditsDeps {
  quota: QuotaMeterClient;
  methods: AcceptedMethods;
  logger: Logger;
  publicBaseUrl: string | undefined;
  unknownKeys: UnknownKeyLimiter | undefined;
  /** The paid path's entries, shared with the chain routes (one set of payment metrics). */
  payments: ReturnType<typeof paymentAuth>;
}

const BEARER = /^Bearer +([A-Za-z0-9._~+/=-]{1,256})$/i;
const KEY = /^[A-Za-z0-9._~+/=-]{1,256}$/;
const X402_HEADERS = [PAYMENT_HEADERS.signature.name, PAYMENT_HEADERS.signatureV1.name].map((n) =>
  n.toLowerCase(),
);

/**
 * The key and the payment of a top-up. Unlike a chain call, both may come together: the key names
 * the account credited, the payment pays. The key is `Authorization: Bearer`, or `X-Api-Key` when
 * `Authorization` carries an MPP credential.
 */
function readTopUp(
  req: Request,
): { ok: true; apiKey: string | undefined; payment: Header[] } | { ok: false; reason: string } {
  const payment: Header[] = [];
  let apiKey: string | undefined;
  const authorization = req.headers.authorization?.trim();
  if (authorization !== undefined) {
    const bearer = BEARER.exec(authorization)?.[1];
    if (bearer) apiKey = bearer;
    else if (/^Payment\s/i.test(authorization)) payment.push({ name: "authorization", value: authorization });
    else
      return { ok: false, reason: "Authorization must be `Bearer <API key>` or an MPP `Payment` credential" };
  }
  const named = req.headers[TOP_UP_KEY_HEADER.toLowerCase()];
  if (typeof named === "string") {
    const key = named.trim();
    if (!KEY.test(key) || (apiKey !== undefined && apiKey !== key))
      return {
        ok: false,
        reason: `${TOP_UP_KEY_HEADER}: expected one API key (the same as the Bearer one, if both)`,
      };
    apiKey = key;
  }
  for (const name of X402_HEADERS) {
    const value = req.headers[name];
    if (typeof value === "string") payment.push({ name, value });
  }
  return { ok: true, apiKey, payment };
}

export function creditsRouter(deps: CreditsDeps): Router {
  const router = Router({ caseSensitive: true, strict: true });
  router.post(CREDITS_PATH, (req, res) => buyCredits(req, res, deps));
  return router;
}

/** The key's account, before any payment is looked at; undefined once refused (answered here). */
async function accountOfKey(
  apiKey: string,
  req: Request,
  res: Response,
  deps: CreditsDeps,
): Promise<string | undefined> {
  // As for a usage read: a token of the client's unknown-key bucket, given back unless the key is
  // unknown, so made-up keys cannot flood quota-meter through this path.
  const client = req.ip ?? "";
  const limiter = deps.unknownKeys;
  if (limiter && !limiter.take(client)) {
    sendLimit(res, "rate_limited", deps.methods.text());
    return undefined;
  }
  try {
    const usage = await deps.quota.usage(apiKey, 1);
    limiter?.giveBack(client);
    return usage.accountId;
  } catch (err) {
    const code = (err as { failure?: { code?: string } }).failure?.code;
    if (code !== "invalid_api_key") limiter?.giveBack(client);
    if (code === "invalid_api_key") sendError(res, "invalid_api_key", "the API key is unknown or revoked");
    else if (code === "subscription_inactive")
      sendError(res, "subscription_inactive", inactiveMessage(deps.methods.text()));
    else if (code === "rate_limited") sendLimit(res, "rate_limited", deps.methods.text());
    else sendError(res, "service_unavailable", "the account service is unavailable, retry with backoff");
    return undefined;
  }
}

async function buyCredits(req: Request, res: Response, deps: CreditsDeps): Promise<void> {
  res.locals.endpoint = CREDITS_PATH;
  res.setHeader("Cache-Control", "no-store");
  // The amount first (free, no I/O): a bad one is a 400 before any credential is looked at.
  const checked = validateRequest(CREDITS_ENDPOINT, { path: {}, query: req.query, body: undefined });
  if (!checked.ok) {
    sendError(res, checked.code, checked.message, { parameter: checked.parameter });
    return;
  }
  const amount = String(checked.params.amount);
  const product = isCreditTopUp(amount) ? paidResource(topUpResource(amount)) : undefined;
  if (!product) throw new Error(`the catalog has no top-up of ${amount}`);
  const credentials = readTopUp(req);
  if (!credentials.ok) {
    res.locals.auth = "invalid";
    sendError(res, "invalid_api_key", credentials.reason);
    return;
  }
  const { apiKey, payment } = credentials;
  let account = "";
  if (apiKey !== undefined) {
    res.locals.auth = "api_key";
    const found = await accountOfKey(apiKey, req, res, deps);
    if (found === undefined) return;
    account = found;
    res.locals.principal = account;
  }
  const resource = {
    endpoint: product.path,
    network: "",
    url: `${deps.publicBaseUrl ?? ""}${CREDITS_PATH}?amount=${amount}`,
    account,
  };
  if (payment.length === 0)
    return deps.payments.challengeFor(resource, res, topUpRequiredMessage(deps.methods.list(), amount));

  const bought = await deps.payments.buy(resource, payment, req, res);
  if (!bought) return;
  const { verified, settled } = bought;
  const atomic = priceAtomic(product.price);
  const paid: Omit<Meta, "endpoint" | "request_id"> = {
    cost_usdc: settled.meta?.costUsdc || product.price,
    payment_chain: settled.meta?.paymentChain ?? "",
    payment_token: settled.meta?.paymentToken ?? "",
  };
  try {
    if (!settled.settlementId) throw new Error("payment-verifier named no settlement id");
    const credit = await deps.quota.topUp({
      apiKey: apiKey ?? "",
      wallet: apiKey === undefined ? verified.payer : "",
      amount: Number(atomic),
      cause: settled.settlementId,
      scheme: verified.scheme,
      paymentNetwork: settled.meta?.paymentChain ?? "",
      transaction: settled.transaction,
    });
    res.locals.principal = credit.accountId;
    sendData(
      res,
      {
        credit: "credited",
        account_id: credit.accountId,
        credited_usdc: usdcOfAtomic(atomic),
        balance_usdc: usdcOfAtomic(credit.balance),
        account_created: credit.accountCreated,
      },
      paid,
    );
  } catch (err) {
    // The payer paid: the receipt goes out, and the settlement's event (it names this top-up and
    // its account) has quota-meter credit it under the same id, once.
    deps.logger.error(
      {
        err: err instanceof Error ? err.message : String(err),
        requestId: res.locals.requestId,
        settlementId: settled.settlementId,
        payer: verified.payer,
      },
      "a settled top-up was not credited now: answered 202, quota-meter credits it from the settlement stream",
    );
    sendData(
      res,
      {
        credit: "pending",
        account_id: account || null,
        credited_usdc: usdcOfAtomic(atomic),
        balance_usdc: null,
        account_created: false,
      },
      paid,
      202,
    );
  }
}
