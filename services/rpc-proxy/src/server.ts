import { type Endpoint, endpointById, RPC_ENDPOINT } from "@tollgate/catalog";
import {
  contracts,
  createLogger,
  createRegistry,
  grpc,
  type Logger,
  once,
  type Registry,
  redactForClient,
  ServiceError,
  serveMetrics,
  startGrpcServer,
} from "@tollgate/platform";
import type { ExecuteRequest__Output } from "@tollgate/platform/generated/tollgate/rpc/v1/ExecuteRequest";
import type { ExecuteResponse } from "@tollgate/platform/generated/tollgate/rpc/v1/ExecuteResponse";
import type { ListNetworksResponse } from "@tollgate/platform/generated/tollgate/rpc/v1/ListNetworksResponse";
import type { RpcProxyConfig } from "./config.ts";
import { invalidParameter } from "./errors.ts";
import { createMetrics } from "./metrics.ts";
import { OPERATIONS, RESULT_CHECKS } from "./operations/index.ts";
import { relay } from "./operations/json-rpc.ts";
import { HeadTracker } from "./upstream/head-tracker.ts";
import { NetworkPool } from "./upstream/pool.ts";

const SERVICE_NAME = "tollgate.rpc.v1.RpcProxyService";

export interface RpcProxyHandle {
  grpcPort: number;
  metricsPort: number;
  registry: Registry;
  /** Health checks go NOT_SERVING; calls are still served. */
  drain(): void;
  stop(): Promise<void>;
}

type ParamSchema = NonNullable<Endpoint["params"]["query"]>;

/** What parseParams needs of an endpoint, worked out once: its schemas, their keys, every known key. */
interface ParamPlan {
  parts: { schema: ParamSchema; keys: string[] }[];
  known: ReadonlySet<string>;
}

const plans = new Map<string, ParamPlan>();

function planOf(endpoint: Endpoint): ParamPlan {
  let plan = plans.get(endpoint.id);
  if (plan === undefined) {
    const parts = [endpoint.params.path, endpoint.params.query, endpoint.params.body]
      .filter((schema): schema is ParamSchema => schema !== undefined)
      .map((schema) => ({ schema, keys: Object.keys(schema.shape) }));
    plan = { parts, known: new Set(parts.flatMap((p) => p.keys)) };
    plans.set(endpoint.id, plan);
  }
  return plan;
}

/**
 * Re-checks the merged parameters against the endpoint's own schemas (the gateway
 * validated them already; this keeps the service safe on its own). Numbers the gateway
 * normalised from query strings (`max`) go back to strings for the query schema.
 */
function parseParams(endpoint: Endpoint, json: string): Record<string, unknown> {
  let raw: unknown;
  try {
    raw = JSON.parse(json || "{}");
  } catch {
    throw invalidParameter("params_json", "not valid JSON");
  }
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    throw invalidParameter("params_json", "expected a JSON object");
  }
  const input = raw as Record<string, unknown>;
  const plan = planOf(endpoint);
  let params: Record<string, unknown> | undefined;
  for (const { schema, keys } of plan.parts) {
    const part: Record<string, unknown> = {};
    for (const key of keys) {
      const value = input[key];
      if (value !== undefined && value !== null)
        part[key] = typeof value === "number" ? String(value) : value;
    }
    const result = schema.safeParse(part);
    if (!result.success) {
      const issue = result.error.issues[0];
      throw invalidParameter(String(issue?.path[0] ?? "params"), issue?.message ?? "invalid value");
    }
    params = params === undefined ? result.data : Object.assign(params, result.data);
  }
  for (const key in input) {
    if (!plan.known.has(key)) {
      throw new ServiceError(grpc.status.INVALID_ARGUMENT, "unknown_parameter", `${key}: unknown parameter`, {
        parameter: key,
      });
    }
  }
  return params ?? {};
}

/** The relay's params: a JSON object, as the gateway sends it (its calls are checked by relay()). */
function relayParams(json: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw invalidParameter("params", "expected a JSON object");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw invalidParameter("params", "expected a JSON object");
  return value as Record<string, unknown>;
}

/**
 * A failure as the gateway passes it to the client, redacted as log lines are: a node's error text
 * (an upstream_error's message, a revert's reason) can quote the node's URL and the key in its path.
 */
function forClient(err: ServiceError): ServiceError {
  const message = redactForClient(err.message);
  const detail = err.detail && JSON.stringify(err.detail);
  const cleanDetail = detail && redactForClient(detail);
  if (message === err.message && cleanDetail === detail) return err;
  return new ServiceError(err.grpcCode, err.code, message, cleanDetail ? JSON.parse(cleanDetail) : undefined);
}

