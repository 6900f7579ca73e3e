// The reservation store on Redis, shared by every replica: each transition of the state machine
// (reservations.ts) is one Lua script (reservations-lua.ts), atomic per key; a release whose answer
// was lost is run again under its mark, which answers what it freed.

import { READ_BACK_MS } from "@tollgate/payment-rails";
import type { Redis } from "@tollgate/platform";
import { closeRedis, isCluster, runAgainIfLost, slotTags } from "@tollgate/platform/redis";
import { type AttemptCheck, activeChecks, attemptKey, intervalOf } from "./attempt-limits.ts";
import {
  type Attempt,
  type BeginSettle,
  type Draw,
  isTakeover,
  type PaymentFacts,
  penaltyPayer,
  type ReleaseMark,
  type Reservation,
  type ReservationState,
  type ReservationStore,
  type ReserveResult,
} from "./reservations.ts";
import {
  BEGIN_SETTLE,
  COUNT_ATTEMPT,
  DELETE_IF,
  DELETE_SETTLING_OF,
  MARK_SETTLED,
  MARK_VERIFIED,
  RELEASE,
  RESERVE,
} from "./reservations-lua.ts";

function toFields(token: string, f: PaymentFacts): string[] {
  return [
    "state",
    "reserved",
    "token",
    token,
    "scheme",
    f.scheme,
    "request_id",
    f.requestId,
    "endpoint",
    f.endpoint,
    "network",
    f.network,
    "payer",
    f.payer,
    "amount",
    f.amount,
    "asset",
    f.asset,
    "payment_network",
    f.paymentNetwork,
    "credential",
    f.credential,
    "account",
    f.account ?? "",
    "collected",
    "",
    "hold",
    "",
    "transaction",
    "",
    "receipt",
    "",
    "owner",
    "",
    "attempt",
    "",
  ];
}

function fromHash(h: Record<string, string>): Reservation | undefined {
  if (!h.state) return undefined;
  return {
    state: h.state as ReservationState,
    token: h.token ?? "",
    scheme: h.scheme ?? "",
    requestId: h.request_id ?? "",
    endpoint: h.endpoint ?? "",
    network: h.network ?? "",
    payer: h.payer ?? "",
    amount: h.amount ?? "",
    asset: h.asset ?? "",
    paymentNetwork: h.payment_network ?? "",
    credential: h.credential ?? "",
    ...(h.account ? { account: h.account } : {}),
    collected: h.collected ?? "",
    hold: h.hold ?? "",
    transaction: h.transaction ?? "",
    receipt: h.receipt ?? "",
    owner: h.owner ?? "",
    attempt: h.attempt ?? "",
  };
}

function sumOf(amounts: readonly unknown[]): bigint {
  let sum = 0n;
  for (const a of amounts) sum += BigInt(String(a));
  return sum;
}

function pairsToHash(pairs: unknown): Record<string, string> {
  const hash: Record<string, string> = {};
  if (!Array.isArray(pairs)) return hash;
  for (let i = 0; i + 1 < pairs.length; i += 2) hash[String(pairs[i])] = String(pairs[i + 1]);
  return hash;
}

export class RedisReservationStore implements ReservationStore {
  readonly kind = "redis" as const;
  readonly #redis: Redis;
  readonly #prefix: string;

