import {
  CHAIN_NETWORKS,
  DEFAULT_PLANS,
  ENDPOINTS,
  moreThanFree,
  NETWORKS,
  offeredSchemeNames,
  type Plans,
  planSource,
  priceAtomic,
  statedSource,
} from "@tollgate/catalog";
import type { Logger } from "@tollgate/platform";
import { type Request, type Response, Router } from "express";
import { readCredentials } from "../auth/credentials.ts";
import type { PaymentVerifierClient } from "../clients/payment-verifier.ts";
import type { QuotaMeterClient } from "../clients/quota-meter.ts";
import type { RpcProxyClient } from "../clients/rpc-proxy.ts";
import { creditsPricing } from "../docs/credits-paths.ts";
import { jsonRpcPricing } from "../docs/json-rpc-docs.ts";
import { buildLlmsTxt } from "../docs/llms.ts";
import { buildOpenApi } from "../docs/openapi.ts";
import { sendData, sendError, sendLimit } from "../envelope.ts";
import type { UnknownKeyLimiter } from "../leases.ts";
import { type AcceptedMethods, inactiveMessage } from "../payment-methods.ts";
import { discoveryList } from "./discovery.ts";
import { FREE_PATHS } from "./table.ts";

export interface FreeDeps {
  quota: QuotaMeterClient;
  /** Each network's quorum reads (rpc-proxy's configuration), listed in /api/pricing. */
  rpc: Pick<RpcProxyClient, "quorums">;
  /** The offers of each paid resource, for the x402 discovery list. */
  payments: Pick<PaymentVerifierClient, "challenge">;
  methods: AcceptedMethods;
  logger: Logger;
  publicBaseUrl: string | undefined;
  dashboardUrl: string | undefined;
  lifecycle: { draining: boolean };
  /** The unknown-key bucket per client address the chain routes share (see auth/api-key.ts). */
  unknownKeys: UnknownKeyLimiter | undefined;
  /** /rpc relays eth_sendRawTransaction: /api/pricing lists it. */
  rpcSendRawTransaction: boolean;
}

