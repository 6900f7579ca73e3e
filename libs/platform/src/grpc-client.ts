// biome-ignore-all lint/suspicious/noExplicitAny: generic glue over generated gRPC client methods
// The client side of the mesh: a typed client per service and address, with deadlines, the caller's
// mesh token, latency metrics and, for services with an Exchange, calls carried on its streams.
import * as grpc from "@grpc/grpc-js";
import { CallError, readCallFailure } from "./grpc-errors.ts";
import { EXCHANGE_BATCH_KEY, exchangeMember } from "./grpc-exchange.ts";
import { ExchangeClient } from "./grpc-exchange-client.ts";
import { MESH_TOKEN_KEY } from "./mesh-auth.ts";
import { once, prom, type Registry, seriesOf } from "./metrics.ts";

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
  // Answered calls' series by method, found once: no label key per call.
  const answered = once((method) =>
    latency?.({ grpc_service: opts.service, grpc_method: method, grpc_code: "OK" }),
  );
  const observe = (method: string, code: string, seconds: number) =>
    (code === "OK"
      ? answered(method)
      : latency?.({ grpc_service: opts.service, grpc_method: method, grpc_code: code })
    )?.observe(seconds);
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
    // The streams say this caller reads batched answers (grpc-exchange.ts).
    const streamMetadata = shared.clone();
    streamMetadata.set(EXCHANGE_BATCH_KEY, "1");
    exchange = new ExchangeClient({
      open: () =>
        client.makeBidiStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, streamMetadata),
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
