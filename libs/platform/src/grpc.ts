// biome-ignore-all lint/suspicious/noExplicitAny: generic glue over generated gRPC client methods
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { HealthImplementation, service as healthService } from "grpc-health-check";
import type { ProtoGrpcType as PaymentProto } from "./generated/payment_verifier.ts";
import type { ProtoGrpcType as QuotaProto } from "./generated/quota_meter.ts";
import type { ProtoGrpcType as RpcProxyProto } from "./generated/rpc_proxy.ts";
import type { ProtoGrpcType as SettlementProto } from "./generated/settlement_worker.ts";
import {
  connectionGraceMs,
  ExchangeClient,
  ExchangeStreams,
  exchangeHandlers,
  exchangeMember,
  serveExchange,
} from "./grpc-exchange.ts";
import { ERROR_CODE_KEY, ERROR_DETAIL_KEY } from "./grpc-metadata.ts";
import type { Logger } from "./logger.ts";
import {
  type CallerPolicy,
  MESH_TOKEN_KEY,
  type MeshCallers,
  meshIdentifier,
  type Refusal,
} from "./mesh-auth.ts";
import { prom, type Registry, seriesOf } from "./metrics.ts";

export { connectionGraceMs, EXCHANGE_CALL_MAX_MS } from "./grpc-exchange.ts";
export { grpc };

const healthMethod = healthService.Check as grpc.MethodDefinition<
  { service: string },
  { status: string | number }
>;
const healthRequestType = { serialize: healthMethod.requestSerialize };
const healthResponseType = { deserialize: healthMethod.responseDeserialize };

const PROTO_ROOT = fileURLToPath(new URL("../../../proto", import.meta.url));

// Must agree with the flags in gen.ts (`pnpm gen`), which generated the types.
const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
};

function load<T>(file: string): T {
  return grpc.loadPackageDefinition(protoLoader.loadSync(file, LOADER_OPTIONS)) as unknown as T;
}

/** The internal contracts, loaded from proto/ (the only place they are written). */
export const contracts = {
  rpcProxy: () => load<RpcProxyProto>("tollgate/rpc/v1/rpc_proxy.proto").tollgate.rpc.v1,
  quotaMeter: () => load<QuotaProto>("tollgate/quota/v1/quota_meter.proto").tollgate.quota.v1,
  paymentVerifier: () => load<PaymentProto>("tollgate/payment/v1/payment_verifier.proto").tollgate.payment.v1,
  settlementWorker: () =>
    load<SettlementProto>("tollgate/settlement/v1/settlement_worker.proto").tollgate.settlement.v1,
};

export { ERROR_CODE_KEY, ERROR_DETAIL_KEY };

/**
 * An error a handler throws on purpose: a gRPC status plus the public catalog error
 * code the gateway turns into the HTTP status and envelope.
 */
export class ServiceError extends Error {
  readonly grpcCode: grpc.status;
  readonly code: string;
  readonly detail: Record<string, unknown> | undefined;
  constructor(grpcCode: grpc.status, code: string, message: string, detail?: Record<string, unknown>) {
    super(message);
    this.grpcCode = grpcCode;
    this.code = code;
    this.detail = detail;
  }
}

function toStatus(err: unknown, logger: Logger, method: string): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  if (err instanceof ServiceError) {
    metadata.set(ERROR_CODE_KEY, err.code);
    if (err.detail) metadata.set(ERROR_DETAIL_KEY, JSON.stringify(err.detail));
    return { code: err.grpcCode, details: err.message, metadata };
  }
  logger.error({ err, method }, "unhandled error in gRPC handler");
  metadata.set(ERROR_CODE_KEY, "internal_error");
  return { code: grpc.status.INTERNAL, details: "internal error", metadata };
}

/**
 * The service's definition with its Exchange answers encoded one by one: grpc-js ends the whole
 * stream INTERNAL when a message cannot be encoded, failing every call in flight on it; here only
 * the call whose answer it was fails (INTERNAL, as its unary call would), and the stream serves on.
 */