/** The unauthenticated endpoints of spec 4.16 (plus the key owner's usage). */
export function freeRouter(deps: FreeDeps): Router {
  const router = Router({ caseSensitive: true, strict: true });
  /** A GET route whose template is its own path (meta.endpoint, metrics labels). */
  const get = (path: string, handler: (req: Request, res: Response) => unknown) =>
    router.get(path, (req, res) => {
      res.locals.endpoint = path;
      return handler(req, res);
    });

  // The plans are quota-meter's (DescribePlans: its DAILY_LIMIT, MONTHLY_LIMIT and FREE_*), asked
  // when a document is read and at most once a minute; until it answers, the catalog's defaults.
  const plans = planSource(() => deps.quota.plans(), {
    ttlMs: 60_000,
    retryMs: 5_000,
    onError: (err) =>
      deps.logger.warn(
        { err: err instanceof Error ? err.message : String(err) },
        "plans unavailable from quota-meter; the documents keep the last known",
      ),
  });
  let planned: Plans = DEFAULT_PLANS;

  // Built from configuration, the accepted payment methods and the plans, again only when those
  // change: nothing a caller sends (the Host header) may shape or multiply the documents.
  let openApi = "";
  let llmsTxt = "";
  const build = () => {
    const methods = deps.methods.list();
    openApi = JSON.stringify(buildOpenApi(deps.publicBaseUrl, methods, deps.dashboardUrl, planned));
    llmsTxt = buildLlmsTxt(deps.publicBaseUrl, methods, deps.dashboardUrl, planned);
  };
  build();
  deps.methods.onChange(build);
  /** The plans as of now, the documents rebuilt first when they changed. */
  const currentPlans = async (): Promise<Plans> => {
    const now = await plans.get();
    if (now !== planned) {
      planned = now;
      build();
    }
    return now;
  };

  get(FREE_PATHS.health, (_req, res) => {
    // Unready while draining, so the load balancer stops routing here before the listener closes.
    if (deps.lifecycle.draining) res.status(503).json({ status: "draining" });
    else res.json({ status: "ok" });
  });
  for (const path of [FREE_PATHS.openapi, FREE_PATHS.openapiWellKnown]) {
    get(path, async (_req, res) => {
      await currentPlans();
      res.type("application/json").send(openApi);
    });
  }
  get(FREE_PATHS.llms, async (_req, res) => {
    await currentPlans();
    res.type("text/plain").send(llmsTxt);
  });

  const discovery = discoveryList(deps);
  get(FREE_PATHS.x402, async (_req, res) => {
    const json = await discovery.json();
    if (json === undefined) {
      sendError(
        res,
        "service_unavailable",
        "the x402 discovery list is unavailable right now: retry with backoff",
      );
      return;
    }
    // Offers change rarely (the list is rebuilt at most once a minute).
    res.setHeader("Cache-Control", "public, max-age=60");
    res.type("application/json").send(json);
  });

  const quorums = quorumSource(deps);
  get(FREE_PATHS.pricing, async (_req, res) => {
    const [{ standard, free }, quorumReads] = await Promise.all([currentPlans(), quorums.get()]);
    sendData(res, {
      currency: "USD",
      endpoints: ENDPOINTS.map((e) => ({
        method: e.method,
        path: e.path,
        price_usd: e.price,
        price_usdc_atomic: priceAtomic(e.price).toString(),
        networks: e.networks,
      })),
      payment_methods: deps.methods.list().map((m) => ({
        protocol: m.protocol,
        scheme: m.scheme,
        // The names the 402's offers (x402 `accepts[].scheme`) give it: x402-batch is offered as
        // `batch-settlement` too.
        ...(m.protocol === "x402" ? { offered_as: offeredSchemeNames(m.scheme) } : {}),
        network: m.network,
        asset: m.asset,
        symbol: m.symbol,
        decimals: m.decimals,
        pay_to: m.payTo,
        ...(m.method ? { method: m.method } : {}),
      })),
      api_key_plan: {
        header: "Authorization: Bearer <API key>",
        daily_quota: standard.dailyLimit,
        monthly_quota: standard.monthlyLimit,
        burst_per_second: standard.burstPerSecond,
        windows: "UTC day (00:00 UTC) and calendar month (00:00 UTC on the 1st), account-wide",
        get: "from the operator (raised per account on request)",
      },
      free_plan: {
        header: "Authorization: Bearer <API key>",
        daily_quota: free.dailyLimit,
        monthly_quota: free.monthlyLimit,
        burst_per_second: free.burstPerSecond,
        windows: "UTC day (00:00 UTC) and calendar month (00:00 UTC on the 1st), account-wide",
        get: `sign in with an Ethereum wallet (EIP-4361) at ${deps.dashboardUrl ?? "the operator's dashboard"}: a new account starts on this plan`,
        more: moreThanFree(deps.methods.text()),
      },
      credits: creditsPricing(deps.methods.list()),
      json_rpc: jsonRpcPricing(deps.rpcSendRawTransaction),
      quorum_reads: quorumReads,
    });
  });

  get(FREE_PATHS.networks, (_req, res) => {
    sendData(res, {
      default: "ethereum",
      networks: NETWORKS.map((n) => ({
        name: n.name,
        chain_id: n.chainIdHex,
        testnet: n.testnet,
        endpoints: ENDPOINTS.filter((e) => (e.networks as readonly string[]).includes(n.name)).map(
          (e) => e.path,
        ),
      })),
      chain_networks: CHAIN_NETWORKS,
    });
  });

  get(FREE_PATHS.usage, async (req, res) => {
    res.setHeader("Cache-Control", "no-store");
    const credentials = readCredentials(req);
    if (credentials.kind !== "api_key") {
      sendError(res, "invalid_api_key", "send Authorization: Bearer <API key> to read its account's usage");
      return;
    }
    res.locals.auth = "api_key";
    const daysRaw = typeof req.query.days === "string" ? req.query.days : "30";
    const days = /^[0-9]{1,3}$/.test(daysRaw) ? Number(daysRaw) : Number.NaN;
    if (!(days >= 1 && days <= 366)) {
      sendError(res, "invalid_parameter", "days: expected an integer from 1 to 366", { parameter: "days" });
      return;
    }
    // Each read costs its client a token of the unknown-key bucket, given back unless quota-meter
    // calls the key unknown: made-up keys cannot flood quota-meter through this path either.
    const client = req.ip ?? "";
    const limiter = deps.unknownKeys;
    if (limiter && !limiter.take(client)) {
      sendLimit(res, "rate_limited", deps.methods.text());
      return;
    }
    try {
      // One quota-meter call, one store round trip: key, status, the burst guard chain calls
      // share, and every day asked.
      const usage = await deps.quota.usage(credentials.apiKey, days);
      limiter?.giveBack(client);
      res.locals.principal = usage.accountId;
      sendData(res, {
        account_id: usage.accountId,
        days: usage.days.map((d) => ({ day: d.day, requests: d.requests, errors: d.errors })),
      });
    } catch (err) {
      const failure = (err as { failure?: { code?: string } }).failure;
      if (failure?.code !== "invalid_api_key") limiter?.giveBack(client);
      if (failure?.code === "invalid_api_key")
        sendError(res, "invalid_api_key", "the API key is unknown or revoked");
      else if (failure?.code === "subscription_inactive")
        sendError(res, "subscription_inactive", inactiveMessage(deps.methods.text()));
      else if (failure?.code === "rate_limited") sendLimit(res, "rate_limited", deps.methods.text());
      else sendError(res, "service_unavailable", "usage is unavailable, retry with backoff");
    }
  });
  return router;
}

type QuorumRead = { network: string; methods: string[]; agree: number; asked: number };

/**
 * The quorum reads of /api/pricing: rpc-proxy's configuration (CONSENSUS_<NETWORK>, ListNetworks),
 * asked when the document is read and at most once a minute (statedSource); none listed until
 * rpc-proxy first answers.
 */
function quorumSource(deps: Pick<FreeDeps, "rpc" | "logger">) {
  return statedSource(
    async (): Promise<QuorumRead[]> =>
      (await deps.rpc.quorums()).map((q) => ({
        network: q.network,
        methods: q.methods,
        agree: q.k,
        asked: q.n,
      })),
    {
      initial: [],
      same: (a, b) => JSON.stringify(a) === JSON.stringify(b),
      ttlMs: 60_000,
      retryMs: 5_000,
      onError: (err) =>
        deps.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          "quorum reads unavailable from rpc-proxy; /api/pricing keeps the last known",
        ),
    },
  );
}
