// A dashboard in front of a quota-meter, both in-process on the machine's Redis and PostgreSQL,
// with their log lines captured; wallets that sign in through the JSON API as a browser would.
import { randomBytes } from "node:crypto";
import { generateMeshToken, meshTokenDigest } from "@tollgate/platform";
import type { Hex } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { type DashboardConfig, loadConfig } from "../../services/dashboard/src/config.ts";
import { type DashboardDeps, startDashboard } from "../../services/dashboard/src/server.ts";
import type { QuotaMeterConfig } from "../../services/quota-meter/src/config.ts";
import { capturingLogger, cleanRedis, startTestMeter, type TestMeter } from "../quota-meter/helpers.ts";
import { MESH_CALLERS, withEnv } from "../support/mesh.ts";

export const DASHBOARD_TOKEN = generateMeshToken();

export interface TestDashboard {
  url: string;
  /** The Redis prefix of this dashboard; `another` may take one below it (cleaned up with it). */
  prefix: string;
  meter: TestMeter;
  /** Every log line of quota-meter and the dashboard, in order. */
  logLines(): Array<Record<string, unknown>>;
  /** Another dashboard on the same quota-meter and Redis (e.g. sign-up closed). */
  another(
    overrides: Partial<DashboardConfig>,
    deps?: Partial<DashboardDeps>,
  ): Promise<{ url: string; stop(): Promise<void> }>;
  stop(): Promise<void>;
}

export async function startTestDashboard(
  overrides: Partial<DashboardConfig> = {},
  deps: Partial<DashboardDeps> = {},
  meterOverrides: Partial<QuotaMeterConfig> = {},
): Promise<TestDashboard> {
  const meterLog = capturingLogger("quota-meter");
  const dashLog = capturingLogger("dashboard");
  const meter = await startTestMeter(
    { meshCallers: { ...MESH_CALLERS, dashboard: [meshTokenDigest(DASHBOARD_TOKEN)] }, ...meterOverrides },
    { logger: meterLog.logger },
  );
  const prefix = `test:dash${randomBytes(4).toString("hex")}:`;
  const base = withEnv({ MESH_TOKEN: DASHBOARD_TOKEN }, loadConfig);
  const configOf = (o: Partial<DashboardConfig>): DashboardConfig => ({
    ...base,
    host: "127.0.0.1",
    port: 0,
    metricsPort: 0,
    quotaMeterAddr: `127.0.0.1:${meter.handle.grpcPort}`,
    redisUrl: "redis://127.0.0.1:6379",
    redisClusterNodes: [],
    redisPrefix: prefix,
    chainRpcUrl: undefined,
    // Every suite signs in many wallets from 127.0.0.1; the limits have tests of their own.
    noncesPerMinute: 10_000,
    signUpsPerHour: 10_000,
    ...o,
  });
  const started: Array<{ stop(): Promise<void> }> = [];
  const start = async (o: Partial<DashboardConfig>, d: Partial<DashboardDeps>) => {
    const handle = await startDashboard(configOf({ ...overrides, ...o }), {
      logger: dashLog.logger,
      ...deps,
      ...d,
    });
    started.push(handle);
    return handle;
  };
  const main = await start({}, {});
  return {
    url: main.url,
    prefix,
    meter,
    logLines: () => [...meterLog.lines(), ...dashLog.lines()],
    another: (o, d = {}) => start(o, d),
    async stop() {
      for (const h of started) await h.stop();
      await cleanRedis(prefix);
      await meter.stop();
    },
  };
}

// biome-ignore lint/suspicious/noExplicitAny: JSON answers are walked by key in assertions
type Json = any;

/** A browser-like client of one dashboard: its cookie jar and the session's CSRF token. */
export class Wallet {
  readonly base: string;
  readonly account: PrivateKeyAccount;
  cookie = "";
  csrf = "";
  /** Sent with every call (e.g. the X-Forwarded-For of a client behind the dashboard's proxy). */
  headers: Record<string, string> = {};
  /** Everything secret this wallet saw (keys, session ids, CSRF tokens, signatures): never logged. */
  readonly secrets: string[] = [];
  constructor(base: string, account: PrivateKeyAccount = privateKeyToAccount(generatePrivateKey())) {
    this.base = base;
    this.account = account;
  }

  async call(
    method: "GET" | "POST",
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: Json; headers: Headers }> {
    const res = await fetch(`${this.base}/api/dashboard${path}`, {
      method,
      headers: {
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...(this.cookie ? { cookie: this.cookie } : {}),
        ...(this.csrf && method === "POST" ? { "x-csrf-token": this.csrf } : {}),
        ...this.headers,
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const setCookie = res.headers.get("set-cookie");
    if (setCookie) {
      this.cookie = setCookie.split(";")[0] ?? "";
      const id = this.cookie.split("=")[1];
      if (id) this.secrets.push(id);
    }
    const json: Json = await res.json();
    if (typeof json?.data?.secret === "string") this.secrets.push(json.data.secret);
    if (typeof json?.data?.csrf_token === "string") this.secrets.push(json.data.csrf_token);
    return { status: res.status, body: json, headers: res.headers };
  }

  /** The message to sign and the wallet's signature of it. */
  async signed(): Promise<{ message: string; signature: Hex }> {
    const nonce = await this.call("POST", "/nonce", { address: this.account.address });
    if (nonce.status !== 200) throw new Error(`nonce: ${nonce.status} ${JSON.stringify(nonce.body)}`);
    const message = nonce.body.data.message as string;
    const signature = await this.account.signMessage({ message });
    this.secrets.push(signature);
    return { message, signature };
  }

  async signIn() {
    const signed = await this.signed();
    const res = await this.call("POST", "/sign-in", signed);
    if (res.status === 200) this.csrf = res.body.data.csrf_token;
    return res;
  }
}