function encodingEachAnswer(
  definition: grpc.ServiceDefinition,
  exchange: string,
  logger: Logger,
): grpc.ServiceDefinition {
  const method = definition[exchange] as grpc.MethodDefinition<unknown, { id: number }>;
  const encode = method.responseSerialize;
  const responseSerialize = (answer: { id: number }): Buffer => {
    try {
      return encode(answer);
    } catch (err) {
      logger.error(
        { err, answer: Object.keys(answer) },
        "an Exchange answer could not be encoded: its call fails",
      );
      return encode({
        id: answer.id,
        status: {
          code: grpc.status.INTERNAL,
          message: "internal error",
          errorCode: "internal_error",
          errorDetail: "",
        },
      } as { id: number });
    }
  };
  return { ...definition, [exchange]: { ...method, responseSerialize } };
}

/** A unary handler written as an async function of the request. */
export type UnaryHandler<Req, Res> = (request: Req, call: grpc.ServerUnaryCall<Req, Res>) => Promise<Res>;

export interface ServiceBinding {
  /** Fully qualified name, used for health checking, e.g. "tollgate.rpc.v1.RpcProxyService". */
  name: string;
  definition: grpc.ServiceDefinition;
  handlers: Record<string, UnaryHandler<any, any>>;
  /**
   * Which mesh callers may call which methods (checked before any handler runs), or `null`
   * for a service whose handlers check a credential of their own on every method (the
   * admin API's operator token).
   */
  callers: CallerPolicy | null;
  /**
   * The service's bidirectional method that carries its unary methods as messages (grpc-exchange.ts),
   * e.g. "Exchange"; the mesh policy applies to each message as to the unary call.
   */
  exchange?: string;
}

export interface GrpcServerHandle {
  server: grpc.Server;
  port: number;
  health: HealthImplementation;
  /** Health checks answer NOT_SERVING from now on; calls are still served. */
  drain(): void;
  /** NOT_SERVING, refuse new calls, wait for in-flight ones (20 s at most), close. */
  shutdown(): Promise<void>;
}

const REFUSED: Record<Refusal, { code: grpc.status; name: string; message: string }> = {
  missing_token: {
    code: grpc.status.UNAUTHENTICATED,
    name: "mesh_unauthenticated",
    message: "a mesh token is required",
  },
  unknown_token: {
    code: grpc.status.UNAUTHENTICATED,
    name: "mesh_unauthenticated",
    message: "the mesh token is not accepted",
  },
  not_allowed: {
    code: grpc.status.PERMISSION_DENIED,
    name: "mesh_permission_denied",
    message: "this caller may not call this method",
  },
};

/** The methods each caller may call, checked against the handlers so a typo cannot open or close a door silently. */
function allowedCallers(service: ServiceBinding, policy: CallerPolicy): Map<string, Set<string>> {
  const allowed = new Map<string, Set<string>>(Object.keys(service.handlers).map((m) => [m, new Set()]));
  for (const [caller, methods] of Object.entries(policy)) {
    for (const method of methods) {
      const set = allowed.get(method);
      if (!set) throw new Error(`${service.name}: the caller policy names an unknown method ${method}`);
      set.add(caller);
    }
  }
  return allowed;
}

/**
 * Starts a gRPC server with standard health checking (grpc.health.v1, what
 * Kubernetes gRPC probes call, open to all), per-method latency metrics, and the mesh
 * check: a call to a service with a caller policy runs its handler only when it carries
 * the token of a caller the policy allows for that method; otherwise UNAUTHENTICATED /
 * PERMISSION_DENIED, counted in `grpc_server_refused_total`.
 */
