import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { createAdminClient, type Plan } from "@tollgate/cli/clients/quota-admin";
import { contracts, createClient, type Logger } from "@tollgate/platform";
import type { UsageRecord } from "@tollgate/platform/generated/tollgate/quota/v1/UsageRecord";
import { createClient as createRedisClient } from "redis";
import { loadConfig, type QuotaMeterConfig } from "../../services/quota-meter/src/config.ts";
import {
  type QuotaMeterDeps,
  type QuotaMeterHandle,
  startQuotaMeter,
} from "../../services/quota-meter/src/server.ts";
import { eventually } from "../support/eventually.ts";
import { GATEWAY_TOKEN, MESH_CALLERS, MESH_CALLERS_ENV, withEnv } from "../support/mesh.ts";
import { createTestDatabase, type TestDatabase } from "../support/postgres.ts";

export const REDIS_PORT = 6379;
export const NATS_PORT = 4222;

// pino is the platform's logger; the test package reaches it through the platform's own
// dependencies rather than declaring a second copy.
const pino = createRequire(new URL("../../libs/platform/package.json", import.meta.url))("pino").pino as (
  options: object,
  stream?: Writable,
) => Logger;

export function silentLogger(): Logger {
  return pino({ level: process.env.QM_TEST_LOG ?? "silent" });
}

/** A logger whose lines the test can read (and that stays quiet on the console). */
export function capturingLogger(service = "quota-meter"): {
  logger: Logger;
  lines: () => Array<Record<string, unknown>>;
} {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString("utf8").split("\n")) if (line) lines.push(JSON.parse(line));
      cb();
    },
  });
  return { logger: pino({ level: "info", base: { service } }, sink), lines: () => lines };
}

export function uniqueId(label: string): string {
  return `${label}${randomBytes(4).toString("hex")}`;
}

export interface TestMeter {
  handle: QuotaMeterHandle;
  config: QuotaMeterConfig;
  /** Its own database on the machine's PostgreSQL (undefined when the caller passed databaseUrl). */
  database: TestDatabase | undefined;
  meter: ReturnType<typeof meterClient>;
  admin: ReturnType<typeof adminClient>;
  stop(): Promise<void>;
}

export const OPERATOR_TOKEN = "test-operator-token";

/**
 * Starts quota-meter in-process on free ports with its own Redis prefix, NATS namespace,
 * outbox directory and PostgreSQL database, so test files can run side by side on the shared
 * servers. A `databaseUrl` override is the caller's to keep and drop (a restart on the same records).
 */
export async function startTestMeter(
  overrides: Partial<QuotaMeterConfig> = {},
  deps: Pick<QuotaMeterDeps, "now" | "logger" | "onSeeded"> = {},
): Promise<TestMeter> {
  const id = uniqueId("qmt");
  const outboxRoot = mkdtempSync(join(tmpdir(), "qm-outbox-"));
  const database = overrides.databaseUrl ? undefined : await createTestDatabase(id);
  // The defaults of the real reader; the required secrets are set below.
  const defaults = withEnv(
    {
      ...MESH_CALLERS_ENV,
      API_KEY_PEPPER: "unused-pepper-for-defaults",
      DATABASE_URL: "postgres://unused@127.0.0.1:1/unused",
    },
    loadConfig,
  );
  const config: QuotaMeterConfig = {
    ...defaults,
    grpcPort: 0,
    metricsPort: 0,
    host: "127.0.0.1",
    redisUrl: `redis://127.0.0.1:${REDIS_PORT}`,
    redisClusterNodes: [],
    natsUrl: `nats://127.0.0.1:${NATS_PORT}`,
    redisPrefix: `test:${id}:`,
    eventsNamespace: id,
    outboxDir: join(outboxRoot, "quota-meter"),
    operatorToken: OPERATOR_TOKEN,
    apiKeyPepper: "test-pepper",
    // One process per suite: the stand-in may replace an unreachable Redis, as in `pnpm start`.
    redisStandIn: true,
    // Room for the metering round trip on a loaded machine (as the shared mesh has), so suites see
    // metering rather than the fail-open path; the fail-open suites set the budget they test.
    redisBudgetMs: 2_000,
    meshCallers: MESH_CALLERS,
    ...(database ? { databaseUrl: database.url } : {}),
    ...overrides,
  };
  const handle = await startQuotaMeter(config, {
    logger: deps.logger ?? silentLogger(),
    ...(deps.now ? { now: deps.now } : {}),
    ...(deps.onSeeded ? { onSeeded: deps.onSeeded } : {}),
  });
  const addr = `127.0.0.1:${handle.grpcPort}`;
  const meter = meterClient(addr);
  const admin = adminClient(addr, OPERATOR_TOKEN);
  return {
    handle,
    config,
    database,
    meter,
    admin,
    async stop() {
      meter.close();
      admin.close();
      await handle.stop();
      await cleanRedis(config.redisPrefix);
      await deleteStreams(config.eventsNamespace);
      await database?.drop();
      rmSync(outboxRoot, { recursive: true, force: true });
    },
  };
}

