// One declarative table of a service's environment: its config loader reads through it, its README
// table is rendered from it, and the Kubernetes manifest test checks the manifests against it.
import { ConfigError } from "./env.ts";
import { readSecret } from "./secrets.ts";

export interface EnvVar {
  name: string;
  /** The default as an operator would write it; absent: unset unless the operator sets it. */
  default?: string;
  /** True: the service refuses to start without it. A string: required when that holds ("with mpp-session"). */
  required?: boolean | string;
  /** Read as a secret: also from NAME_FILE, never logged, never a plain value in a manifest. */
  secret?: boolean;
  /**
   * A family of names (`UPSTREAMS_<NETWORK>`): `name` is the pattern shown, `names` every name it
   * stands for.
   */
  names?: readonly string[];
  description: string;
}

export interface EnvTable<N extends string> {
  readonly vars: readonly EnvVar[];
  /** The value, else the table's default, else "". */
  string(name: N): string;
  /** A non-negative integer (a ConfigError names the variable otherwise). */
  int(name: N): number;
  /** `1`, `true`, `yes`, `on` (any case) are true. */
  bool(name: N): boolean;
  /** A secret: NAME or the file NAME_FILE, else the table's default. */
  secret(name: N): string | undefined;
  /** The value as set (no default applied), for settings whose absence means something. */
  raw(name: N): string | undefined;
}

/** Builds a service's table; a name must be in it to be read (checked by the type and at run time). */
export function envTable<const V extends readonly EnvVar[]>(vars: V): EnvTable<V[number]["name"]> {
  const byName = new Map<string, EnvVar>();
  for (const v of vars) {
    if (byName.has(v.name)) throw new Error(`${v.name} is in the environment table twice`);
    byName.set(v.name, v);
  }
  const entry = (name: string): EnvVar => {
    const v = byName.get(name);
    if (!v) throw new Error(`${name} is not in this service's environment table`);
    return v;
  };
  const raw = (name: string): string | undefined => {
    entry(name);
    const value = process.env[name];
    return value === undefined || value === "" ? undefined : value;
  };
  const string = (name: string): string => raw(name) ?? entry(name).default ?? "";
  return {
    vars,
    string,
    raw,
    int(name) {
      const value = string(name);
      const parsed = Number(value);
      if (value === "" || !Number.isInteger(parsed) || parsed < 0) {
        throw new ConfigError(`${name} must be a non-negative integer, got "${value}"`);
      }
      return parsed;
    },
    bool(name) {
      return ["1", "true", "yes", "on"].includes(string(name).toLowerCase());
    },
    secret(name) {
      const v = entry(name);
      if (!v.secret) throw new Error(`${name} is not a secret in this service's environment table`);
      return readSecret(name) ?? v.default;
    },
  };
}

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

/** The README table of a service's environment (between `<!-- env:begin -->` and `<!-- env:end -->`). */
function renderEnvTable(vars: readonly EnvVar[]): string {
  const rows = vars.map((v) => {
    const name = v.secret ? `\`${v.name}\` (or \`${v.name}_FILE\`)` : `\`${v.name}\``;
    const value =
      v.required === true
        ? "**required**"
        : typeof v.required === "string"
          ? `**required** ${v.required}`
          : v.default === undefined
            ? "unset"
            : v.default === ""
              ? "empty"
              : `\`${v.default}\``;
    return `| ${cell(name)} | ${cell(value)} | ${v.secret ? "yes" : ""} | ${cell(v.description)} |`;
  });
  return ["| Variable | Default | Secret | |", "|---|---|---|---|", ...rows].join("\n");
}

const ENV_TABLE_BEGIN = "<!-- env:begin (generated from src/env.ts: pnpm gen:env) -->";
const ENV_TABLE_END = "<!-- env:end -->";

/** The README with its environment table replaced by the rendering of `vars`. */
export function withEnvTable(readme: string, vars: readonly EnvVar[]): string {
  const begin = readme.indexOf(ENV_TABLE_BEGIN);
  const end = readme.indexOf(ENV_TABLE_END);
  if (begin < 0 || end < begin) throw new Error("the README has no environment table markers");
  return `${readme.slice(0, begin + ENV_TABLE_BEGIN.length)}\n\n${renderEnvTable(vars)}\n\n${readme.slice(end)}`;
}

/** How a service stops (runService reads them). */
export const SHUTDOWN_ENV = [
  {
    name: "SHUTDOWN_DELAY_MS",
    default: "0",
    description: "on SIGTERM: unready (health NOT_SERVING / 503) but still serving this long, then drain",
  },
  {
    name: "SHUTDOWN_TIMEOUT_MS",
    default: "25000",
    description: "the whole drain's deadline (under Kubernetes' 30 s grace); past it the process exits 1",
  },
] as const satisfies readonly EnvVar[];

const BIND_HOST_ENV = {
  name: "BIND_HOST",
  default: "127.0.0.1",
  description: "the interface every listener binds (`0.0.0.0` in containers)",
} as const satisfies EnvVar;