export async function startGrpcServer(opts: {
  host: string;
  port: number;
  services: ServiceBinding[];
  /** The callers this service accepts and the digests of their tokens (readMeshCallers). */
  meshCallers: MeshCallers;
  registry: Registry;
  logger: Logger;
  /**
   * Connections end at this age (5 min: callers reconnect and re-resolve, so pods added by a
   * scale-up get traffic) after a grace that outlasts every call on them (connectionGraceMs).
   */
  connections?: { maxAgeMs: number; graceMs: number };
}): Promise<GrpcServerHandle> {
  const handled = new prom.Histogram({
    name: "grpc_server_handling_seconds",
    help: "Latency of gRPC calls served, by method and status code",
    labelNames: ["grpc_service", "grpc_method", "grpc_code"],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [opts.registry],
  });
  const handledSeries = seriesOf(handled, ["grpc_service", "grpc_method", "grpc_code"] as const);
  const refused = new prom.Counter({
    name: "grpc_server_refused_total",
    help: "gRPC calls refused before their handler ran: no mesh token, an unknown one, or a caller not allowed the method",
    labelNames: ["grpc_service", "grpc_method", "reason"],
    registers: [opts.registry],
  });
  const identify = meshIdentifier(opts.meshCallers);
  /** The token a call presents and the caller it names (undefined: none, or not one we accept). */
  const callerOf = (metadata: grpc.Metadata) => {
    const token = metadata.get(MESH_TOKEN_KEY)[0];
    return { token, caller: typeof token === "string" && token !== "" ? identify(token) : undefined };
  };
  // One line per minute at most: an attacker must not be able to flood the log.
  let lastRefusalLog = 0;
  const refuse = (service: string, method: string, reason: Refusal, caller: string | undefined) => {
    refused.inc({ grpc_service: service, grpc_method: method, reason });
    const now = Date.now();
    if (now - lastRefusalLog >= 60_000) {
      lastRefusalLog = now;
      opts.logger.warn(
        { grpc_service: service, grpc_method: method, reason, caller },
        "refused a gRPC call without a valid mesh token for it (counted in grpc_server_refused_total)",
      );
    }
    const r = REFUSED[reason];
    const metadata = new grpc.Metadata();
    metadata.set(ERROR_CODE_KEY, r.name);
    return { code: r.code, details: r.message, metadata };
  };
  const connections = opts.connections ?? { maxAgeMs: 5 * 60_000, graceMs: connectionGraceMs() };
  const server = new grpc.Server({
    "grpc.max_receive_message_length": 4 * 1024 * 1024,
    // Clients reconnect (and re-resolve DNS) every few minutes, so pods added by a
    // scale-up receive traffic instead of every caller staying pinned to the old ones.
    "grpc.max_connection_age_ms": connections.maxAgeMs,
    // Long enough for every call on the connection's Exchange streams to end (at 30 s, a Settle
    // sent on a stream opened just before the notice was cut: a paid call answered 503).
    "grpc.max_connection_age_grace_ms": connections.graceMs,
  });
  const statusMap: Record<string, "SERVING" | "NOT_SERVING"> = { "": "SERVING" };
  const exchanges = new ExchangeStreams();
  for (const service of opts.services) {
    statusMap[service.name] = "SERVING";
    const allowed = service.callers ? allowedCallers(service, service.callers) : undefined;
    const impl: grpc.UntypedServiceImplementation = {};
    for (const [method, handler] of Object.entries(service.handlers)) {
      const callers = allowed?.get(method);
      // Start at 0, so a first refusal is an increase an alert sees.
      if (allowed) {
        for (const reason of Object.keys(REFUSED)) {
          refused.inc({ grpc_service: service.name, grpc_method: method, reason }, 0);
        }
      }
      const timer = (started: number) => (labels: { grpc_code: string }) =>
        handledSeries({
          grpc_service: service.name,
          grpc_method: method,
          grpc_code: labels.grpc_code,
        }).observe((performance.now() - started) / 1000);
      impl[method] = (
        call: grpc.ServerUnaryCall<unknown, unknown>,
        callback: grpc.sendUnaryData<unknown>,
      ) => {
        const end = timer(performance.now());
        if (callers) {
          const { token, caller } = callerOf(call.metadata);
          if (!caller || !callers.has(caller)) {
            const reason: Refusal = !token ? "missing_token" : !caller ? "unknown_token" : "not_allowed";
            const status = refuse(service.name, method, reason, caller);
            end({ grpc_code: grpc.status[status.code] });
            callback(status);
            return;
          }
        }
        handler(call.request, call).then(
          (response) => {
            end({ grpc_code: "OK" });
            callback(null, response);
          },
          (err: unknown) => {
            const status = toStatus(err, opts.logger, method);
            end({ grpc_code: grpc.status[status.code ?? grpc.status.UNKNOWN] });
            callback(status);
          },
        );
      };
    }
    const exchange = service.exchange;
    if (exchange) {
      for (const reason of Object.keys(REFUSED)) {
        refused.inc({ grpc_service: service.name, grpc_method: exchange, reason }, 0);
      }
      const observe = (method: string, code: string, seconds: number) =>
        handledSeries({ grpc_service: service.name, grpc_method: method, grpc_code: code }).observe(seconds);
      // On a stream a handler's call is a stand-in holding the deadline and the metadata, all that
      // the handlers of a service with an Exchange read from it.
      const handlers = exchangeHandlers(service.handlers as Parameters<typeof exchangeHandlers>[0]);
      impl[exchange] = (call: grpc.ServerDuplexStream<any, any>) => {
        // The stream's token is checked once, at its start; the policy for each method per message.
        let caller: string | undefined;
        if (allowed) {
          const presented = callerOf(call.metadata);
          caller = presented.caller;
          const token = presented.token;
          if (!caller) {
            call.emit(
              "error",
              refuse(service.name, exchange, token ? "unknown_token" : "missing_token", caller),
            );
            return;
          }
        }
        serveExchange(
          call,
          {
            handlers,
            allowed: (method) =>
              !allowed || (caller !== undefined && allowed.get(method)?.has(caller) === true),
            refuse: (method) => refuse(service.name, method, "not_allowed", caller),
            statusOf: (err, method) => {
              const status = toStatus(err, opts.logger, method);
              return {
                code: status.code ?? grpc.status.UNKNOWN,
                details: status.details ?? "",
                metadata: status.metadata ?? new grpc.Metadata(),
              };
            },
            observe,
          },
          exchanges,
        );
      };
    }
    server.addService(
      exchange ? encodingEachAnswer(service.definition, exchange, opts.logger) : service.definition,
      impl,
    );
  }
  const health = new HealthImplementation(statusMap);
  health.addToServer(server);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${opts.host}:${opts.port}`, grpc.ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(err) : resolve(bound),
    );
  });
  const drain = () => {
    for (const name of Object.keys(statusMap)) health.setStatus(name, "NOT_SERVING");
  };
  return {
    server,
    port,
    health,
    drain,
    shutdown: () =>
      new Promise<void>((resolve) => {
        drain();
        // Open Exchange streams end once their calls are answered (tryShutdown waits for them).
        exchanges.drain();
        // In-flight calls finish (a settlement may wait for its receipt); the process's own drain
        // deadline (SHUTDOWN_TIMEOUT_MS, 25 s) is longer.
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 20_000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}

/** What a failed call looks like to the caller, whichever side failed. */
export interface CallFailure {
  grpcCode: grpc.status;
  /** Catalog error code from the server, when it sent one. */
  code: string | undefined;
  message: string;
  detail: Record<string, unknown> | undefined;
}

export function readCallFailure(err: unknown): CallFailure {
  const e = err as Partial<grpc.ServiceError>;
  const code = e.metadata?.get(ERROR_CODE_KEY)[0];
  const detailRaw = e.metadata?.get(ERROR_DETAIL_KEY)[0];
  let detail: Record<string, unknown> | undefined;
  if (typeof detailRaw === "string") {
    try {
      detail = JSON.parse(detailRaw);
    } catch {
      detail = undefined;
    }
  }
  return {
    grpcCode: e.code ?? grpc.status.UNKNOWN,
    code: typeof code === "string" ? code : undefined,
    message: e.details ?? e.message ?? "call failed",
    detail,
  };
}

export class CallError extends Error {
  readonly failure: CallFailure;
  constructor(failure: CallFailure) {
    super(failure.message);
    this.failure = failure;
  }
}

type Callback<T> = (err: grpc.ServiceError | null, value?: T) => void;

type UnaryMethod = (
  request: any,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  cb: Callback<any>,
) => unknown;
type MethodOf<C> = { [K in keyof C]: C[K] extends UnaryMethod ? K : never }[keyof C];
type RequestOf<F> = F extends (request: infer R, ...rest: infer _) => unknown ? R : never;
// Generated clients overload each method; inference sees the last, `(request, callback)`.
type ResponseOf<F> = F extends (request: any, cb: (err: any, value?: infer T) => void) => unknown ? T : never;

/** What every client of one mesh caller shares: its metrics registry and its mesh token. */
export interface MeshClientOptions {
  registry?: Registry;
  /** The caller's mesh token, sent on every call; undefined only for the operator's admin client. */
  token: string | undefined;
}

/**
 * A typed gRPC client for one service at one address, with a deadline and the caller's
 * mesh token on every call, and client-side latency metrics. Each caller wraps this in a
 * small adapter that speaks its own domain (see services/gateway/src/clients/).
 */
export function createClient<C extends grpc.Client>(
  Ctor: new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ClientOptions) => C,
  address: string,
  opts: MeshClientOptions & {
    service: string;
    defaultDeadlineMs: number;
    /**
     * The service's Exchange method: the unary methods it carries go over its streams
     * (grpc-exchange.ts); `streams` open at once (4), how long each takes new calls (30 s), and
     * the longest deadline a call on one may have (60 s; longer ones go unary).
     */
    exchange?: { method: string; streams?: number; rotateMs?: number; callMaxMs?: number };
  },
) {
  const client = new Ctor(address, grpc.credentials.createInsecure(), {
    "grpc.keepalive_time_ms": 30_000,
    "grpc.enable_retries": 1,
    // A restarted peer is reached again within seconds (grpc-js backs off to 120 s by default,
    // and the caller answers 503 until it reconnects).
    "grpc.initial_reconnect_backoff_ms": 250,
    "grpc.max_reconnect_backoff_ms": 2_000,
    // With a `dns:///` target on a headless Service, spread calls over every pod.
    "grpc.service_config": JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
  });
  const histogram = opts.registry
    ? ((opts.registry.getSingleMetric("grpc_client_handling_seconds") as prom.Histogram | undefined) ??
      new prom.Histogram({
        name: "grpc_client_handling_seconds",
        help: "Latency of gRPC calls made, by target service, method and status code",
        labelNames: ["grpc_service", "grpc_method", "grpc_code"],
        buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
        registers: [opts.registry],
      }))
    : undefined;

  // Per method, where it goes and how its messages are encoded: read once from the service.
  const service = (Ctor as unknown as { service: grpc.ServiceDefinition }).service;
  const channel = client.getChannel();
  const latency = histogram
    ? seriesOf(histogram, ["grpc_service", "grpc_method", "grpc_code"] as const)
    : undefined;
  const observe = (method: string, code: string, seconds: number) =>
    latency?.({ grpc_service: opts.service, grpc_method: method, grpc_code: code }).observe(seconds);
  // The caller's token rides on one shared, never-modified metadata object (grpc-js copies it
  // before adding anything of its own).
  const shared = new grpc.Metadata();
  if (opts.token !== undefined) shared.set(MESH_TOKEN_KEY, opts.token);

  /** One unary call; fails with the call's status (code, details, trailing metadata). */
  const unary = (name: string, request: unknown, deadlineMs: number, metadata: grpc.Metadata) => {
    const def = service[name] as grpc.MethodDefinition<unknown, unknown>;
    return new Promise<unknown>((resolve, reject) => {
      let response: unknown;
      let received = false;
      const call = channel.createCall(def.path, Date.now() + deadlineMs, null, null, grpc.propagate.DEFAULTS);
      call.start(metadata, {
        onReceiveMetadata() {},
        onReceiveMessage(message: Buffer) {
          try {
            response = def.responseDeserialize(message);
            received = true;
          } catch (err) {
            call.cancelWithStatus(
              grpc.status.INTERNAL,
              `response could not be decoded: ${(err as Error).message}`,
            );
          }
        },
        onReceiveStatus(status: grpc.StatusObject) {
          if (status.code === grpc.status.OK && received) resolve(response);
          else if (status.code === grpc.status.OK)
            reject({ ...status, code: grpc.status.UNIMPLEMENTED, details: "No message received" });
          else reject(status);
        },
      });
      call.sendMessageWithContext({}, def.requestSerialize(request));
      call.halfClose();
      call.startRead();
    });
  };

  // The unary methods the Exchange method's request envelope carries (its `call` oneof's members).
  let exchange: ExchangeClient | undefined;
  const carried = new Set<string>();
  if (opts.exchange) {
    const { method, ...tuning } = opts.exchange;
    const def = service[method] as grpc.MethodDefinition<unknown, unknown> & {
      requestType?: { type?: { field?: { name: string }[] } };
    };
    const members = new Set(def.requestType?.type?.field?.map((f) => f.name));
    for (const name of Object.keys(service))
      if (name !== method && members.has(exchangeMember(name))) carried.add(name);
    exchange = new ExchangeClient({
      open: () =>
        client.makeBidiStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, shared),
      unary: (name, request, deadlineMs) => unary(name, request, deadlineMs, shared),
      ...tuning,
    });
  }

  return {
    raw: client,
    /**
     * One unary call straight on the channel (the channel still resolves, balances and retries):
     * what grpc-js's makeUnaryRequest adds on top, an EventEmitter per call and an Error built
     * for its caller's stack, is measurable per call and not needed here.
     */
    call<M extends MethodOf<C>>(
      method: M,
      request: RequestOf<C[M]>,
      callOpts: { deadlineMs?: number; metadata?: grpc.Metadata } = {},
    ): Promise<ResponseOf<C[M]>> {
      const name = String(method);
      const deadlineMs = callOpts.deadlineMs ?? opts.defaultDeadlineMs;
      const started = performance.now();
      let answer: Promise<unknown>;
      if (exchange && carried.has(name) && !callOpts.metadata) {
        answer = exchange.call(name, request, deadlineMs);
      } else {
        let metadata = shared;
        if (callOpts.metadata) {
          metadata = callOpts.metadata;
          if (opts.token !== undefined) metadata.set(MESH_TOKEN_KEY, opts.token);
        }
        answer = unary(name, request, deadlineMs, metadata);
      }
      return answer.then(
        (response) => {
          observe(name, "OK", (performance.now() - started) / 1000);
          return response as ResponseOf<C[M]>;
        },
        (status: grpc.StatusObject) => {
          observe(name, grpc.status[status.code] ?? "UNKNOWN", (performance.now() - started) / 1000);
          throw new CallError(readCallFailure(status));
        },
      );
    },
    close: () => {
      exchange?.close();
      client.close();
    },
  };
}

export type TypedClient<C extends grpc.Client> = ReturnType<typeof createClient<C>>;

/**
 * Asks a server's standard health service whether it is SERVING (what Kubernetes
 * gRPC probes ask). Resolves false on any failure or timeout.
 */
export function checkHealth(address: string, timeoutMs = 1_000, service = ""): Promise<boolean> {
  const Client = grpc.makeGenericClientConstructor(healthService, "Health");
  const client = new Client(address, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      (arg: { service: string }) => healthRequestType.serialize(arg),
      (buf: Buffer) => healthResponseType.deserialize(buf) as { status: string | number },
      { service },
      new grpc.Metadata(),
      { deadline: new Date(Date.now() + timeoutMs) },
      (err: grpc.ServiceError | null, value?: { status: string | number }) => {
        client.close();
        resolve(!err && (value?.status === "SERVING" || value?.status === 1));
      },
    );
  });
}
