// At-most-once use of a payment across all replicas. A verified payment is reserved (SET-NX-like,
// with a TTL) under an id derived from what makes it unique on chain, moves to `settling` while
// the facilitator settles it and to `settled` afterwards, and is deleted by Release or by a failed
// settlement (no money moved, so the client may try again). The on-chain nonce alone is not
// enough: two verifies of one payload both pass until it is settled.
import type { Redis } from "./adapters/redis.ts";

export type ReservationState = "reserved" | "settling" | "settled";

/** What is known about a verified payment; stored with the reservation for Settle, Release and events. */
export interface PaymentFacts {
  scheme: string;
  requestId: string;
  /** Catalog path template. */
  endpoint: string;
  /** The API network the call was for (ethereum, sepolia, ...). */
  network: string;
  payer: string;
  /** Atomic units of `asset`. */
  amount: string;
  asset: string;
  /** Settlement chain, CAIP-2. */
  paymentNetwork: string;
  /** Unix seconds after which the payment can no longer be collected. */
  validBefore: number;
}

export interface Reservation extends PaymentFacts {
  state: ReservationState;
  transaction: string;
  /** The encoded PAYMENT-RESPONSE of a settled payment, so a repeated Settle answers the same. */
  receipt: string;
}

export type BeginSettle = { ok: true } | { ok: false; current: Reservation | undefined };

export interface ReservationStore {
  readonly kind: "redis" | "memory";
  get(id: string): Promise<Reservation | undefined>;
  /** Takes the payment for `facts.requestId`; false when anyone holds or has used it. */
  reserve(id: string, facts: PaymentFacts, ttlMs: number): Promise<boolean>;
  /**
   * reserved (by the same request) → settling. A lapsed reservation is claimed again, since
   * nobody else holds the payment; any other state refuses.
   */
  beginSettle(id: string, facts: PaymentFacts, ttlMs: number): Promise<BeginSettle>;
  markSettled(
    id: string,
    facts: PaymentFacts,
    transaction: string,
    receipt: string,
    retentionMs: number,
  ): Promise<void>;
  /** Forgets a payment whose settlement failed (nothing was collected). */
  drop(id: string): Promise<void>;
  /** Frees a reservation still held by `requestId`; returns what it freed. */
  release(id: string, requestId: string): Promise<Reservation | undefined>;
  close(): Promise<void>;
}

function toFields(state: ReservationState, f: PaymentFacts, transaction = "", receipt = ""): string[] {
  return [
    "state",
    state,
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
    "valid_before",
    String(f.validBefore),
    "transaction",
    transaction,
    "receipt",
    receipt,
  ];
}

function fromHash(h: Record<string, string>): Reservation | undefined {
  if (!h.state) return undefined;
  return {
    state: h.state as ReservationState,
    scheme: h.scheme ?? "",
    requestId: h.request_id ?? "",
    endpoint: h.endpoint ?? "",
    network: h.network ?? "",
    payer: h.payer ?? "",
    amount: h.amount ?? "",
    asset: h.asset ?? "",
    paymentNetwork: h.payment_network ?? "",
    validBefore: Number(h.valid_before ?? 0),
    transaction: h.transaction ?? "",
    receipt: h.receipt ?? "",
  };
}

function pairsToHash(pairs: unknown): Record<string, string> {
  const hash: Record<string, string> = {};
  if (!Array.isArray(pairs)) return hash;
  for (let i = 0; i + 1 < pairs.length; i += 2) hash[String(pairs[i])] = String(pairs[i + 1]);
  return hash;
}

