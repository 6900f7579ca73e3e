// Issue 18, finding 8: no service falls back to a value only safe on a devnet. A missing secret or
// receiver stops the process at startup with one plain line naming the variable (checked on the
// real entry points), and the combinations that would send money to a public key, offer a token on
// the wrong chain, or run replicas without the shared replay guard are refused or off by default
// (checked on each service's configuration reader).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { devAccounts } from "@tollgate/devnet/accounts";
import { REPO_ROOT } from "@tollgate/local";
import { ConfigError, meshCallerEnv } from "@tollgate/platform";
import { describe, expect, it } from "vitest";
import { loadConfig as dashboardConfig } from "../../services/dashboard/src/config.ts";
import { loadConfig as gatewayConfig } from "../../services/gateway/src/config.ts";
import { loadConfig as paymentConfig } from "../../services/payment-verifier/src/config.ts";
import { loadConfig as quotaConfig } from "../../services/quota-meter/src/config.ts";
import { loadConfig as rpcConfig } from "../../services/rpc-proxy/src/config.ts";
import { MESH_CALLERS_ENV, withEnv } from "../support/mesh.ts";

const role = (name: string) => {
  const account = devAccounts().find((a) => a.role === name);
  if (!account) throw new Error(`no devnet account ${name}`);
  return account;
};
const OWN_ADDRESS = `0x${randomBytes(20).toString("hex")}`;
const OWN_KEY = `0x${randomBytes(32).toString("hex")}`;
const LOCAL_RPC = "http://127.0.0.1:8545";
const PUBLIC_RPC = "https://base.node.example/rpc";

/** Every variable these readers look at, unset: a test states exactly what is set. */
const CLEAN: Record<string, undefined> = Object.fromEntries(
  [
    "X402_PAY_TO",
    "X402_NETWORK",
    "X402_ASSET",
    "X402_FACILITATOR_URL",
    "X402_FACILITATOR_PRIVATE_KEY",
    "X402_FACILITATOR_PRIVATE_KEY_FILE",
    "X402_BATCH_AUTHORIZER_PRIVATE_KEY",
    "X402_BATCH_AUTHORIZER_PRIVATE_KEY_FILE",
    "PAYMENT_SCHEMES",
    "X402_SETTLEMENT_RPC_URL",
    "MPP_SECRET_KEY",
    "MPP_SECRET_KEY_FILE",
    "MPP_TEMPO_RPC_URL",
    "MPP_SERVER_PRIVATE_KEY",
    "MPP_SERVER_PRIVATE_KEY_FILE",
    "MPP_PAY_TO",
    "API_KEY_PEPPER",
    "API_KEY_PEPPER_FILE",
    "DATABASE_URL",
    "DATABASE_URL_FILE",
    "MESH_TOKEN",
    "MESH_TOKEN_FILE",
    "REDIS_STANDIN",
    "NODE_ENV",
    "SIGN_UP",
    "DASHBOARD_PUBLIC_URL",
    meshCallerEnv("gateway"),
    meshCallerEnv("dashboard"),
  ].map((k) => [k, undefined]),
);

/** The refusal a reader throws (or undefined when it accepts the environment). */
function refusal(load: () => unknown, env: Record<string, string>): string | undefined {
  try {
    withEnv({ ...CLEAN, ...env }, load);
    return undefined;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.message;
  }
}

