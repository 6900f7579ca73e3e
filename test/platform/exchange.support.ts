// What the Exchange transport's suites share (grpc-exchange*.test.ts): payment-verifier's contract
// served by handlers of the suite's own on a real grpc-js server, and clients of the mesh's own.
import {
  CallError,
  contracts,
  createClient,
  createLogger,
  createRegistry,
  type GrpcServerHandle,
  generateMeshToken,
  grpc,
  meshTokenDigest,
  ServiceError,
  startGrpcServer,
} from "@tollgate/platform";
import { afterEach } from "vitest";

export const gatewayToken = generateMeshToken();
export const dashboardToken = generateMeshToken();
export const definition = contracts.paymentVerifier().PaymentVerifierService;

export interface Seen {
  method: string;
  /** Whether the handler ran for a unary call (its call has a peer) or a stream message. */
  unary: boolean;
  /** The metadata the call came with: one object per stream (or per unary call). */
  stream: unknown;
}

/** Handlers that answer from the request alone: Verify echoes, Settle waits `resource.url` ms, Release fails as asked. */
function handlers(seen: Seen[]) {
  const note = (method: string, call: { getPeer?: unknown; metadata?: unknown }) =>
    seen.push({ method, unary: typeof call.getPeer === "function", stream: call.metadata });
  return {
    async Challenge(_req: unknown, call: { getPeer?: unknown }) {
      note("Challenge", call);
      return { headers: [{ name: "x-offer", value: "1" }], problem: null };
    },
    async Verify(req: { requestId: string; client: string }, call: { getPeer?: unknown }) {
      note("Verify", call);
      // An answer protobuf cannot encode (headers must be a list).
      if (req.client === "unencodable") return { valid: false, headers: "not a list" } as never;
      return { valid: true, paymentId: `p-${req.requestId}`, payer: req.client, scheme: "exact" };
    },
    async Settle(
      req: { requestId: string; resource: { url: string } | null },
      call: { getPeer?: unknown; getDeadline(): Date | number },
    ) {
      note("Settle", call);
      const wait = Number(req.resource?.url ?? 0);
      if (wait < 0) return new Promise<never>(() => undefined); // never answers
      // time-based: the handler's work takes `wait` ms, as a slow settlement does (the suite's subject).
      await new Promise((r) => setTimeout(r, wait));
      const deadline = call.getDeadline();
      return {
        settled: true,
        reason: req.requestId,
        transaction: String(deadline instanceof Date ? deadline.getTime() : deadline),
      };
    },
    async Release(req: { reason: string }, call: { getPeer?: unknown }) {
      note("Release", call);
      if (req.reason === "refuse")
        throw new ServiceError(grpc.status.FAILED_PRECONDITION, "payment_invalid", "refused on purpose", {
          parameter: "payment_id",
        });
      if (req.reason === "crash") throw new Error("a bug");
      return {};
    },
    async DescribeMethods(_req: unknown, call: { getPeer?: unknown }) {
      note("DescribeMethods", call);
      return { methods: [] };
    },
  };
}

const servers: GrpcServerHandle[] = [];
export const clients: { close(): void }[] = [];

export async function server(
  opts: { exchange?: boolean; seen?: Seen[]; connections?: { maxAgeMs: number; graceMs: number } } = {},
) {
  const registry = createRegistry("exchange-test");
  const handle = await startGrpcServer({
    host: "127.0.0.1",
    port: 0,
    services: [
      {
        name: "tollgate.payment.v1.PaymentVerifierService",
        definition: definition.service,
        handlers: handlers(opts.seen ?? []),
        callers: {
          gateway: ["Challenge", "Verify", "Settle", "Release", "DescribeMethods"],
          dashboard: ["DescribeMethods", "Verify"],
        },
        ...(opts.exchange === false ? {} : { exchange: "Exchange" }),
      },
    ],
    meshCallers: { gateway: [meshTokenDigest(gatewayToken)], dashboard: [meshTokenDigest(dashboardToken)] },
    registry,
    logger: createLogger("exchange-test"),
    ...(opts.connections ? { connections: opts.connections } : {}),
  });
  servers.push(handle);
  return { handle, registry, address: `127.0.0.1:${handle.port}` };
}

export function client(
  address: string,
  opts: { token?: string | undefined; rotateMs?: number; callMaxMs?: number } = {},
) {
  const { rotateMs, callMaxMs } = opts;
  const token = "token" in opts ? opts.token : gatewayToken;
  const c = createClient(definition, address, {
    service: "payment-verifier",
    defaultDeadlineMs: 5_000,
    token,
    exchange: { method: "Exchange", ...(rotateMs ? { rotateMs } : {}), ...(callMaxMs ? { callMaxMs } : {}) },
  });
  clients.push(c);
  return c;
}

export const resource = (url = "0") => ({ endpoint: "/api/chain/block-number", network: "ethereum", url });

export async function failure(call: Promise<unknown>) {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof CallError)) throw new Error(`the call did not fail: ${String(err)}`);
  return err.failure;
}

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(servers.splice(0).map((s) => s.server.forceShutdown()));
});