// KEYS[1] reservation; ARGV[1] ttl ms; ARGV[2..] field/value pairs.
const RESERVE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`;

// KEYS[1] reservation; ARGV[1] ttl ms; ARGV[2] request id; ARGV[3..] field/value pairs (state settling).
const BEGIN_SETTLE = `
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  redis.call('HSET', KEYS[1], unpack(ARGV, 3))
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 1
end
if state == 'reserved' and (ARGV[2] == '' or redis.call('HGET', KEYS[1], 'request_id') == ARGV[2]) then
  redis.call('HSET', KEYS[1], 'state', 'settling')
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 1
end
return 0`;

// KEYS[1] reservation; ARGV[1] retention ms; ARGV[2..] field/value pairs (state settled).
const MARK_SETTLED = `
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`;

// KEYS[1] reservation; ARGV[1] request id.
const RELEASE = `
if redis.call('HGET', KEYS[1], 'state') ~= 'reserved' then return false end
if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], 'request_id') ~= ARGV[1] then return false end
local all = redis.call('HGETALL', KEYS[1])
redis.call('DEL', KEYS[1])
return all`;

export class RedisReservationStore implements ReservationStore {
  readonly kind = "redis" as const;
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = `${prefix}reservation:`;
  }

  async get(id: string): Promise<Reservation | undefined> {
    return fromHash(await this.#redis.hGetAll(this.#prefix + id));
  }

  async reserve(id: string, facts: PaymentFacts, ttlMs: number): Promise<boolean> {
    const reply = await this.#redis.eval(RESERVE, {
      keys: [this.#prefix + id],
      arguments: [String(ttlMs), ...toFields("reserved", facts)],
    });
    return reply === 1;
  }

  async beginSettle(id: string, facts: PaymentFacts, ttlMs: number): Promise<BeginSettle> {
    const reply = await this.#redis.eval(BEGIN_SETTLE, {
      keys: [this.#prefix + id],
      arguments: [String(ttlMs), facts.requestId, ...toFields("settling", facts)],
    });
    if (reply === 1) return { ok: true };
    return { ok: false, current: await this.get(id) };
  }

  async markSettled(
    id: string,
    facts: PaymentFacts,
    transaction: string,
    receipt: string,
    retentionMs: number,
  ): Promise<void> {
    await this.#redis.eval(MARK_SETTLED, {
      keys: [this.#prefix + id],
      arguments: [String(retentionMs), ...toFields("settled", facts, transaction, receipt)],
    });
  }

  async drop(id: string): Promise<void> {
    await this.#redis.del(this.#prefix + id);
  }

  async release(id: string, requestId: string): Promise<Reservation | undefined> {
    const reply = await this.#redis.eval(RELEASE, { keys: [this.#prefix + id], arguments: [requestId] });
    return reply ? fromHash(pairsToHash(reply)) : undefined;
  }

  async close(): Promise<void> {
    await this.#redis.close();
  }
}

/** Single-node stand-in used when Redis is unreachable at startup: same semantics, one process. */
export class MemoryReservationStore implements ReservationStore {
  readonly kind = "memory" as const;
  readonly #entries = new Map<string, { reservation: Reservation; expiresAt: number }>();
  readonly #sweeper: NodeJS.Timeout;

  constructor() {
    this.#sweeper = setInterval(() => {
      const now = Date.now();
      for (const [id, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(id);
    }, 30_000);
    this.#sweeper.unref();
  }

  #live(id: string): Reservation | undefined {
    const entry = this.#entries.get(id);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.#entries.delete(id);
      return undefined;
    }
    return entry.reservation;
  }

  #put(id: string, reservation: Reservation, ttlMs: number): void {
    this.#entries.set(id, { reservation, expiresAt: Date.now() + ttlMs });
  }

  async get(id: string): Promise<Reservation | undefined> {
    const r = this.#live(id);
    return r && { ...r };
  }

  async reserve(id: string, facts: PaymentFacts, ttlMs: number): Promise<boolean> {
    if (this.#live(id)) return false;
    this.#put(id, { ...facts, state: "reserved", transaction: "", receipt: "" }, ttlMs);
    return true;
  }

  async beginSettle(id: string, facts: PaymentFacts, ttlMs: number): Promise<BeginSettle> {
    const current = this.#live(id);
    if (
      !current ||
      (current.state === "reserved" && (!facts.requestId || current.requestId === facts.requestId))
    ) {
      this.#put(id, { ...(current ?? facts), state: "settling", transaction: "", receipt: "" }, ttlMs);
      return { ok: true };
    }
    return { ok: false, current: { ...current } };
  }

  async markSettled(
    id: string,
    facts: PaymentFacts,
    transaction: string,
    receipt: string,
    retentionMs: number,
  ): Promise<void> {
    this.#put(id, { ...facts, state: "settled", transaction, receipt }, retentionMs);
  }

  async drop(id: string): Promise<void> {
    this.#entries.delete(id);
  }

  async release(id: string, requestId: string): Promise<Reservation | undefined> {
    const current = this.#live(id);
    if (current?.state !== "reserved" || (requestId && current.requestId !== requestId)) return undefined;
    this.#entries.delete(id);
    return current;
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#entries.clear();
  }
}

/**
 * The exact scheme's memory of broadcast-but-unconfirmed settlements (keyed by signature), shared
 * through Redis so a retried settle on another replica reconciles with the transaction already sent
 * instead of sending a second one.
 */
export class RedisPendingSettlementStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = `${prefix}pending-settlement:`;
  }

  async get(key: string): Promise<string | undefined> {
    return (await this.#redis.get(this.#prefix + key)) ?? undefined;
  }

  async set(key: string, txHash: string): Promise<void> {
    await this.#redis.set(this.#prefix + key, txHash, { expiration: { type: "PX", value: 15 * 60_000 } });
  }

  async delete(key: string): Promise<void> {
    await this.#redis.del(this.#prefix + key);
  }
}