export async function startRpcProxy(
  config: RpcProxyConfig,
  deps: { logger?: Logger; registry?: Registry } = {},
): Promise<RpcProxyHandle> {
  const logger = deps.logger ?? createLogger("rpc-proxy");
  const registry = deps.registry ?? createRegistry("rpc-proxy");
  const metrics = createMetrics(registry);
  const pools = new Map(
    config.networks.map((n) => [n.name, new NetworkPool(n, config.upstream, metrics, logger)]),
  );
  const tracker = new HeadTracker([...pools.values()], config.upstream, metrics, logger);
  await tracker.start();

  async function execute(
    request: ExecuteRequest__Output,
    call: grpc.ServerUnaryCall<ExecuteRequest__Output, ExecuteResponse>,
  ): Promise<ExecuteResponse> {
    const endpoint = endpointById(request.operation);
    if (!endpoint)
      throw invalidParameter("operation", `unknown operation "${request.operation.slice(0, 64)}"`);
    const relaying = endpoint.id === RPC_ENDPOINT.id;
    // The relay's params are the checked calls, not the endpoint's query: read as sent.
    const params = relaying ? relayParams(request.paramsJson) : parseParams(endpoint, request.paramsJson);
    const network = request.network || String(params.network ?? "");
    const pool = pools.get(network);
    if (!endpoint.networks.includes(network) || !pool) {
      throw invalidParameter("network", `expected one of ${endpoint.networks.join(", ")}`);
    }
    const deadline = Number(call.getDeadline());
    const ctx = {
      deadline: Number.isFinite(deadline) ? deadline : Date.now() + config.upstream.requestTimeoutMs,
      roundTrips: 0,
    };
    const series = callSeries(endpoint.id)(network);
    try {
      const context = { network, pool, call: ctx, config };
      const data = relaying
        ? await relay(params, context)
        : await OPERATIONS[endpoint.id as keyof typeof OPERATIONS](params, context);
      if (!relaying && !RESULT_CHECKS[endpoint.id as keyof typeof RESULT_CHECKS]?.(data)) {
        const checked = endpoint.data.safeParse(data);
        if (!checked.success) {
          logger.error(
            {
              requestId: request.requestId,
              operation: endpoint.id,
              issues: checked.error.issues.slice(0, 3),
            },
            "operation result does not match the catalog schema",
          );
          throw new ServiceError(grpc.status.UNKNOWN, "upstream_error", "the node sent an unexpected answer");
        }
      }
      const dataJson = JSON.stringify(data);
      if (dataJson.length > config.maxResultBytes) {
        throw new ServiceError(
          grpc.status.FAILED_PRECONDITION,
          "result_too_large",
          `the result exceeds ${config.maxResultBytes} bytes; narrow the block range or add filters`,
        );
      }
      series.ok.inc();
      return { dataJson, upstreamRoundTrips: ctx.roundTrips };
    } catch (err) {
      const code = err instanceof ServiceError ? err.code : "internal_error";
      metrics.operationsOf({ operation: endpoint.id, network, code }).inc();
      if (code.startsWith("upstream_")) {
        logger.warn(
          { requestId: request.requestId, operation: endpoint.id, network, code },
          "operation failed",
        );
      }
      throw err instanceof ServiceError ? forClient(err) : err;
    } finally {
      series.roundTrips.inc(ctx.roundTrips);
    }
  }

  /** The series a call of (operation, network) touches on success, found once. */
  const callSeries = once((operation) =>
    once((network) => ({
      ok: metrics.operationsOf({ operation, network, code: "ok" }),
      roundTrips: metrics.roundTripsOf({ operation, network }),
    })),
  );

  async function listNetworks(): Promise<ListNetworksResponse> {
    return {
      networks: [...pools.values()].map((pool) => ({
        name: pool.name,
        chainId: pool.chainId,
        upstreams: pool.upstreams.map((u) => ({
          label: u.label,
          healthy: pool.healthy(u),
          breaker: u.breaker.state,
          headBlock: Number(u.head ?? 0n),
          lagBlocks: Number(pool.lag(u)),
        })),
        quorum: pool.quorum ?? null,
      })),
    };
  }

  const grpcServer = await startGrpcServer({
    host: config.host,
    port: config.grpcPort,
    services: [
      {
        name: SERVICE_NAME,
        definition: contracts.rpcProxy().RpcProxyService.service,
        handlers: { Execute: execute, ListNetworks: listNetworks },
        callers: { gateway: ["Execute", "ListNetworks"] },
        // The gateway's Execute calls travel as messages on its open streams.
        exchange: "Exchange",
      },
    ],
    meshCallers: config.meshCallers,
    registry,
    logger,
  });
  const metricsServer = await serveMetrics(registry, config.metricsPort, config.host);

  return {
    grpcPort: grpcServer.port,
    metricsPort: metricsServer.port,
    drain: () => grpcServer.drain(),
    registry,
    async stop() {
      tracker.stop();
      await grpcServer.shutdown();
      await metricsServer.close();
      await Promise.all([...pools.values()].map((p) => p.close()));
    },
  };
}