/** quota-meter's gRPC API as the gateway calls it (with the gateway's mesh token, unless `token` says otherwise). */
export function meterClient(addr: string, token: string | undefined = GATEWAY_TOKEN) {
  const client = createClient(contracts.quotaMeter().QuotaMeterService, addr, {
    service: "quota-meter",
    defaultDeadlineMs: 10_000,
    token,
  });
  return {
    authorize: (apiKey: string, requestId = uniqueId("req")) =>
      client.call("Authorize", {
        requestId,
        apiKey,
        endpoint: "/api/chain/block-number",
        network: "ethereum",
      }),
    report: (records: UsageRecord[], batchId: string = randomUUID()) =>
      client.call("ReportUsage", { records, batchId }),
    usage: (apiKey: string, days = 7) => client.call("GetUsage", { apiKey, days }),
    raw: client,
    close: () => client.close(),
  };
}

/** quota-meter's own admin adapter, with the shorthands these suites use. */
export function adminClient(addr: string, token: string | undefined) {
  const admin = createAdminClient(addr, token);
  return {
    async account(plan: Plan = {}) {
      const { account } = await admin.createAccount({
        name: uniqueId("acct-"),
        ...(plan.daily !== undefined ? { dailyLimit: plan.daily } : {}),
        ...(plan.monthly !== undefined ? { monthlyLimit: plan.monthly } : {}),
        ...(plan.burst !== undefined ? { burstPerSecond: plan.burst } : {}),
      });
      if (!account) throw new Error("no account");
      return account;
    },
    async key(accountId: string) {
      const created = await admin.createKey(accountId);
      if (!created.key) throw new Error("no key");
      return { keyId: created.key.id, apiKey: created.secret, key: created.key };
    },
    async accountWithKey(plan: Plan = {}) {
      const { account, key, secret } = await admin.quickstart(uniqueId("acct-"), plan);
      return { accountId: account.id, keyId: key.id, apiKey: secret, key };
    },
    update: (
      accountId: string,
      patch: { status?: string; dailyLimit?: number; monthlyLimit?: number; burstPerSecond?: number },
    ) => admin.updateAccount({ accountId, ...patch }),
    get: (accountId: string) => admin.getAccount(accountId),
    list: (accountId: string) => admin.listKeys(accountId),
    revoke: (accountId: string, keyId: string) => admin.revokeKey(accountId, keyId),
    raw: admin,
    close: () => admin.close(),
  };
}

export async function redis() {
  const client = createRedisClient({ url: `redis://127.0.0.1:${REDIS_PORT}` });
  await client.connect();
  return client;
}

export async function cleanRedis(prefix: string): Promise<void> {
  const client = await redis();
  try {
    for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
      if (keys.length > 0) await client.del(keys);
    }
  } finally {
    await client.close();
  }
}

/** Deletes the streams of a test namespace. */
export async function deleteStreams(namespace: string): Promise<void> {
  const nc = await connect({ servers: `nats://127.0.0.1:${NATS_PORT}` });
  try {
    const jsm = await jetstreamManager(nc);
    const suffix = `_${namespace.toUpperCase().replace(/[^A-Z0-9_-]/g, "_")}`;
    for await (const name of jsm.streams.names()) {
      if (name.endsWith(suffix)) await jsm.streams.delete(name);
    }
  } finally {
    await nc.close();
  }
}

/** Metric samples from a /metrics page, summed over the series matching `labels`. */
export async function metric(
  port: number,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      sum += Number(line.split(" ").pop());
  }
  return sum;
}

export async function waitFor<T>(
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 10_000,
  everyMs = 50,
): Promise<T> {
  const value = await eventually(fn, (v) => !!v, timeoutMs, everyMs);
  if (!value) throw new Error(`condition not met within ${timeoutMs} ms`);
  return value;
}
