import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  closeRedis,
  connectRedis,
  isCluster,
  type Logger,
  onEveryMaster,
  type prom,
  type Redis,
  slotTags,
} from "@tollgate/platform";
import type { Windows } from "../windows.ts";
import {
  type AccountRecord,
  AUTHORIZATION_MEMORY_MS,
  type AuthorizeOutcome,
  type AuthorizeQuery,
  CopyNotReady,
  type CreditEntry,
  type CreditLeaseUse,
  type KeyRecord,
  type LeaseReturn,
  type OpenCreditLease,
  type QuotaStore,
  type Refund,
  USAGE_RETENTION_MS,
  type UsageOutcome,
  type UsageQuery,
  type UsageTotal,
  type WindowCount,
} from "./types.ts";

interface Script {
  name: string;
  source: string;
  sha: string;
}

const lua = (name: string) => readFileSync(new URL(`./${name}.lua`, import.meta.url), "utf8");

/** A script, with the shared Lua it needs (guard.lua: key lookup, burst guard) in front. */
function script(name: string, preamble = ""): Script {
  const source = `${preamble}${lua(name)}`;
  return { name, source, sha: createHash("sha1").update(source).digest("hex") };
}

const GUARD = lua("guard");
const CLOSE_CREDIT_LEASE = lua("credit-lease-close");
const AUTHORIZE = script("authorize", GUARD + CLOSE_CREDIT_LEASE);
const READ_USAGE = script("read-usage", GUARD);
const REFUND = script("refund");
const LEASE_RETURN = script("lease-return");
const RELEASE = script("release");
const USAGE_MAX = script("usage-max");
const CREDIT_APPLY = script("credit-apply");
const CREDIT_LEASE_RETURN = script("credit-lease-return", CLOSE_CREDIT_LEASE);
const CREDIT_LEASE_USE = script("credit-lease-use");
const CREDIT_LEASE_EXPIRE = script("credit-lease-expire");
const READ_CREDITS = script("read-credits");

const DECISIONS: AuthorizeOutcome["decision"][] = [
  "allow",
  "invalid_key",
  "subscription_inactive",
  "daily_limit_exceeded",
  "monthly_limit_exceeded",
  "rate_limited",
  "released",
  "allow",
  "no_account",
  "no_credits",
  "unseeded",
];

const USAGE_DECISIONS: Record<number, UsageOutcome["decision"]> = {
  0: "allow",
  1: "invalid_key",
  2: "subscription_inactive",
  5: "rate_limited",
};

type Client = Redis;

export interface RedisStoreOptions {
  url: string;
  /** A Redis Cluster's nodes instead of `url`'s Redis (REDIS_CLUSTER_NODES). */
  clusterNodes?: readonly string[];
  /** Prefix of every key (`<REDIS_PREFIX>quota:`). */
  prefix: string;
  logger: Logger;
  /** Redis round-trip latency, by script. */
  latency?: prom.Histogram<string>;
}

/**
 * Opens the Redis store (the platform's connector: commands never queue while disconnected, so the
 * hot path never waits on a reconnect, and the client reconnects on its own). Resolves undefined
 * when Redis cannot be reached within `connectTimeoutMs` and `giveUp` is set (the caller then uses
 * the stand-in); otherwise serves, failing open, until Redis answers.
 */
export async function openRedisStore(
  opts: RedisStoreOptions & { connectTimeoutMs: number; giveUp: boolean },
): Promise<RedisStore | undefined> {
  const client = await connectRedis({
    url: opts.url,
    ...(opts.clusterNodes ? { clusterNodes: opts.clusterNodes } : {}),
    logger: opts.logger,
    connectTimeoutMs: opts.connectTimeoutMs,
    unreachable: opts.giveUp ? "give-up" : "background",
    // Load the scripts so the hot path's EVALSHA hits (e.g. after a Redis restart); on a cluster
    // on every master (a failover's new master loads them at its first NOSCRIPT).
    onReady: (c) => {
      void onEveryMaster(c, async (node) => {
        for (const s of [AUTHORIZE, READ_USAGE, REFUND, LEASE_RETURN, RELEASE, USAGE_MAX, CREDIT_APPLY])
          await node.scriptLoad(s.source);
      }).catch(() => undefined);
    },
  });
  return client ? new RedisStore(client, opts) : undefined;
}

