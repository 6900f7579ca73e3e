// Shared pieces for the rpc-proxy tests: a suite's set-up (upstreamSuite: a real anvil, counting
// proxies in front of it, the service, all stopped after each test), a counting HTTP proxy in front
// of a real node (it can also play dead or hung), closed ports, the service behind its gRPC
// interface, and /metrics reading.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type AnvilNode, startAnvil } from "@tollgate/devnet/anvil";
import { type CallFailure, contracts, createClient, type Logger } from "@tollgate/platform";
import { afterAll, afterEach, beforeAll } from "vitest";
import {
  loadConfig,
  networkConfig,
  type RpcProxyConfig,
  type RpcProxyHandle,
  startRpcProxy,
} from "../../services/rpc-proxy/src/index.ts";
import { CountingProxy } from "../support/counting-proxy.ts";
import { until } from "../support/eventually.ts";
import { GATEWAY_TOKEN, MESH_CALLERS, MESH_CALLERS_ENV, withEnv } from "../support/mesh.ts";

export { CountingProxy, type Recorded } from "../support/counting-proxy.ts";

/** What a suite's tests start, each stopped after its test (the service last, as the suites did). */
export interface UpstreamSuite {
  /** The suite's anvil (chain 1), started once for the file. */
  readonly anvil: AnvilNode;
  /** A counting proxy in front of `target` (the suite's anvil by default). */
  proxy(target?: string): Promise<CountingProxy>;
  /** rpc-proxy on free ports (startService). */
  service(...args: Parameters<typeof startService>): Promise<Service>;
  /** Another anvil of chain 1, stopped after the test. */
  node(): Promise<AnvilNode>;
  /** Anything else to stop after the test. */
  cleanup(stop: () => Promise<void>): void;
}

/** The set-up of an rpc-proxy suite (call at the top of its file): see UpstreamSuite. */
export function upstreamSuite(): UpstreamSuite {
  let anvil: AnvilNode | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 1, host: "127.0.0.1", accounts: 1 });
  });
  afterAll(async () => {
    await anvil?.stop();
  });
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!();
  });
  return {
    get anvil() {
      if (!anvil) throw new Error("the suite's anvil starts in beforeAll");
      return anvil;
    },
    async proxy(target) {
      const p = await new CountingProxy(target ?? this.anvil.rpcUrl).listen();
      cleanups.push(() => p.close());
      return p;
    },
    async service(...args) {
      const s = await startService(...args);
      cleanups.unshift(() => s.stop());
      return s;
    },
    async node() {
      const node = await startAnvil({ chainId: 1, host: "127.0.0.1", accounts: 1 });
      cleanups.push(() => node.stop());
      return node;
    },
    cleanup(stop) {
      cleanups.push(stop);
    },
  };
}

/** One JSON-RPC call straight to a node (not through rpc-proxy); its error is thrown. */
export async function nodeRpc(node: AnvilNode, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(node.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: unknown };
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

/** A port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface LogLine {
  level: string;
  obj: unknown;
  msg: string | undefined;
}

/** A logger that keeps its lines in memory, so a test can check what would be logged. */
export function memoryLogger(lines: LogLine[]): Logger {
  const write =
    (level: string) =>
    (obj: unknown, msg?: string): void => {
      lines.push({ level, obj, msg });
    };
  const logger = {
    level: "debug",
    trace: write("trace"),
    debug: write("debug"),
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
    fatal: write("fatal"),
    child: () => logger,
  };
  return logger as unknown as Logger;
}

export type ConfigPatch = {
  upstreams?: Record<string, string[]>;
  /** CONSENSUS_<NETWORK> values by network name. */
  consensus?: Record<string, string | undefined>;
  /** UPSTREAM_LIMITS_<NETWORK> values by network name. */
  limits?: Record<string, string | undefined>;
  upstream?: Partial<RpcProxyConfig["upstream"]>;
  logs?: Partial<RpcProxyConfig["logs"]>;
  maxResultBytes?: number;
};

export interface Service {
  handle: RpcProxyHandle;
  execute(
    operation: string,
    params: Record<string, unknown>,
    opts?: { network?: string; deadlineMs?: number },
  ): Promise<{ data: Record<string, unknown>; roundTrips: number }>;
  /** Like execute, but resolves with the failure (throws if the call succeeded). */
  fail(
    operation: string,
    params: Record<string, unknown>,
    opts?: { network?: string; deadlineMs?: number },
  ): Promise<CallFailure>;
  listNetworks(): Promise<NetworksView>;
  metrics(): Promise<string>;
  stop(): Promise<void>;
}

interface NetworksView {
  networks: {
    name: string;
    chainId: number;
    upstreams: { label: string; healthy: boolean; breaker: string; headBlock: number; lagBlocks: number }[];
  }[];
}

/** Starts rpc-proxy on free ports and returns a client for its real gRPC interface. */
export async function startService(patch: ConfigPatch, logger?: Logger): Promise<Service> {
  const base = withEnv(MESH_CALLERS_ENV, loadConfig);
  const config: RpcProxyConfig = {
    ...base,
    meshCallers: MESH_CALLERS,
    host: "127.0.0.1",
    grpcPort: 0,
    metricsPort: 0,
    networks: base.networks.map((n) =>
      networkConfig(n, patch.upstreams?.[n.name] ?? [], {
        consensus: patch.consensus?.[n.name],
        limits: patch.limits?.[n.name],
      }),
    ),
    upstream: { ...base.upstream, ...patch.upstream },
    logs: { ...base.logs, ...patch.logs },
    maxResultBytes: patch.maxResultBytes ?? base.maxResultBytes,
  };
  // Quiet by default: tests that check log lines pass their own memoryLogger.
  const handle = await startRpcProxy(config, { logger: logger ?? memoryLogger([]) });
  const client = createClient(contracts.rpcProxy().RpcProxyService, `127.0.0.1:${handle.grpcPort}`, {
    service: "rpc-proxy",
    defaultDeadlineMs: 10_000,
    token: GATEWAY_TOKEN,
  });
  const execute: Service["execute"] = async (operation, params, opts = {}) => {
    const res = await client.call(
      "Execute",
      {
        requestId: `test-${operation}`,
        operation,
        network: opts.network ?? "ethereum",
        paramsJson: JSON.stringify(params),
      },
      opts.deadlineMs ? { deadlineMs: opts.deadlineMs } : {},
    );
    return { data: JSON.parse(res.dataJson) as Record<string, unknown>, roundTrips: res.upstreamRoundTrips };
  };
  return {
    handle,
    execute,
    async fail(operation, params, opts) {
      try {
        await execute(operation, params, opts);
      } catch (err) {
        const failure = (err as { failure?: CallFailure }).failure;
        if (failure) return failure;
        throw err;
      }
      throw new Error(`${operation} succeeded but a failure was expected`);
    },
    listNetworks: () => client.call("ListNetworks", {}) as never,
    async metrics() {
      const res = await fetch(`http://127.0.0.1:${handle.metricsPort}/metrics`);
      return res.text();
    },
    async stop() {
      client.close();
      await handle.stop();
    },
  };
}

/** Value of one sample in Prometheus text format, matching every given label. */
export function metricValue(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) {
      return Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return undefined;
}

/** Sum of every sample of `name` matching the labels. */
export function metricSum(text: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) {
      sum += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return sum;
}

/** Polls `check` until it returns true or the time is up. */
export const eventually = (check: () => Promise<boolean> | boolean, timeoutMs = 5_000): Promise<void> =>
  until("the condition", check, timeoutMs, 25);