  readonly #servicePrefix: string;
  readonly #alivePrefix: string;
  readonly #releasedPrefix: string;
  readonly #drawsPrefix: string;
  /** On a Redis Cluster the client's bucket (another slot than the payer's) is counted apart. */
  readonly #cluster: boolean;
  readonly #tag: (kind: string, id: string) => string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#cluster = isCluster(redis);
    this.#tag = slotTags(redis);
    this.#servicePrefix = prefix;
    this.#prefix = `${prefix}reservation:`;
    this.#releasedPrefix = `${prefix}released:`;
    this.#drawsPrefix = `${prefix}draws:`;
    this.#alivePrefix = `${prefix}alive:`;
  }

  keyOf(payer: string, raw: string): string {
    return this.#cluster ? `${this.#tag("payer", payer.toLowerCase())}${raw}` : raw;
  }

  async get(key: string): Promise<Reservation | undefined> {
    return fromHash(await this.#redis.hGetAll(this.#prefix + key));
  }

  async reserve(
    key: string,
    token: string,
    facts: PaymentFacts,
    ttlMs: number,
    attempt?: Attempt,
    draw?: Draw,
  ): Promise<ReserveResult> {
    const all = attempt ? activeChecks(attempt.checks) : [];
    // On a cluster the buckets of others than the payer go apart, at the same time (see below).
    const checks = this.#cluster ? all.filter((c) => c.scope === "payer") : all;
    const apart = this.#cluster && checks.length < all.length ? all.filter((c) => c.scope !== "payer") : [];
    const penalty = attempt?.penalty ? [this.#penaltyKey(attempt.penalty)] : [];
    const draws = draw
      ? [
          `${this.#drawsPrefix}${this.#cluster ? this.#tag("payer", facts.payer.toLowerCase()) : ""}${draw.account.toLowerCase()}`,
        ]
      : [];
    if (apart.length > 0) {
      const [counted, reserved] = await Promise.all([
        this.#countApart(apart, attempt?.nowMs ?? Date.now()),
        this.#reserve(key, token, facts, ttlMs, checks, penalty, draws, attempt?.nowMs, draw),
      ]);
      // The penalty is looked at first, as in one script; then a full bucket of the others refuses
      // (their order first, as take_attempts's), and frees what the reserve took meanwhile.
      if (counted === undefined || (!reserved.ok && reserved.penalizedMs)) return reserved;
      if (reserved.ok && !reserved.retried)
        await this.#redis.eval(DELETE_IF, {
          keys: [this.#prefix + key],
          arguments: [token, "reserved", "", "0"],
        });
      return { ok: false, current: undefined, limited: counted };
    }
    return this.#reserve(key, token, facts, ttlMs, checks, penalty, draws, attempt?.nowMs, draw);
  }

  /** COUNT_ATTEMPT on each bucket (each its own slot): the scope of the first that is full, if any. */
  async #countApart(checks: AttemptCheck[], nowMs: number): Promise<string | undefined> {
    const full = await Promise.all(checks.map((c) => this.countAttempt({ checks: [c], nowMs })));
    return full.find((scope) => scope !== undefined);
  }

  async #reserve(
    key: string,
    token: string,
    facts: PaymentFacts,
    ttlMs: number,
    checks: AttemptCheck[],
    penalty: string[],
    draws: string[],
    nowMs: number | undefined,
    draw: Draw | undefined,
  ): Promise<ReserveResult> {
    const reply = (await this.#redis.eval(RESERVE, {
      keys: [
        this.#prefix + key,
        ...checks.map((c) => attemptKey(this.#servicePrefix, c, this.#tag)),
        ...penalty,
        ...draws,
      ],
      arguments: [
        String(ttlMs),
        String(nowMs ?? Date.now()),
        String(checks.length),
        penalty.length > 0 ? "1" : "0",
        draw?.amount ?? "",
        String(Math.max(1, Math.round(draw?.ttlMs ?? 1))),
        ...checks.flatMap((c) => [String(intervalOf(c.limit)), String(c.limit.burst)]),
        ...toFields(token, facts),
      ],
    })) as [number, string | number | undefined, ...string[]];
    if (reply[0] === 1 || reply[0] === 2) {
      const taken = { ok: true as const, token: String(reply[1]), retried: reply[0] === 2 };
      return draw ? { ...taken, drawn: sumOf(reply.slice(2)) } : taken;
    }
    if (reply[0] === 4) return { ok: false, current: undefined, penalizedMs: Number(reply[1]) };
    if (reply[0] === 3)
      return { ok: false, current: undefined, limited: checks[Number(reply[1]) - 1]?.scope };
    return { ok: false, current: await this.get(key) };
  }

  async countAttempt(attempt: Attempt): Promise<string | undefined> {
    const checks = activeChecks(attempt.checks);
    if (checks.length === 0) return undefined;
    const full = (await this.#redis.eval(COUNT_ATTEMPT, {
      keys: checks.map((c) => attemptKey(this.#servicePrefix, c, this.#tag)),
      arguments: [
        String(attempt.nowMs),
        ...checks.flatMap((c) => [String(intervalOf(c.limit)), String(c.limit.burst)]),
      ],
    })) as number;
    return full > 0 ? checks[full - 1]?.scope : undefined;
  }

  async markVerified(
    key: string,
    token: string,
    verified: { collected: string; hold: string },
  ): Promise<void> {
    await this.#redis.eval(MARK_VERIFIED, {
      keys: [this.#prefix + key],
      arguments: [token, verified.collected, verified.hold],
    });
  }

  async beginSettle(
    key: string,
    token: string,
    requestId: string,
    ttlMs: number,
    owner: string,
    idleHere = false,
    attempt = "",
  ): Promise<BeginSettle> {
    const begin = (dead: string) =>
      this.#redis.eval(BEGIN_SETTLE, {
        keys: [this.#prefix + key],
        arguments: [token, requestId, String(ttlMs), owner, dead, idleHere ? "1" : "0", attempt],
      }) as Promise<[number, unknown]>;
    let [begun, fields] = await begin("");
    // Settling under another owner (a retried Settle): taken over only once its liveness lapsed.
    // Never on a first Settle: one round trip there.
    for (let asked = 0; begun === 4 && asked < 3; asked++) {
      const other = pairsToHash(fields).owner ?? "";
      if ((await this.#redis.exists(this.#alivePrefix + other)) === 1) break;
      [begun, fields] = await begin(other);
    }
    const current = fromHash(pairsToHash(fields));
    if ((begun === 1 || begun === 2) && current)
      return { ok: true, reservation: current, takenOver: begun === 2 };
    return { ok: false, current, busy: begun === 3 || begun === 4 };
  }

  async heartbeat(owner: string, ttlMs: number): Promise<void> {
    await this.#redis.set(this.#alivePrefix + owner, "1", { PX: ttlMs });
  }

  async markSettled(
    key: string,
    token: string,
    transaction: string,
    receipt: string,
    retentionMs: number,
  ): Promise<void> {
    await this.#redis.eval(MARK_SETTLED, {
      keys: [this.#prefix + key],
      arguments: [token, transaction, receipt, String(Math.max(1, Math.round(retentionMs)))],
    });
  }

  async drop(
    key: string,
    token: string,
    settling?: { owner: string; attempt: string },
    keepDraw = false,
  ): Promise<boolean> {
    if (settling)
      return (
        (await this.#deleteSettlingOf(key, token, settling.owner, settling.attempt, keepDraw)) !== undefined
      );
    const reply = await this.#redis.eval(DELETE_IF, {
      keys: [this.#prefix + key],
      arguments: [token, "settling", "", keepDraw ? "1" : "0"],
    });
    return Boolean(reply);
  }

  async release(
    key: string,
    token: string,
    requestId: string,
    release?: ReleaseMark,
  ): Promise<Reservation | undefined> {
    const run = () =>
      this.#redis.eval(RELEASE, {
        keys: release
          ? [this.#prefix + key, `${this.#releasedPrefix}${key}:${release.id}`]
          : [this.#prefix + key],
        arguments: [token, requestId, String(Math.max(1, Math.round(release?.keepMs ?? 1)))],
      });
    // Its answer lost: run again, which answers what it freed (the mark) or frees it now.
    const reply = release ? await runAgainIfLost(run, READ_BACK_MS) : await run();
    return reply ? fromHash(pairsToHash(reply)) : undefined;
  }

  async abandon(
    key: string,
    token: string,
    owner: string,
    attempt: string,
  ): Promise<Reservation | undefined> {
    return isTakeover(attempt) ? undefined : this.#deleteSettlingOf(key, token, owner, attempt);
  }

  async #deleteSettlingOf(key: string, token: string, owner: string, attempt: string, keepDraw = false) {
    const reply = await this.#redis.eval(DELETE_SETTLING_OF, {
      keys: [this.#prefix + key],
      arguments: [token, owner, attempt, keepDraw ? "1" : "0"],
    });
    return reply ? fromHash(pairsToHash(reply)) : undefined;
  }

  async penalize(penalty: string, ms: number): Promise<void> {
    await this.#redis.set(this.#penaltyKey(penalty), "1", {
      expiration: { type: "PX", value: Math.max(1, Math.round(ms)) },
    });
  }

  #penaltyKey(penalty: string): string {
    const tag = this.#cluster ? this.#tag("payer", penaltyPayer(penalty)) : "";
    return `${this.#servicePrefix}penalty:${tag}${penalty.toLowerCase()}`;
  }

  async close(): Promise<void> {
    await closeRedis(this.#redis);
  }
}
