// Every service's default ports, in one place: its env table (the README tables, the manifests'
// check), the local launcher (`pnpm start`) and the operator CLI read them from here.
//
// All lie below 32768, under the ephemeral range of every common OS (Linux 32768-60999, macOS and
// Windows 49152-65535), where each outgoing connection takes its local port: a client retrying
// 127.0.0.1:50054 while the service there was down once got 50054 as its own source port, connected
// to itself, and the restarted service's bind failed with EADDRINUSE (test/deploy/ports.test.ts).

export const DEFAULT_PORTS = {
  gateway: { http: 8080, metrics: 9460 },
  "quota-meter": { grpc: 9451, metrics: 9461 },
  "payment-verifier": { grpc: 9452, metrics: 9462 },
  "rpc-proxy": { grpc: 9453, metrics: 9463 },
  "settlement-worker": { grpc: 9454, metrics: 9464 },
  dashboard: { http: 8090, metrics: 9465 },
} as const;

type GrpcService = {
  [K in keyof typeof DEFAULT_PORTS]: (typeof DEFAULT_PORTS)[K] extends { grpc: number } ? K : never;
}[keyof typeof DEFAULT_PORTS];

/** A gRPC service's default address on loopback (its callers' `*_ADDR` default). */
export function defaultGrpcAddr(service: GrpcService): string {
  return `127.0.0.1:${DEFAULT_PORTS[service].grpc}`;
}

/**
 * The test fixture's Redis Cluster on loopback (test/setup/redis-cluster.ts): six nodes (three
 * masters, three replicas) on `base + i`, each with its cluster bus on `+ 10000` (17100-17165),
 * below the ephemeral range as the services' ports. A block in use (another checkout's run on the
 * same machine) is skipped for the next one, `blocks` at most.
 */
export const TEST_REDIS_CLUSTER_PORTS = { base: 7100, nodes: 6, blockSize: 10, blocks: 6 } as const;

/**
 * The cluster chaos run's NATS JetStream cluster on loopback (test/chaos/cluster.ts): three nodes,
 * node i on `client + i` for clients, `route + i` for its cluster routes and `monitor + i` for its
 * HTTP monitor, below the ephemeral range. A block in use is skipped for the next one.
 */
export const TEST_NATS_CLUSTER_PORTS = {
  client: 14220,
  route: 15220,
  monitor: 16220,
  nodes: 3,
  blockSize: 10,
  blocks: 6,
} as const;
