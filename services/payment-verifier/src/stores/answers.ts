// The first answers of x402 payments that carry a payment identifier (the `payment-identifier`
// extension), so a retry of the same payment with the same identifier gets that answer again, with
// no second node call and no second charge. A record is made only for a payment the core verified
// (a claim, `pending`, held by the payment's mesh-generated payment_id), under the verified payer
// and the identifier; it becomes `answered` when the gateway hands over the answer of the settled
// call, and is forgotten when the call was not charged. Both lapse (TTLs): nothing stays per
// caller. This module is the contract: the Redis store (answers-redis.ts, one Lua script per step)
// and the in-memory stand-in (below) behave the same; test/payment-verifier/answers.contract.test.ts
// runs one suite against both.

export interface KeptAnswer {
  status: number;
  /** The payment headers the answer carried (PAYMENT-RESPONSE), as name/value pairs. */
  headers: { name: string; value: string }[];
  /** The body, exactly as sent. */
  body: string;
}

/** `holder`: the payment_id that claimed it; `requestId`: the request it was verified for. */
export type AnswerRecord =
  | { state: "pending"; payment: string; holder: string; requestId: string }
  | { state: "answered"; payment: string; holder: string; requestId: string; answer: KeptAnswer };

export interface AnswerStore {
  readonly kind: "redis" | "memory";
  /** The record under `key` (payer and identifier), if any. */
  find(key: string): Promise<AnswerRecord | undefined>;
  /**
   * Claims `key` for the verified payment `payment` (its fingerprint) held by `holder` (the
   * payment_id) for request `requestId`, for `ttlMs`. A record `holder` made before (a retried
   * Verify) is its own: true. Any other record is answered.
   */
  claim(
    key: string,
    payment: string,
    holder: string,
    requestId: string,
    ttlMs: number,
  ): Promise<{ ok: true } | { ok: false; current: AnswerRecord }>;
  /**
   * Keeps `answer` under the claim of `holder`, for `ttlMs` from now; false when `key` holds no
   * claim of `holder` (it lapsed, or was forgotten). Run again after a lost reply, it answers true.
   */
  keep(key: string, holder: string, answer: KeptAnswer, ttlMs: number): Promise<boolean>;
  /** Forgets the claim of `holder` while it is pending (its call was not charged); false if none. */
  forget(key: string, holder: string): Promise<boolean>;
  close(): Promise<void>;
}

/** How often (in claims) the stand-in sweeps out lapsed records: its memory stays bounded by the TTLs. */
const SWEEP_EVERY = 256;

/** The single-node stand-in (REDIS_STANDIN): the same steps, in one process. */
export class MemoryAnswerStore implements AnswerStore {
  readonly kind = "memory" as const;
  readonly #records = new Map<string, { record: AnswerRecord; expiresAt: number }>();
  readonly #now: () => number;
  #claims = 0;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  #live(key: string): AnswerRecord | undefined {
    const entry = this.#records.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.#now()) {
      this.#records.delete(key);
      return undefined;
    }
    return entry.record;
  }

  async find(key: string): Promise<AnswerRecord | undefined> {
    return this.#live(key);
  }

  async claim(key: string, payment: string, holder: string, requestId: string, ttlMs: number) {
    if (++this.#claims % SWEEP_EVERY === 0) this.#sweep();
    const current = this.#live(key);
    if (current) return current.holder === holder ? { ok: true as const } : { ok: false as const, current };
    const record: AnswerRecord = { state: "pending", payment, holder, requestId };
    this.#records.set(key, { record, expiresAt: this.#now() + ttlMs });
    return { ok: true as const };
  }

  async keep(key: string, holder: string, answer: KeptAnswer, ttlMs: number): Promise<boolean> {
    const current = this.#live(key);
    if (current?.holder !== holder) return false;
    const record: AnswerRecord = { ...current, state: "answered", answer };
    this.#records.set(key, { record, expiresAt: this.#now() + ttlMs });
    return true;
  }

  async forget(key: string, holder: string): Promise<boolean> {
    const current = this.#live(key);
    if (current?.state !== "pending" || current.holder !== holder) return false;
    this.#records.delete(key);
    return true;
  }

  #sweep(): void {
    const now = this.#now();
    for (const [key, entry] of this.#records) if (entry.expiresAt <= now) this.#records.delete(key);
  }

  async close(): Promise<void> {}
}