const num = (v: unknown): number => (v === null || v === undefined || v === "" ? 0 : Number(v));
const str = (v: unknown): string => (v === null || v === undefined ? "" : String(v));

export class RedisStore implements QuotaStore {
  readonly kind = "redis";
  readonly #client: Client;
  readonly #p: string;
  readonly #latency: prom.Histogram<string> | undefined;
  /** A key of the scripts' slot, sent as KEYS[1] so a Redis Cluster routes each script there. */
  readonly #route: string[];
  #held = false;

  constructor(client: Client, opts: RedisStoreOptions) {
    this.#client = client;
    // The scripts derive their key names (from the API key's hash: its account, its windows, its
    // credit leases): on a Redis Cluster every quota key carries one hash tag, `{quota}`, so each
    // script's keys are in one slot (docs/architecture.md, Redis keys); on a single Redis none.
    this.#p = `${opts.prefix}${isCluster(client) ? `${slotTags(client)("quota", "hot-copy")}:` : ""}`;
    this.#route = [`${this.#p}seeded`];
    this.#latency = opts.latency;
  }

  /** Whether a command can be sent now (connected, not reconnecting) and the copy is complete. */
  isReady(): boolean {
    return this.#client.isReady && !this.#held;
  }

  async #eval(s: Script, args: string[]): Promise<unknown> {
    const end = this.#latency?.startTimer({ op: s.name });
    try {
      return await this.#client.evalSha(s.sha, { keys: this.#route, arguments: args });
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
      return await this.#client.eval(s.source, { keys: this.#route, arguments: args });
    } finally {
      end?.();
    }
  }

  async authorize(q: AuthorizeQuery): Promise<AuthorizeOutcome> {
    const reply = (await this.#eval(AUTHORIZE, [
      this.#p,
      q.keyHash.toString("hex"),
      String(q.nowMs),
      q.windows.day,
      q.windows.month,
      String(q.windows.dayTtlMs),
      String(q.windows.monthTtlMs),
      String(q.defaultBurst),
      String(Math.max(1, Math.floor(q.units))),
      q.authorizationId,
      String(AUTHORIZATION_MEMORY_MS),
      String(Math.max(0, Math.floor(q.priceAtomic))),
      q.wallet,
      String(Math.floor(q.creditLeaseSettleAt)),
      q.closeCreditLease?.leaseId ?? "",
      String(Math.floor(q.closeCreditLease?.creditsLeft ?? 0)),
      String(Math.max(1, Math.floor(q.calls))),
    ])) as unknown[];
    const stored = str(reply[4]);
    const code = num(reply[0]);
    return {
      ...(code === 7
        ? { credits: { drawn: num(reply[10]), remaining: num(reply[11]), epoch: str(reply[12]) } }
        : reply.length > 11
          ? { balance: num(reply[11]) }
          : {}),
      units: num(reply[9]),
      decision: DECISIONS[num(reply[0])] ?? "invalid_key",
      keyId: str(reply[1]),
      accountId: str(reply[2]),
      status: str(reply[3]),
      storedHash: stored ? Buffer.from(stored, "hex") : undefined,
      dayUsed: num(reply[5]),
      monthUsed: num(reply[6]),
      dayLimit: num(reply[7]),
      monthLimit: num(reply[8]),
    };
  }

  async returnLease(l: LeaseReturn, dedupeTtlMs: number): Promise<boolean> {
    const reply = await this.#eval(LEASE_RETURN, [
      this.#p,
      l.leaseId,
      l.accountId,
      l.day,
      l.month,
      String(l.units),
      String(dedupeTtlMs),
    ]);
    return num(reply) === 1;
  }

  async release(authorizationId: string, dedupeTtlMs: number): Promise<boolean> {
    const reply = await this.#eval(RELEASE, [
      this.#p,
      authorizationId,
      String(dedupeTtlMs),
      String(AUTHORIZATION_MEMORY_MS),
    ]);
    return num(reply) === 1;
  }

  async refund(r: Refund, dedupeTtlMs: number): Promise<boolean> {
    const reply = await this.#eval(REFUND, [
      this.#p,
      r.requestId,
      r.accountId,
      r.day,
      r.month,
      String(dedupeTtlMs),
      String(r.credits?.drawn ?? 0),
      r.credits?.epoch ?? "",
      r.credits?.lease ?? "",
    ]);
    return num(reply) === 1;
  }

  async returnCreditLease(leaseId: string, creditsLeft: number): Promise<boolean> {
    const reply = await this.#eval(CREDIT_LEASE_RETURN, [this.#p, leaseId, String(Math.floor(creditsLeft))]);
    return num(reply) === 1;
  }

  async useCreditLeases(batchId: string, uses: CreditLeaseUse[], dedupeTtlMs: number): Promise<boolean> {
    if (uses.length === 0) return false;
    const reply = await this.#eval(CREDIT_LEASE_USE, [
      this.#p,
      batchId,
      String(dedupeTtlMs),
      ...uses.flatMap((u) => [u.leaseId, String(Math.floor(u.credits))]),
    ]);
    return num(reply) === 1;
  }

  async expireCreditLeases(nowMs: number, limit: number): Promise<number> {
    const reply = await this.#eval(CREDIT_LEASE_EXPIRE, [
      this.#p,
      String(Math.floor(nowMs)),
      String(limit),
      String(AUTHORIZATION_MEMORY_MS),
    ]);
    return num(reply);
  }

  async bindWallet(address: string, accountId: string): Promise<void> {
    await this.#client.hSet(`${this.#p}wallets`, address, accountId);
  }

  async applyCredits(entries: CreditEntry[], dedupeTtlMs: number): Promise<number[]> {
    if (entries.length === 0) return [];
    const reply = (await this.#eval(CREDIT_APPLY, [
      this.#p,
      String(dedupeTtlMs),
      ...entries.flatMap((e) => [e.cause, e.accountId, String(Math.trunc(e.delta)), e.generation]),
    ])) as unknown[];
    if (reply[0] === "unseeded") throw new CopyNotReady();
    return reply.map(num);
  }

  async setCredits(balances: Array<{ accountId: string; balance: number }>): Promise<void> {
    if (balances.length === 0) return;
    await this.#client.mSet(balances.map((b) => [`${this.#p}c:${b.accountId}`, String(b.balance)]));
  }

  async readCredits(accountId: string): Promise<number> {
    return num(await this.#client.get(`${this.#p}c:${accountId}`));
  }

  async readShownCredits(accountId: string): Promise<number> {
    return num(await this.#eval(READ_CREDITS, [this.#p, accountId]));
  }

  /** The leases in the account's set whose hash is still there (read-credits.lua's reading). */
  async openCreditLeases(accountId: string): Promise<OpenCreditLease[]> {
    const ids = (await this.#client.sMembers(`${this.#p}cla:${accountId}`)).sort();
    if (ids.length === 0) return [];
    const multi = this.#client.multi();
    for (const id of ids) multi.hmGet(`${this.#p}cl:${id}`, ["amount", "used"]);
    const rows = (await multi.exec()) as unknown as Array<Array<string | null>>;
    return ids.flatMap((id, i) => {
      const [amount, used] = rows[i] ?? [];
      return amount == null ? [] : [{ id, amount: num(amount), used: num(used) }];
    });
  }

  async createAccount(a: AccountRecord): Promise<void> {
    await this.#client.hSet(`${this.#p}acct:${a.id}`, {
      id: a.id,
      name: a.name,
      status: a.status,
      daily: String(a.dailyLimit),
      monthly: String(a.monthlyLimit),
      burst: String(a.burstPerSecond),
      plan: a.plan,
      created: a.createdAt,
      creditsOnly: a.creditsOnly ? "1" : "0",
    });
  }

  async createKey(k: KeyRecord, hash: Buffer): Promise<boolean> {
    if (!(await this.#client.exists(`${this.#p}acct:${k.accountId}`))) return false;
    const hex = hash.toString("hex");
    await this.#client
      .multi()
      .hSet(`${this.#p}key:${k.id}`, {
        id: k.id,
        account: k.accountId,
        prefix: k.prefix,
        created: k.createdAt,
        revoked: "",
        hash: hex,
      })
      .hSet(`${this.#p}keys`, hex, `${k.id}:${k.accountId}`)
      .exec();
    return true;
  }

  async #key(keyId: string): Promise<(KeyRecord & { hash: string }) | undefined> {
    const h = (await this.#client.hGetAll(`${this.#p}key:${keyId}`)) as Record<string, string>;
    if (!h.id) return undefined;
    return {
      id: h.id,
      accountId: str(h.account),
      prefix: str(h.prefix),
      createdAt: str(h.created),
      revokedAt: str(h.revoked),
      lastUsedAt: "",
      hash: str(h.hash),
    };
  }

  async revokeKey(accountId: string, keyId: string, at: string): Promise<KeyRecord | undefined> {
    const key = await this.#key(keyId);
    if (!key || key.accountId !== accountId) return undefined;
    const { hash, ...record } = key;
    if (record.revokedAt) return record;
    await this.#client
      .multi()
      .hSet(`${this.#p}key:${keyId}`, "revoked", at)
      .hDel(`${this.#p}keys`, hash)
      .exec();
    return { ...record, revokedAt: at };
  }

  async mergeUsage(totals: UsageTotal[]): Promise<void> {
    if (totals.length === 0) return;
    await this.#eval(USAGE_MAX, [
      this.#p,
      String(USAGE_RETENTION_MS),
      ...totals.flatMap((t) => [t.accountId, t.day, String(t.requests), String(t.errors)]),
    ]);
  }

  async seedMark(): Promise<string | null> {
    return (await this.#client.get(`${this.#p}seeded`)) as string | null;
  }

  async setSeedMark(mark: string): Promise<void> {
    await this.#client.set(`${this.#p}seeded`, mark);
  }

  async lockSeeding(owner: string, ttlMs: number): Promise<boolean> {
    const taken = await this.#client.set(`${this.#p}seeding`, owner, {
      condition: "NX",
      expiration: { type: "PX", value: ttlMs },
    });
    // Held by this owner already: an earlier taking whose answer was lost (Redis ran it, then the
    // link dropped), which would otherwise keep every replica, this one too, waiting out its TTL.
    return taken === "OK" || (await this.#client.get(`${this.#p}seeding`)) === owner;
  }

  async unlockSeeding(owner: string): Promise<void> {
    if ((await this.#client.get(`${this.#p}seeding`)) === owner) await this.#client.del(`${this.#p}seeding`);
  }

  hold(held: boolean): void {
    this.#held = held;
  }

  onConnect(listener: () => void): void {
    this.#client.on("ready", listener);
  }

  async restoreWindows(counts: WindowCount[]): Promise<void> {
    await Promise.all(
      counts.map((c) =>
        this.#client.set(
          `${this.#p}${c.kind === "day" ? "d" : "m"}:${c.accountId}:${c.window}`,
          String(c.count),
          {
            condition: "NX",
            expiration: { type: "PX", value: Math.max(1, Math.round(c.ttlMs)) },
          },
        ),
      ),
    );
  }

  async readUsage(q: UsageQuery): Promise<UsageOutcome> {
    const reply = (await this.#eval(READ_USAGE, [
      this.#p,
      q.keyHash.toString("hex"),
      String(q.nowMs),
      q.windows.day,
      q.windows.month,
      String(q.defaultBurst),
      ...q.days,
    ])) as unknown[];
    const stored = str(reply[4]);
    const allowed = num(reply[0]) === 0;
    return {
      decision: USAGE_DECISIONS[num(reply[0])] ?? "invalid_key",
      keyId: str(reply[1]),
      accountId: str(reply[2]),
      storedHash: stored ? Buffer.from(stored, "hex") : undefined,
      days: allowed
        ? q.days.map((day, i) => ({ day, requests: num(reply[9 + 2 * i]), errors: num(reply[10 + 2 * i]) }))
        : [],
      dayUsed: num(reply[5]),
      monthUsed: num(reply[6]),
      dayLimit: num(reply[7]),
      monthLimit: num(reply[8]),
    };
  }

  async readWindows(accountId: string, w: Windows): Promise<{ dayUsed: number; monthUsed: number }> {
    const [day, month] = await this.#client.mGet([
      `${this.#p}d:${accountId}:${w.day}`,
      `${this.#p}m:${accountId}:${w.month}`,
    ]);
    return { dayUsed: Number(day ?? 0), monthUsed: Number(month ?? 0) };
  }

  async close(): Promise<void> {
    if (this.#client.isReady) await closeRedis(this.#client);
    else if (this.#client.isOpen) this.#client.destroy();
  }
}