/** What every service reads (libs/platform): where it listens, logs and how it stops. */
export function serviceEnv(ports: { grpc?: number; http?: number; metrics: number }) {
  return [
    ...(ports.grpc !== undefined
      ? [
          {
            name: "GRPC_PORT" as const,
            default: String(ports.grpc),
            description: "gRPC port (0: any free port)",
          },
        ]
      : []),
    ...(ports.http !== undefined
      ? [{ name: "PORT" as const, default: String(ports.http), description: "the public HTTP API's port" }]
      : []),
    {
      name: "METRICS_PORT" as const,
      default: String(ports.metrics),
      description: "Prometheus `/metrics` (its own port)",
    },
    BIND_HOST_ENV,
    { name: "LOG_LEVEL", default: "info", description: "pino level: `debug`, `info`, `warn`, `error`" },
    ...SHUTDOWN_ENV,
    {
      name: "NODE_OPTIONS",
      description:
        "Node's own flags, read by Node (not the service): the manifests give the hot-path services `--max-semi-space-size=16` (GC time inside their limits, `pnpm bench:memory`) and payment-verifier and the settlement worker `--max-semi-space-size=4` (idle memory, `pnpm bench --bundles`); docs/benchmarks.md",
    },
  ] as const satisfies readonly EnvVar[];
}

/** The gRPC services' mesh check: which callers they accept, by their token's digest. */
export function meshCallerRows(
  required: readonly string[],
  optional: readonly string[] = [],
): Array<EnvVar & { name: `MESH_CALLER_${string}_SHA256` }> {
  return [
    ...required.map((caller) => ({
      name: `MESH_CALLER_${caller.toUpperCase()}_SHA256` as const,
      required: true,
      description: `SHA-256 (hex) of the ${caller}'s mesh token; comma-separated during a rotation (SECURITY.md)`,
    })),
    ...optional.map((caller) => ({
      name: `MESH_CALLER_${caller.toUpperCase()}_SHA256` as const,
      description: `SHA-256 (hex) of the ${caller}'s mesh token, when one calls this service`,
    })),
  ];
}

/** The shared Redis settings (libs/platform/src/redis.ts reads them). */
export const REDIS_ENV = [
  {
    name: "REDIS_URL",
    default: "redis://127.0.0.1:6379",
    secret: true,
    description:
      "standalone, replicated or sentinel Redis; may carry a password (and `rediss:`), which a Redis Cluster's nodes then use too: never logged",
  },
  {
    name: "REDIS_CLUSTER_NODES",
    default: "",
    description:
      "a Redis Cluster instead of REDIS_URL's Redis: some of its nodes, `host:port,…` (the rest are discovered); every script's keys share one slot (docs/architecture.md, Redis keys)",
  },
  {
    name: "REDIS_PREFIX",
    default: "tollgate:",
    description:
      "the deployment's Redis key namespace, the same for every service (quota-meter writes under `<prefix>quota:`, payment-verifier under `<prefix>payment:`)",
  },
  {
    name: "REDIS_STANDIN",
    default: "false",
    description:
      "`true`: Redis unreachable at start-up → in-memory single-node stand-ins (`pnpm start` sets it; one replica only)",
  },
] as const satisfies readonly EnvVar[];

/** The event settings of a service that talks to NATS JetStream (libs/events). */
export const NATS_ENV = [
  {
    name: "NATS_URL",
    default: "nats://127.0.0.1:4222",
    secret: true,
    description:
      "NATS with JetStream: one server, or a cluster's servers separated by commas (may carry credentials: never logged)",
  },
  {
    name: "NATS_STREAM_REPLICAS",
    default: "1",
    description: "replicas of the streams it creates (3 on a NATS cluster)",
  },
  { name: "EVENTS_NAMESPACE", default: "", description: "isolates subjects and streams (tests)" },
] as const satisfies readonly EnvVar[];

/** A publisher's outbox (one directory per process: on Kubernetes a volume of the pod's own). */
export function outboxEnv(service: string) {
  return [
    {
      name: "OUTBOX_DIR",
      default: ".tollgate/outbox",
      description: `events wait in \`OUTBOX_DIR/${service}\` until JetStream acknowledges them; keep it across restarts`,
    },
  ] as const satisfies readonly EnvVar[];
}

/** The PostgreSQL system of record (libs/db reads DATABASE_URL). */
export const DATABASE_ENV = [
  {
    name: "DATABASE_URL",
    required: true,
    secret: true,
    description: "PostgreSQL (`postgres://user:password@host:5432/db`); never logged",
  },
  { name: "DATABASE_POOL_SIZE", default: "5", description: "connections per process" },
  {
    name: "DATABASE_WAIT_MS",
    default: "10000",
    description: "how long start-up waits for its schema (migrations) before serving anyway",
  },
] as const satisfies readonly EnvVar[];

export const OPERATOR_ENV = [
  {
    name: "OPERATOR_TOKEN",
    secret: true,
    description:
      "the admin API's token (one for quota-meter and the settlement worker); unset: admin refused",
  },
] as const satisfies readonly EnvVar[];
