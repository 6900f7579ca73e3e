import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Devnet, startDevnet } from "@tollgate/devnet";
import { checkHealth, DEFAULT_PORTS, meshCallerEnv, meshTokenDigest } from "@tollgate/platform";
import { freePort } from "./ports.ts";
import { EMBEDDED_POSTGRES_PORT, startEmbeddedPostgres } from "./postgres.ts";
import { localSecret } from "./secrets.ts";
import { REPO_ROOT, type RunningService, type ServiceName, spawnService } from "./services.ts";

export interface MeshOptions {
  /** Use the documented default ports (libs/platform/src/ports.ts) instead of free ones. */
  defaultPorts?: boolean;
  /** Where local state lives (devnet.json, secrets, outbox). Default <repo>/.tollgate. */
  stateDir?: string;
  /** Extra environment for every service, and per service. */
  env?: Record<string, string>;
  serviceEnv?: Partial<Record<ServiceName, Record<string, string>>>;
  /**
   * Isolates this mesh's Redis keys and NATS streams on shared servers (tests run
   * several meshes at once). Unset for `pnpm start`.
   */
  namespace?: string;
  /**
   * The upstream URL list rpc-proxy gets for a devnet network (default: the devnet's node), e.g.
   * two front doors of one node that a chaos run kills and hangs.
   */
  upstreams?: (network: string, rpcUrl: string) => Promise<string> | string;
  /** payment-verifier replicas (default 1); the gateway spreads its calls over all of them. */
  paymentVerifierReplicas?: number;
  /** The devnet's anvils log nothing per RPC (the benchmark's mesh, like its floor's node). */
  quietNodes?: boolean;
  /** Called with every log line of every service (and of the embedded PostgreSQL). */
  onLine?: (service: ServiceName | "postgres", line: string) => void;
  /**
   * A memory cgroup (a cgroup v1 `memory` directory) a service starts inside, as a pod's container
   * does: the process joins it before Node starts, so Node sizes its heap from the limit.
   */
  cgroups?: Partial<Record<ServiceName, string>>;
  /**
   * Run each service from its bundle (services/<name>/dist/main.mjs, written by `pnpm build`) as the
   * images do, instead of from its TypeScript sources.
   */
  bundles?: boolean;
  /**
   * Starts each service some other way than `node <entry>` on this host: the command (run in the
   * foreground until the service exits; SIGTERM stops it) given the service's own environment, e.g.
   * `docker run` of its image (test/images). The environment is then the command's to pass on.
   */
  launcher?: (name: ServiceName, env: Record<string, string>) => { command: string; args: string[] };
  /** How long a service may take to answer its health check (default: spawnService's). */
  readyTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface Mesh {
  /** When each part was ready, in ms since this process started (devnet, postgres, each service). */
  timings: Record<string, number>;
  gatewayUrl: string;
  /** The account dashboard (sign in with a wallet, API keys, usage). */
  dashboardUrl: string;
  ports: Record<ServiceName, { main: number; metrics: number }>;
  /** The local chains, when no upstream URLs were configured. */
  devnet: Devnet | undefined;
  operatorTokenFile: string;
  /** The system of record: DATABASE_URL when given, else the embedded PGlite this mesh started. */
  databaseUrl: string;
  /** The embedded PostgreSQL's process, when no DATABASE_URL was given. */
  postgres: RunningService | undefined;
  /** The gateway's mesh token (what it presents to the services it calls). */
  gatewayTokenFile: string;
  stateDir: string;
  services: Record<ServiceName, RunningService>;
  /** Back-end replicas beyond the first of each (services[name]), with their ports, in start order. */
  replicas: { name: BackEnd; service: RunningService; ports: { main: number; metrics: number } }[];
  /** Starts another gateway replica in front of the same back ends. */
  spawnGateway(env?: Record<string, string>): Promise<{ url: string; service: RunningService }>;
  /** Stops a service and starts it again with the same environment and ports (a replica restart). */
  restart(name: ServiceName): Promise<void>;
  /** Starts another replica of a back end with the same environment (its own ports); stopped with the mesh. */
  spawnReplica(
    name: BackEnd,
    env?: Record<string, string>,
  ): Promise<{ service: RunningService; ports: { main: number; metrics: number } }>;
  stop(): Promise<void>;
}

type BackEnd = Exclude<ServiceName, "gateway" | "dashboard">;

function hasUpstreams(env: Record<string, string | undefined>): boolean {
  return Object.keys(env).some((k) => k.startsWith("UPSTREAMS_") && env[k]);
}

/**
 * The embedded default: starts local devnets (unless upstream URLs are configured), the embedded
 * PostgreSQL (unless DATABASE_URL is given) and the services on loopback, each its own process.
 */
export async function startMesh(opts: MeshOptions = {}): Promise<Mesh> {
  const log = opts.log ?? (() => {});
  const stateDir = opts.stateDir ?? join(REPO_ROOT, ".tollgate");
  const baseEnv = { ...process.env, ...opts.env };

  const ports = {} as Record<ServiceName, { main: number; metrics: number }>;
  for (const name of Object.keys(DEFAULT_PORTS) as ServiceName[]) {
    const own: { http?: number; grpc?: number; metrics: number } = DEFAULT_PORTS[name];
    // PORT and DASHBOARD_PORT move the two HTTP edges; the back ends keep theirs.
    const edgePort =
      name === "gateway" ? baseEnv.PORT : name === "dashboard" ? baseEnv.DASHBOARD_PORT : undefined;
    ports[name] = opts.defaultPorts
      ? { main: Number(edgePort ?? own.http ?? own.grpc), metrics: own.metrics }
      : { main: await freePort(), metrics: await freePort() };
  }

  const onLine = opts.onLine ?? (() => {});
  const timings: Mesh["timings"] = {};
  const done = (part: string) => {
    timings[part] = Math.round(performance.now());
  };
  // The chains and the embedded PostgreSQL boot side by side: neither needs the other.
  const [chainsUp, databaseUp] = await Promise.allSettled([
    hasUpstreams({ ...baseEnv, ...opts.serviceEnv?.["rpc-proxy"] })
      ? undefined
      : startDevnet({
          stateDir,
          // A namespaced mesh keeps its own devnet.json, so meshes sharing a state dir never
          // overwrite each other's chain addresses.
          file: join(stateDir, opts.namespace ? `devnet-${opts.namespace}.json` : "devnet.json"),
          log,
          quiet: opts.quietNodes,
        }).finally(() => done("devnet")),
    baseEnv.DATABASE_URL
      ? undefined
      : (async () => {
          const dataDir = join(stateDir, opts.namespace ? `pglite-${opts.namespace}` : "pglite");
          const port = opts.defaultPorts
            ? Number(baseEnv.PGLITE_PORT ?? EMBEDDED_POSTGRES_PORT)
            : await freePort();
          return startEmbeddedPostgres(dataDir, port, onLine).finally(() => done("postgres"));
        })(),
  ]);
  const devnet = chainsUp.status === "fulfilled" ? chainsUp.value : undefined;
  const embedded = databaseUp.status === "fulfilled" ? databaseUp.value : undefined;
  const postgres = embedded?.process;
  for (const up of [chainsUp, databaseUp]) {
    if (up.status === "fulfilled") continue;
    await Promise.all([devnet?.stop(), postgres?.stop()]);
    throw up.reason;
  }
  const databaseUrl = embedded?.url ?? baseEnv.DATABASE_URL ?? "";
  // `pnpm migrate` (each service's src/migrate.ts) finds the running embedded database here.
  if (embedded && !opts.namespace) {
    writeFileSync(join(stateDir, "database-url"), `${databaseUrl}\n`, { mode: 0o600 });
  }

  const upstreamEnv: Record<string, string> = {};
  const paymentEnv: Record<string, string> = {};
  if (devnet) {
    for (const [name, chain] of Object.entries(devnet.chains)) {
      if (name === "settlement" || name === "tempo") continue; // payment chains, not served networks
      upstreamEnv[`UPSTREAMS_${name.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`] = opts.upstreams
        ? await opts.upstreams(name, chain.rpcUrl)
        : chain.rpcUrl;
    }
    Object.assign(paymentEnv, x402DevnetEnv(devnet), mppDevnetEnv(devnet));
    // x402-batch's receiver-authorizer key (signs claims and refunds), generated once like the others.
    paymentEnv.X402_BATCH_AUTHORIZER_PRIVATE_KEY_FILE = localSecret(
      stateDir,
      "x402-batch-authorizer-key",
      "private-key",
    );
    // MPP's challenge-id HMAC key: one for every replica, kept across restarts like the others.
    paymentEnv.MPP_SECRET_KEY_FILE = localSecret(stateDir, "mpp-secret-key");
  }

  const operatorTokenFile = localSecret(stateDir, "operator-token");
  const pepperFile = localSecret(stateDir, "api-key-pepper");
  // The gateway holds its token; the services it calls hold only the token's digest.
  const gatewayTokenFile = localSecret(stateDir, "mesh-token-gateway");
  const gatewayDigest = meshTokenDigest(readFileSync(gatewayTokenFile, "utf8").trim());
  // The dashboard's own token: quota-meter lets it call AccountService only.
  const dashboardTokenFile = localSecret(stateDir, "mesh-token-dashboard");
  const dashboardDigest = meshTokenDigest(readFileSync(dashboardTokenFile, "utf8").trim());
  const dashboardUrl = `http://127.0.0.1:${ports.dashboard.main}`;
  // Sign-in messages name the devnet's ethereum chain, where contract-wallet signatures are checked.
  const signInChain = devnet?.chains.ethereum;
  const addr = (name: ServiceName) => `127.0.0.1:${ports[name].main}`;
  const replicaPorts: { main: number; metrics: number }[] = [];
  for (let i = 1; i < (opts.paymentVerifierReplicas ?? 1); i++) {
    replicaPorts.push({ main: await freePort(), metrics: await freePort() });
  }
  // One address, or every replica's for the client's round-robin over a static list.
  const paymentVerifierAddr = replicaPorts.length
    ? `ipv4:${[ports["payment-verifier"], ...replicaPorts].map((p) => `127.0.0.1:${p.main}`).join(",")}`
    : addr("payment-verifier");
  const common: Record<string, string> = {
    BIND_HOST: "127.0.0.1",
    // One node of each service: the in-memory stand-ins may replace an unreachable Redis; not a
    // Redis Cluster asked for by name (REDIS_CLUSTER_NODES): every service uses it, or waits.
    REDIS_STANDIN: baseEnv.REDIS_CLUSTER_NODES ? "false" : "true",
    ...(baseEnv.REDIS_CLUSTER_NODES ? { REDIS_CLUSTER_NODES: baseEnv.REDIS_CLUSTER_NODES } : {}),
    [meshCallerEnv("gateway")]: gatewayDigest,
    OUTBOX_DIR: join(stateDir, "outbox", opts.namespace ?? ""),
    ...(opts.namespace
      ? {
          EVENTS_NAMESPACE: opts.namespace,
          REDIS_PREFIX: `${opts.namespace}:`,
        }
      : {}),
    ...opts.env,
  };
  const envFor: Record<ServiceName, Record<string, string>> = {
    "rpc-proxy": { ...upstreamEnv },
    "quota-meter": {
      OPERATOR_TOKEN_FILE: operatorTokenFile,
      API_KEY_PEPPER_FILE: pepperFile,
      DATABASE_URL: databaseUrl,
      [meshCallerEnv("dashboard")]: dashboardDigest,
    },
    "payment-verifier": { ...paymentEnv },
    "settlement-worker": {
      OPERATOR_TOKEN_FILE: operatorTokenFile,
      DATABASE_URL: databaseUrl,
      // The dashboard lists its users' own payments (SettlementAccountService only).
      [meshCallerEnv("dashboard")]: dashboardDigest,
      ...(devnet
        ? { ...reconcileEnv(paymentEnv), ...sessionSettlementEnv(paymentEnv), ...batchClaimEnv(paymentEnv) }
        : {}),
    },
    gateway: {
      PORT: String(ports.gateway.main),
      // The address the docs (OpenAPI servers, llms.txt) and payment offers name.
      PUBLIC_BASE_URL: baseEnv.PUBLIC_BASE_URL || `http://127.0.0.1:${ports.gateway.main}`,
      MESH_TOKEN_FILE: gatewayTokenFile,
      RPC_PROXY_ADDR: addr("rpc-proxy"),
      QUOTA_METER_ADDR: addr("quota-meter"),
      PAYMENT_VERIFIER_ADDR: paymentVerifierAddr,
      DASHBOARD_URL: dashboardUrl,
    },
    dashboard: {
      PORT: String(ports.dashboard.main),
      MESH_TOKEN_FILE: dashboardTokenFile,
      QUOTA_METER_ADDR: addr("quota-meter"),
      SETTLEMENT_WORKER_ADDR: addr("settlement-worker"),
      // The credits page's top-up pays the gateway from the browser.
      GATEWAY_URL: baseEnv.PUBLIC_BASE_URL || `http://127.0.0.1:${ports.gateway.main}`,
      // The devnets borrow public chain ids (Base Sepolia's, Tempo's): no explorer has their transactions.
      ...(devnet
        ? { LOCAL_CHAINS: [devnet.demo.settlement.network, devnet.demo.tempo.network].join(",") }
        : {}),
      ...(signInChain
        ? { SIWE_CHAIN_ID: String(signInChain.chainId), SIWE_RPC_URL: signInChain.rpcUrl }
        : {}),
    },
  };

  const services = {} as Record<ServiceName, RunningService>;
  const extraGateways: RunningService[] = [];
  const replicas: Mesh["replicas"] = [];
  // Stopped from the edges in: what takes requests drains first, then what it calls, then what they
  // store to. Each stage stops at once (SIGTERM to all of it), so a stop costs the slowest drain of
  // each stage, not their sum.
  const stopAll = async () => {
    const stages: (RunningService | Devnet | undefined)[][] = [
      [...extraGateways, services.dashboard, services.gateway],
      [...replicas.map((r) => r.service), services["payment-verifier"], services["settlement-worker"]],
      [services["quota-meter"], services["rpc-proxy"]],
      [postgres, devnet],
    ];
    for (const stage of stages) await Promise.all(stage.map((s) => s?.stop()));
  };
  const entry = (name: ServiceName) =>
    opts.bundles ? `services/${name}/dist/main.mjs` : `services/${name}/src/main.ts`;
  /**
   * How a service's process starts: by the launcher when one is given, inside its cgroup when one
   * is given, else `node <entry>`.
   */
  const launch = (name: ServiceName, env: Record<string, string>): [string[], string | undefined] => {
    if (opts.launcher) {
      const { command, args } = opts.launcher(name, env);
      return [args, command];
    }
    const cgroup = opts.cgroups?.[name];
    if (!cgroup) return [[entry(name)], undefined];
    const script = 'echo $$ > "$0/cgroup.procs" && exec "$@"';
    return [["-c", script, cgroup, process.execPath, entry(name)], "sh"];
  };
  /** One more gateway replica in front of the same back ends (its own ports). */
  const spawnGateway = async (env: Record<string, string> = {}) => {
    const port = await freePort();
    const gatewayEnv = {
      ...common,
      METRICS_PORT: String(await freePort()),
      ...envFor.gateway,
      PORT: String(port),
      ...opts.serviceEnv?.gateway,
      ...env,
    };
    const gateway = await spawnService(
      "gateway",
      gatewayEnv,
      onLine,
      () =>
        fetch(`http://127.0.0.1:${port}/health`).then(
          (r) => r.ok,
          () => false,
        ),
      opts.readyTimeoutMs,
      ...(opts.launcher
        ? launch("gateway", gatewayEnv)
        : ([[entry("gateway")], undefined] as [string[], undefined])),
    );
    extraGateways.push(gateway);
    return { url: `http://127.0.0.1:${port}`, service: gateway };
  };
  const startBackEnd = (
    name: BackEnd,
    own: { main: number; metrics: number },
    env: Record<string, string> = {},
  ) => {
    const serviceEnv = {
      ...common,
      GRPC_PORT: String(own.main),
      METRICS_PORT: String(own.metrics),
      ...envFor[name],
      ...opts.serviceEnv?.[name],
      ...env,
    };
    return spawnService(
      name,
      serviceEnv,
      onLine,
      () => checkHealth(`127.0.0.1:${own.main}`),
      opts.readyTimeoutMs,
      ...launch(name, serviceEnv),
    );
  };
  const spawnBackEnd = async (name: BackEnd) => {
    services[name] = await startBackEnd(name, ports[name]);
    done(name);
  };
  /** Another replica of a back end on `own` ports, journalling its events in an outbox of its own. */
  const startReplica = async (
    name: BackEnd,
    own: { main: number; metrics: number },
    env: Record<string, string> = {},
  ) => {
    const outbox = join(common.OUTBOX_DIR ?? join(stateDir, "outbox"), `replica-${replicas.length + 2}`);
    const service = await startBackEnd(name, own, { OUTBOX_DIR: outbox, ...env });
    replicas.push({ name, service, ports: own });
    return { service, ports: own };
  };
  // The HTTP edges (the gateway and the dashboard) on their ports, ready when /health answers.
  const edge = (name: "gateway" | "dashboard") => {
    const serviceEnv = {
      ...common,
      METRICS_PORT: String(ports[name].metrics),
      ...envFor[name],
      ...opts.serviceEnv?.[name],
    };
    return spawnService(
      name,
      serviceEnv,
      onLine,
      () =>
        fetch(`http://127.0.0.1:${ports[name].main}/health`).then(
          (r) => r.ok,
          () => false,
        ),
      opts.readyTimeoutMs,
      ...launch(name, serviceEnv),
    ).then((service) => {
      services[name] = service;
      done(name);
    });
  };
  try {
    // Back ends first, so the gateway never serves a request it cannot route.
    await Promise.all(
      (["rpc-proxy", "quota-meter", "payment-verifier", "settlement-worker"] as const).map(spawnBackEnd),
    );
    for (const own of replicaPorts) await startReplica("payment-verifier", own);
    // Both HTTP edges at once (the dashboard needs only quota-meter): the ports picked at the start
    // are bound sooner, and each one's services entry is set before a failure stops the mesh.
    const started = await Promise.allSettled([edge("gateway"), edge("dashboard")]);
    for (const s of started) if (s.status === "rejected") throw s.reason;
  } catch (err) {
    await stopAll();
    throw err;
  }

  return {
    timings,
    gatewayUrl: `http://127.0.0.1:${ports.gateway.main}`,
    dashboardUrl,
    ports,
    devnet,
    operatorTokenFile,
    databaseUrl,
    postgres,
    gatewayTokenFile,
    stateDir,
    services,
    replicas,
    spawnGateway,
    async restart(name) {
      await services[name].stop();
      if (name === "gateway" || name === "dashboard") await edge(name);
      else await spawnBackEnd(name);
    },
    async spawnReplica(name, env = {}) {
      return startReplica(name, { main: await freePort(), metrics: await freePort() }, env);
    },
    stop: stopAll,
  };
}

/**
 * payment-verifier's MPP settings for the local Tempo chain: its RPC is the devnet's shim (which
 * seeds each session open for the channel reserve stand-in), the facilitator account operates
 * session channels and pays their fees in pathUSD.
 */
export function mppDevnetEnv(devnet: Devnet): Record<string, string> {
  const tempo = devnet.chains.tempo;
  const server = devnet.accounts.find((a) => a.role === "facilitator");
  const payTo = devnet.accounts.find((a) => a.role === "payTo");
  const { pathUsd, channelReserve } = tempo?.contracts ?? {};
  if (!tempo || !server || !payTo || !pathUsd || !channelReserve)
    throw new Error("devnet has no tempo chain");
  return {
    MPP_TEMPO_RPC_URL: tempo.rpcUrl,
    MPP_CHAIN_ID: String(tempo.chainId),
    MPP_PAY_TO: payTo.address,
    MPP_SERVER_PRIVATE_KEY: server.privateKey,
    MPP_FEE_TOKEN: pathUsd,
    MPP_CHANNEL_RESERVE: channelReserve,
  };
}

/** The settlement worker settles MPP session channels with the key that operates them. */
function sessionSettlementEnv(payment: Record<string, string>): Record<string, string> {
  const names = [
    "MPP_TEMPO_RPC_URL",
    "MPP_CHAIN_ID",
    "MPP_SERVER_PRIVATE_KEY",
    "MPP_FEE_TOKEN",
    "MPP_CHANNEL_RESERVE",
  ];
  return Object.fromEntries(names.filter((n) => payment[n]).map((n) => [n, payment[n] as string]));
}

/**
 * The settlement worker claims x402-batch channels with payment-verifier's settlement key (nonces
 * shared through the signer lock) and its receiver-authorizer key.
 */
function batchClaimEnv(payment: Record<string, string>): Record<string, string> {
  const names = ["X402_FACILITATOR_PRIVATE_KEY", "X402_BATCH_AUTHORIZER_PRIVATE_KEY_FILE"];
  return Object.fromEntries(names.filter((n) => payment[n]).map((n) => [n, payment[n] as string]));
}

/** The settlement worker reconciles against the chain payment-verifier settles on. */
function reconcileEnv(payment: Record<string, string>): Record<string, string> {
  const { X402_NETWORK = "", X402_ASSET = "", X402_PAY_TO = "", X402_SETTLEMENT_RPC_URL = "" } = payment;
  return { X402_NETWORK, X402_ASSET, X402_PAY_TO, X402_SETTLEMENT_RPC_URL };
}

/** payment-verifier's x402 settings for the local settlement chain. */
export function x402DevnetEnv(devnet: Devnet): Record<string, string> {
  const settlement = devnet.chains.settlement;
  const facilitator = devnet.accounts.find((a) => a.role === "facilitator");
  const payTo = devnet.accounts.find((a) => a.role === "payTo");
  const usdc = settlement?.contracts.usdc;
  if (!settlement || !facilitator || !payTo || !usdc) throw new Error("devnet has no settlement chain");
  return {
    X402_NETWORK: `eip155:${settlement.chainId}`,
    X402_ASSET: usdc,
    X402_ASSET_NAME: "USD Coin",
    X402_ASSET_VERSION: "2",
    X402_PAY_TO: payTo.address,
    X402_SETTLEMENT_RPC_URL: settlement.rpcUrl,
    X402_FACILITATOR_PRIVATE_KEY: facilitator.privateKey,
  };
}
