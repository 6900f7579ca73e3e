// biome-ignore-all lint/suspicious/noExplicitAny: generic glue over generated gRPC client methods
// The server side of the mesh: one gRPC server per service with standard health checking, latency
// metrics, the mesh caller policy checked before any handler, and the Exchange streams.
import * as grpc from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import { toStatus } from "./grpc-errors.ts";
import { connectionGraceMs, ExchangeStreams, exchangeHandlers, serveExchange } from "./grpc-exchange.ts";
import { ERROR_CODE_KEY } from "./grpc-metadata.ts";
import type { Logger } from "./logger.ts";
import {
  type CallerPolicy,
  MESH_TOKEN_KEY,
  type MeshCallers,
  meshIdentifier,
  type Refusal,
} from "./mesh-auth.ts";
import { once, prom, type Registry, seriesOf } from "./metrics.ts";

/**
 * The service's definition with its Exchange answers encoded one by one: grpc-js ends the whole
 * stream INTERNAL when a message cannot be encoded, failing every call in flight on it; here only
 * the call whose answer it was fails (INTERNAL, as its unary call would), and the stream serves on.
 * A batch (an answer with `more`) that cannot be encoded is encoded again with each answer that
 * cannot be replaced by its call's failure, the others as they were.
 */
function encodingEachAnswer(
  definition: grpc.ServiceDefinition,
  exchange: string,
  logger: Logger,
): grpc.ServiceDefinition {
  type Answer = { id: number; more?: Answer[] };
  const method = definition[exchange] as grpc.MethodDefinition<unknown, Answer>;
  const encode = method.responseSerialize;
  const alone = (answer: Answer): Answer => {
    try {
      encode(answer);
      return answer;
    } catch (err) {
      logger.error(
        { err, answer: Object.keys(answer) },
        "an Exchange answer could not be encoded: its call fails",
      );
      return {
        id: answer.id,
        status: {
          code: grpc.status.INTERNAL,
          message: "internal error",
          errorCode: "internal_error",
          errorDetail: "",
        },
      } as Answer;
    }
  };
  const responseSerialize = (answer: Answer): Buffer => {
    try {
      return encode(answer);
    } catch {
      const { more, ...first } = answer;
      const fixed = alone(first);
      return encode(more?.length ? { ...fixed, more: more.map(alone) } : fixed);
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
      // Answered calls' series by method, found once: no label key per call.
      const answered = once((method) =>
        handledSeries({ grpc_service: service.name, grpc_method: method, grpc_code: "OK" }),
      );
      const observe = (method: string, code: string, seconds: number) =>
        (code === "OK"
          ? answered(method)
          : handledSeries({ grpc_service: service.name, grpc_method: method, grpc_code: code })
        ).observe(seconds);
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
