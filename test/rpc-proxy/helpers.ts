// Shared pieces for the rpc-proxy tests: a counting HTTP proxy in front of a real node
// (it can also play dead or hung), closed ports, the service behind its gRPC interface,
// and /metrics reading.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type CallFailure, contracts, createClient, type Logger } from "@tollgate/platform";
import {
  loadConfig,
  type RpcProxyConfig,
  type RpcProxyHandle,
  startRpcProxy,
} from "../../services/rpc-proxy/src/index.ts";

export interface Recorded {
  /** JSON-RPC methods in the HTTP request (several for a batch). */
  methods: string[];
  body: unknown;
  path: string;
}

/**
 * An HTTP server in front of a real node that records every request it forwards, so a
 * test can count upstream round trips. `mode = "hang"` accepts requests and never
 * answers (a hung node), `mode = "throttle"` answers like a rate-limiting provider; `close()` makes its port refuse connections, `reopen()` brings
 * it back on the same port.
 */
export class CountingProxy {
  readonly requests: Recorded[] = [];
  mode: "forward" | "hang" | "throttle" = "forward";
  port = 0;
  readonly #target: string;
  #server: Server | undefined;

  constructor(target: string) {
    this.#target = target;
  }

  /** URL with a path that stands in for an API key, which must never leak. */
  url(path = "/v3/SECRET-KEY-abc123"): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  async listen(port = 0): Promise<this> {
    const server = createServer((req, res) => void this.#handle(req, res));
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    this.#server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    const items = Array.isArray(body) ? body : [body];
    this.requests.push({
      methods: items.map((i) => String((i as { method?: unknown })?.method)),
      body,
      path: req.url ?? "",
    });
    if (this.mode === "hang") return; // never answer; the socket stays open
    if (this.mode === "throttle") {
      // What hosted providers send when throttling: HTTP 200 and a JSON-RPC error per call.
      const error = { code: -32005, message: "rate limit exceeded, too many requests" };
      const answers = items.map((i) => ({ jsonrpc: "2.0", id: (i as { id?: unknown })?.id ?? null, error }));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(Array.isArray(body) ? answers : answers[0]));
      return;
    }
    const upstream = await fetch(this.#target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: text,
    });
    res.writeHead(upstream.status, { "content-type": "application/json" });
    res.end(await upstream.text());
  }

  /** Requests recorded after `mark`, without the background head polls. */
  since(mark: number): Recorded[] {
    return this.requests.slice(mark);
  }

  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Listens again on the same port after close(). */
  async reopen(): Promise<void> {
    await this.listen(this.port);
  }
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

export interface NetworksView {
  networks: {
    name: string;
    chainId: number;
    upstreams: { label: string; healthy: boolean; breaker: string; headBlock: number; lagBlocks: number }[];
  }[];
}

/** Starts rpc-proxy on free ports and returns a client for its real gRPC interface. */
export async function startService(patch: ConfigPatch, logger?: Logger): Promise<Service> {
  const base = loadConfig();
  const config: RpcProxyConfig = {
    ...base,
    host: "127.0.0.1",
    grpcPort: 0,
    metricsPort: 0,
    networks: base.networks.map((n) => ({ ...n, upstreams: patch.upstreams?.[n.name] ?? [] })),
    upstream: { ...base.upstream, ...patch.upstream },
    logs: { ...base.logs, ...patch.logs },
    maxResultBytes: patch.maxResultBytes ?? base.maxResultBytes,
  };
  // Quiet by default: tests that check log lines pass their own memoryLogger.
  const handle = await startRpcProxy(config, { logger: logger ?? memoryLogger([]) });
  const client = createClient(contracts.rpcProxy().RpcProxyService, `127.0.0.1:${handle.grpcPort}`, {
    service: "rpc-proxy",
    defaultDeadlineMs: 10_000,
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
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("condition not met in time");
}