/** Starts a service's entry point with only `env` (and PATH) and collects what it printed before it exited. */
function run(service: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; lines: string[] }>((resolve, reject) => {
    const child = spawn(process.execPath, [`services/${service}/src/main.ts`], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? "", BIND_HOST: "127.0.0.1", GRPC_PORT: "0", PORT: "0", ...env },
    });
    let output = "";
    child.stdout.on("data", (d) => {
      output += d;
    });
    child.stderr.on("data", (d) => {
      output += d;
    });
    // time-based: the deadline by which the service must have refused to start, failing the test.
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${service} kept running:\n${output}`));
      // From sources a service loads 1,000-3,900 modules before it reads its config: on a loaded
      // 2-core machine (the whole suite beside it) that alone has taken more than 20 s.
    }, 45_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, lines: output.split("\n").filter((l) => l.trim() !== "") });
    });
  });
}

/** A database URL for readers that need one (nothing connects to it here). */
const DB = { DATABASE_URL: "postgres://tollgate@127.0.0.1:5432/tollgate" };

const MPP_ENV = {
  MPP_SECRET_KEY: randomBytes(32).toString("base64"),
  MPP_TEMPO_RPC_URL: "https://tempo.node.example/rpc",
  MPP_SERVER_PRIVATE_KEY: `0x${randomBytes(32).toString("hex")}`,
};

const PAYMENT_ENV = {
  ...MESH_CALLERS_ENV,
  X402_BATCH_AUTHORIZER_PRIVATE_KEY: `0x${randomBytes(32).toString("hex")}`,
  X402_FACILITATOR_PRIVATE_KEY: OWN_KEY,
  X402_SETTLEMENT_RPC_URL: PUBLIC_RPC,
  ...MPP_ENV,
};

describe("a service refuses to start without what has no safe default (one line naming it, exit 1)", () => {
  it.each([
    ["payment-verifier", "X402_PAY_TO", PAYMENT_ENV],
    ["quota-meter", "API_KEY_PEPPER", { ...MESH_CALLERS_ENV, ...DB }],
    ["quota-meter", meshCallerEnv("gateway"), { ...DB, API_KEY_PEPPER: randomBytes(32).toString("hex") }],
    ["quota-meter", "DATABASE_URL", { ...MESH_CALLERS_ENV, API_KEY_PEPPER: randomBytes(32).toString("hex") }],
    ["settlement-worker", "DATABASE_URL", {}],
    ["rpc-proxy", meshCallerEnv("gateway"), {}],
    ["gateway", "MESH_TOKEN", {}],
    ["dashboard", "MESH_TOKEN", {}],
  ] as const)("%s without %s", async (service, variable, env) => {
    const { code, lines } = await run(service, env);
    expect(code).toBe(1);
    expect(lines, lines.join("\n")).toHaveLength(1);
    const line = JSON.parse(lines[0] ?? "{}") as { level: number; msg: string };
    expect(line.level).toBe(60);
    expect(line.msg).toMatch(new RegExp(`^configuration error: ${variable} `));
    expect(line.msg).not.toMatch(/\n\s+at /);
  });
});

describe("dashboard: the origin sign-in is bound to and the sign-up switch", () => {
  const token = { MESH_TOKEN: randomBytes(32).toString("hex") };
  it("refuses a DASHBOARD_PUBLIC_URL that is not an http(s) origin (the manifests' SET-ME included)", () => {
    expect(refusal(dashboardConfig, { ...token, DASHBOARD_PUBLIC_URL: "SET-ME" })).toMatch(
      /^DASHBOARD_PUBLIC_URL /,
    );
    expect(refusal(dashboardConfig, { ...token, DASHBOARD_PUBLIC_URL: "https://d.example/app" })).toMatch(
      /^DASHBOARD_PUBLIC_URL /,
    );
    expect(refusal(dashboardConfig, { ...token, DASHBOARD_PUBLIC_URL: "https://d.example" })).toBeUndefined();
  });

  it("takes SIGN_UP as open or closed only", () => {
    expect(refusal(dashboardConfig, { ...token, SIGN_UP: "maybe" })).toMatch(
      /^SIGN_UP must be "open" or "closed"/,
    );
    expect(withEnv({ ...CLEAN, ...token, SIGN_UP: "closed" }, dashboardConfig).signUpOpen).toBe(false);
    expect(withEnv({ ...CLEAN, ...token }, dashboardConfig).signUpOpen).toBe(true);
  });
});

describe("payment-verifier: receiver and settlement", () => {
  it("has no default x402-batch authorizer key: offering x402-batch needs X402_BATCH_AUTHORIZER_PRIVATE_KEY", () => {
    const { X402_BATCH_AUTHORIZER_PRIVATE_KEY: _, ...withoutKey } = PAYMENT_ENV;
    const env = { ...withoutKey, X402_PAY_TO: OWN_ADDRESS };
    expect(refusal(paymentConfig, env)).toMatch(/^X402_BATCH_AUTHORIZER_PRIVATE_KEY is not set/);
    expect(refusal(paymentConfig, { ...env, PAYMENT_SCHEMES: "exact" })).toBeUndefined();
    expect(refusal(paymentConfig, { ...env, PAYMENT_SCHEMES: "exact,dice" })).toMatch(
      /^PAYMENT_SCHEMES: unknown scheme "dice"/,
    );
  });

  it("has no default MPP challenge secret: offering MPP needs MPP_SECRET_KEY of at least 32 bytes, and mpp-session the operator key", () => {
    const env = { ...PAYMENT_ENV, X402_PAY_TO: OWN_ADDRESS };
    const { MPP_SECRET_KEY: _, ...withoutSecret } = env;
    expect(refusal(paymentConfig, withoutSecret)).toMatch(
      /^MPP_SECRET_KEY \(or MPP_SECRET_KEY_FILE\) is not set/,
    );
    expect(refusal(paymentConfig, { ...env, MPP_SECRET_KEY: "too-short" })).toMatch(
      /^MPP_SECRET_KEY is shorter than 32 bytes/,
    );
    const { MPP_SERVER_PRIVATE_KEY: __, ...withoutKey } = env;
    expect(refusal(paymentConfig, withoutKey)).toMatch(/^MPP_SERVER_PRIVATE_KEY .* is not set/);
    expect(refusal(paymentConfig, { ...withoutKey, PAYMENT_SCHEMES: "exact,mpp-charge" })).toBeUndefined();
    expect(refusal(paymentConfig, { ...withoutSecret, PAYMENT_SCHEMES: "exact,x402-batch" })).toBeUndefined();
    expect(refusal(paymentConfig, { ...env, MPP_TEMPO_RPC_URL: "http://tempo.node.example" })).toMatch(
      /^MPP_TEMPO_RPC_URL must be https/,
    );
  });

  it("refuses a public development account as MPP receiver or channel operator unless the Tempo chain is on this machine", () => {
    const env = { ...PAYMENT_ENV, X402_PAY_TO: OWN_ADDRESS };
    const devPayTo = role("payTo").address;
    const devKey = role("facilitator").privateKey;
    expect(refusal(paymentConfig, { ...env, MPP_PAY_TO: devPayTo })).toMatch(
      /^MPP_PAY_TO is a public development account/,
    );
    expect(refusal(paymentConfig, { ...env, MPP_SERVER_PRIVATE_KEY: devKey })).toMatch(
      /^MPP_SERVER_PRIVATE_KEY is a public development key/,
    );
    const local = { ...env, MPP_TEMPO_RPC_URL: LOCAL_RPC };
    expect(
      refusal(paymentConfig, { ...local, MPP_PAY_TO: devPayTo, MPP_SERVER_PRIVATE_KEY: devKey }),
    ).toBeUndefined();
  });

  it("has no default receiver (X402_PAY_TO) and no NODE_ENV switch around that", () => {
    expect(refusal(paymentConfig, PAYMENT_ENV)).toMatch(/^X402_PAY_TO is not set/);
    expect(refusal(paymentConfig, { ...PAYMENT_ENV, NODE_ENV: "development" })).toMatch(/^X402_PAY_TO/);
    expect(refusal(paymentConfig, { ...PAYMENT_ENV, X402_PAY_TO: OWN_ADDRESS })).toBeUndefined();
  });

  it("refuses a public development account as receiver unless the settlement chain is on this machine", () => {
    const devPayTo = role("payTo").address;
    const remote = {
      ...MESH_CALLERS_ENV,
      X402_PAY_TO: devPayTo,
      X402_FACILITATOR_URL: "https://x402.example",
    };
    expect(refusal(paymentConfig, remote)).toMatch(/^X402_PAY_TO is a public development account/);
    expect(refusal(paymentConfig, { ...PAYMENT_ENV, X402_PAY_TO: devPayTo })).toMatch(
      /^X402_PAY_TO is a public/,
    );
    // The embedded default: a devnet settlement chain on loopback (MPP's receiver defaults to
    // X402_PAY_TO: on a Tempo chain elsewhere it must be one's own).
    const local = { ...PAYMENT_ENV, X402_PAY_TO: devPayTo, X402_SETTLEMENT_RPC_URL: LOCAL_RPC };
    expect(refusal(paymentConfig, local)).toMatch(/^MPP_PAY_TO is a public development account/);
    expect(refusal(paymentConfig, { ...local, MPP_PAY_TO: OWN_ADDRESS })).toBeUndefined();
  });

  it("refuses a public development key as settlement signer off this machine", () => {
    const env = {
      ...PAYMENT_ENV,
      X402_PAY_TO: OWN_ADDRESS,
      X402_FACILITATOR_PRIVATE_KEY: role("facilitator").privateKey,
    };
    expect(refusal(paymentConfig, env)).toMatch(/^X402_FACILITATOR_PRIVATE_KEY is a public development key/);
    expect(refusal(paymentConfig, { ...env, X402_SETTLEMENT_RPC_URL: LOCAL_RPC })).toBeUndefined();
  });

  it("takes X402_NETWORK and X402_ASSET together: both unset is Base mainnet USDC, one alone is refused", () => {
    const env = { ...PAYMENT_ENV, X402_PAY_TO: OWN_ADDRESS };
    const base = withEnv({ ...CLEAN, ...env }, paymentConfig).x402;
    expect([base.network, base.asset]).toEqual(["eip155:8453", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"]);
    expect(refusal(paymentConfig, { ...env, X402_NETWORK: "eip155:84532" })).toMatch(
      /^X402_ASSET is not set/,
    );
    expect(refusal(paymentConfig, { ...env, X402_ASSET: OWN_ADDRESS })).toMatch(/^X402_NETWORK is not set/);
    expect(
      refusal(paymentConfig, { ...env, X402_NETWORK: "eip155:84532", X402_ASSET: OWN_ADDRESS }),
    ).toBeUndefined();
  });

  it("talks to a remote facilitator over https only, and never with user:password in its URL", () => {
    const env = { ...MESH_CALLERS_ENV, X402_PAY_TO: OWN_ADDRESS, PAYMENT_SCHEMES: "exact" };
    expect(refusal(paymentConfig, { ...env, X402_FACILITATOR_URL: "http://x402.example" })).toMatch(
      /must be https/,
    );
    expect(refusal(paymentConfig, { ...env, X402_FACILITATOR_URL: "https://u:p@x402.example" })).toMatch(
      /must not carry user:password/,
    );
    expect(refusal(paymentConfig, { ...env, X402_FACILITATOR_URL: "http://127.0.0.1:4021" })).toBeUndefined();
  });

  it("waits for Redis by default instead of serving payments without the shared replay guard", () => {
    expect(withEnv({ ...CLEAN, ...PAYMENT_ENV, X402_PAY_TO: OWN_ADDRESS }, paymentConfig).redisStandIn).toBe(
      false,
    );
  });
});

describe("quota-meter, gateway, rpc-proxy", () => {
  const pepper = randomBytes(32).toString("hex");

  it("quota-meter has no public pepper: unset or short is refused", () => {
    expect(refusal(quotaConfig, { ...MESH_CALLERS_ENV, ...DB })).toMatch(
      /^API_KEY_PEPPER \(or API_KEY_PEPPER_FILE\) is not set/,
    );
    expect(refusal(quotaConfig, { ...MESH_CALLERS_ENV, ...DB, API_KEY_PEPPER: "short" })).toMatch(
      /^API_KEY_PEPPER is shorter/,
    );
    expect(refusal(quotaConfig, { ...MESH_CALLERS_ENV, ...DB, API_KEY_PEPPER: pepper })).toBeUndefined();
  });

  it("quota-meter has no default database: DATABASE_URL unset or not postgres:// is refused", () => {
    const env = { ...MESH_CALLERS_ENV, API_KEY_PEPPER: pepper };
    expect(refusal(quotaConfig, env)).toMatch(/^DATABASE_URL \(or DATABASE_URL_FILE\) is not set/);
    expect(refusal(quotaConfig, { ...env, DATABASE_URL: "mysql://db/x" })).toMatch(
      /^DATABASE_URL must be a postgres/,
    );
  });

  it("quota-meter keeps private in-memory counters off by default (replicas would each grant the plan)", () => {
    expect(
      withEnv({ ...CLEAN, ...MESH_CALLERS_ENV, ...DB, API_KEY_PEPPER: pepper }, quotaConfig).redisStandIn,
    ).toBe(false);
  });

  it("every service needs its mesh credentials, well formed", () => {
    expect(refusal(rpcConfig, {})).toMatch(/^MESH_CALLER_GATEWAY_SHA256 is not set/);
    expect(refusal(rpcConfig, { [meshCallerEnv("gateway")]: "not-a-digest" })).toMatch(
      /SHA-256 digests in hex/,
    );
    expect(refusal(rpcConfig, { ...MESH_CALLERS_ENV })).toBeUndefined();
    expect(refusal(gatewayConfig, {})).toMatch(/^MESH_TOKEN \(or MESH_TOKEN_FILE\) is not set/);
    expect(refusal(gatewayConfig, { MESH_TOKEN: "short" })).toMatch(/^MESH_TOKEN is shorter/);
    expect(refusal(gatewayConfig, { MESH_TOKEN: randomBytes(32).toString("hex") })).toBeUndefined();
  });

  it("the gateway refuses a gRPC deadline longer than a connection's end waits for (60 s), naming it", () => {
    const MESH_TOKEN = randomBytes(32).toString("hex");
    expect(refusal(gatewayConfig, { MESH_TOKEN, SETTLE_DEADLINE_MS: "60001" })).toBe(
      "SETTLE_DEADLINE_MS must be between 1 and 60000 ms, got 60001",
    );
    expect(refusal(gatewayConfig, { MESH_TOKEN, EXECUTE_DEADLINE_MS: "0" })).toMatch(/^EXECUTE_DEADLINE_MS /);
    expect(refusal(gatewayConfig, { MESH_TOKEN, VERIFY_DEADLINE_MS: "60000" })).toBeUndefined();
  });
});
