// biome-ignore-all lint/suspicious/noExplicitAny: gRPC call objects are untyped at this boundary
// SettlementAdminService: the operator's view of the ledger. Every call checks the operator token.
import { checkOperator, grpc, type Logger, ServiceError, type UnaryHandler } from "@tollgate/platform";
import type { ListSettlementsRequest__Output } from "@tollgate/platform/generated/tollgate/settlement/v1/ListSettlementsRequest";
import type { ListSettlementsResponse } from "@tollgate/platform/generated/tollgate/settlement/v1/ListSettlementsResponse";
import type { ReconcileRequest__Output } from "@tollgate/platform/generated/tollgate/settlement/v1/ReconcileRequest";
import type { ReconcileResponse } from "@tollgate/platform/generated/tollgate/settlement/v1/ReconcileResponse";
import type { Settlement } from "@tollgate/platform/generated/tollgate/settlement/v1/Settlement";
import type { SettlementChain } from "./adapters/chain.ts";
import type { LedgerStore } from "./adapters/ledger-store.ts";
import type { ChainConfig } from "./config.ts";
import { decodeCursor, type LedgerEntry, type LedgerFilter, OUTCOMES, type Outcome } from "./core/ledger.ts";
import type { WorkerMetrics } from "./core/metrics.ts";
import { reconcile } from "./reconciler.ts";

export interface AdminDeps {
  ledger: LedgerStore;
  chain: { config: ChainConfig; reader: SettlementChain } | undefined;
  metrics: WorkerMetrics;
  logger: Logger;
  operatorToken: string | undefined;
}

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1_000;
const MAX_RANGE = 100_000n;

const invalid = (message: string): never => {
  throw new ServiceError(grpc.status.INVALID_ARGUMENT, "invalid_argument", message);
};

export function toSettlement(e: LedgerEntry): Settlement {
  return {
    id: e.id,
    outcome: e.outcome,
    requestId: e.requestId ?? "",
    endpoint: e.endpoint ?? "",
    network: e.network ?? "",
    scheme: e.scheme,
    payer: e.payer,
    amount: e.amount,
    asset: e.asset,
    paymentNetwork: e.paymentNetwork,
    transaction: e.transaction ?? "",
    channel: e.channel ?? "",
    cumulative: e.cumulative ?? "",
    reason: e.reason ?? "",
    time: e.time,
  };
}

function filterOf(req: ListSettlementsRequest__Output): LedgerFilter {
  const filter: LedgerFilter = {};
  const payer = req.payer.trim();
  if (payer) {
    if (!/^0x[0-9a-fA-F]{40}$/.test(payer) && !/^[\w:.-]{1,200}$/.test(payer))
      invalid("payer: expected an address");
    filter.payer = payer;
  }
  if (req.day) {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(req.day) || Number.isNaN(Date.parse(`${req.day}T00:00:00Z`)))
      invalid("day: expected a UTC day, YYYY-MM-DD");
    filter.day = req.day;
  }
  if (req.channel) {
    if (req.channel.length > 200) invalid("channel: at most 200 characters");
    filter.channel = req.channel;
  }
  if (req.outcome) {
    if (!(OUTCOMES as readonly string[]).includes(req.outcome))
      invalid(`outcome: expected one of ${OUTCOMES.join(", ")}`);
    filter.outcome = req.outcome as Outcome;
  }
  if (!filter.payer && !filter.day && !filter.channel) invalid("give at least one of payer, day, channel");
  return filter;
}

export function createAdminHandlers(deps: AdminDeps): Record<string, UnaryHandler<any, any>> {
  const { ledger, logger } = deps;

  async function guarded<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof ServiceError) throw err;
      logger.warn({ err }, `${what} failed`);
      throw new ServiceError(grpc.status.UNAVAILABLE, "service_unavailable", `${what} unavailable; retry`);
    }
  }

  const handlers = {
    async ListSettlements(req: ListSettlementsRequest__Output): Promise<ListSettlementsResponse> {
      const filter = filterOf(req);
      if (req.limit > MAX_LIMIT) invalid(`limit: at most ${MAX_LIMIT}`);
      const cursor = req.cursor ? decodeCursor(req.cursor) : undefined;
      if (req.cursor && !cursor) invalid("cursor: not a cursor this API returned");
      const page = await guarded("the ledger (PostgreSQL)", () =>
        ledger.list(filter, req.limit || DEFAULT_LIMIT, cursor),
      );
      return {
        settlements: page.entries.map(toSettlement),
        nextCursor: page.nextCursor,
        totals: page.totals.map((t) => ({ ...t, count: Number(t.count) })),
      };
    },

    async Reconcile(req: ReconcileRequest__Output): Promise<ReconcileResponse> {
      const chain = deps.chain;
      if (!chain) {
        throw new ServiceError(
          grpc.status.FAILED_PRECONDITION,
          "not_configured",
          "no settlement chain is configured (X402_SETTLEMENT_RPC_URL, X402_NETWORK, X402_ASSET, X402_PAY_TO)",
        );
      }
      const from = BigInt(req.fromBlock);
      const to = BigInt(req.toBlock);
      if (to < from) invalid("to_block: must not be before from_block");
      if (to - from >= MAX_RANGE) invalid(`to_block: at most ${MAX_RANGE} blocks from from_block`);
      const head = await guarded("the settlement chain", () => chain.reader.head());
      if (to > head) invalid(`to_block: past the chain's head (${head})`);
      const result = await guarded("reconciliation", () =>
        reconcile(chain.reader, ledger, chain.config, from, to),
      );
      for (const d of result.differences) deps.metrics.reconcileDifferences.inc({ kind: d.kind });
      return {
        paymentNetwork: chain.config.network,
        asset: chain.config.asset,
        payTo: chain.config.payTo,
        fromBlock: Number(from),
        toBlock: Number(to),
        transfers: result.transfers,
        transferTotal: result.transferTotal.toString(),
        ledgerEntries: result.ledgerEntries,
        ledgerTotal: result.ledgerTotal.toString(),
        differences: result.differences.map((d) => ({
          kind: d.kind,
          transaction: d.transaction,
          block: Number(d.block),
          chainAmount: d.chainAmount.toString(),
          ledgerAmount: d.ledgerAmount.toString(),
          ledgerIds: d.ledgerIds,
          payer: d.payer,
        })),
      };
    },
  };

  return Object.fromEntries(
    Object.entries(handlers).map(([method, handler]) => [
      method,
      async (req: any, call: grpc.ServerUnaryCall<any, any>) => {
        checkOperator(call.metadata, deps.operatorToken);
        return (handler as (r: any) => Promise<unknown>)(req);
      },
    ]),
  );
}
