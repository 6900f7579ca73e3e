// Limits on payment attempts per client address and per payer (GCRA, shared by every replica
// through Redis): a flood of forged or replayed payments costs the attacker a 429, not us a
// facilitator round trip each. The Redis script and the in-memory stand-in implement the same
// rule; test/payment-verifier/attempt-limits.contract.test.ts runs one suite against both.
import type { Redis } from "@tollgate/platform";

export interface Limit {
  /** Sustained attempts per second; 0 turns the limit off. */
  perSecond: number;
  /** Attempts allowed at once. */
  burst: number;
}

export interface AttemptCheck {
  scope: string;
  /** Who is counted, e.g. the client address or the payer; empty skips the check. */
  id: string;
  limit: Limit;
}

export interface AttemptLimiter {
  /** Counts one attempt against every check; returns the scope of the first limit exceeded, if any. */
  take(checks: readonly AttemptCheck[], nowMs: number): Promise<string | undefined>;
  close(): Promise<void>;
}

// KEYS: one per check. ARGV: now ms, then per check: interval ms, burst.
// A refused attempt does not advance its bucket, so a client that backs off is served again.
const TAKE = `
local now = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[i * 2])
  local burst = tonumber(ARGV[i * 2 + 1])
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  if tat + interval - now > burst * interval then return i end
end
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[i * 2])
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local nextTat = tat + interval
  redis.call('SET', key, string.format('%.3f', nextTat), 'PX', math.ceil(nextTat - now) + 1000)
end
return 0`;

function active(checks: readonly AttemptCheck[]): AttemptCheck[] {
  return checks.filter((c) => c.id !== "" && c.limit.perSecond > 0 && c.limit.burst > 0);
}

const intervalOf = (limit: Limit) => 1000 / limit.perSecond;

export class RedisAttemptLimiter implements AttemptLimiter {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = `${prefix}attempts:`;
  }

  async take(checks: readonly AttemptCheck[], nowMs: number): Promise<string | undefined> {
    const used = active(checks);
    if (used.length === 0) return undefined;
    const reply = await this.#redis.eval(TAKE, {
      keys: used.map((c) => `${this.#prefix}${c.scope}:${c.id.toLowerCase()}`),
      arguments: [
        String(nowMs),
        ...used.flatMap((c) => [String(intervalOf(c.limit)), String(c.limit.burst)]),
      ],
    });
    const index = Number(reply);
    return index > 0 ? used[index - 1]?.scope : undefined;
  }

  async close(): Promise<void> {}
}

/** Single-node stand-in: the same rule, in this process. Entries expire once their bucket is full again. */
export class MemoryAttemptLimiter implements AttemptLimiter {
  readonly #tat = new Map<string, number>();
  readonly #sweeper: NodeJS.Timeout;

  constructor() {
    this.#sweeper = setInterval(() => {
      const now = Date.now();
      for (const [key, tat] of this.#tat) if (tat + 1000 < now) this.#tat.delete(key);
    }, 10_000);
    this.#sweeper.unref();
  }

  async take(checks: readonly AttemptCheck[], nowMs: number): Promise<string | undefined> {
    const used = active(checks);
    const keys = used.map((c) => `${c.scope}:${c.id.toLowerCase()}`);
    for (const [i, c] of used.entries()) {
      const tat = Math.max(this.#tat.get(keys[i] ?? "") ?? nowMs, nowMs);
      const interval = intervalOf(c.limit);
      if (tat + interval - nowMs > c.limit.burst * interval) return c.scope;
    }
    for (const [i, c] of used.entries()) {
      const key = keys[i] ?? "";
      const tat = Math.max(this.#tat.get(key) ?? nowMs, nowMs);
      this.#tat.set(key, tat + intervalOf(c.limit));
    }
    return undefined;
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    this.#tat.clear();
  }
}

/**
 * Credentials refused for a reason that cannot change (a bad signature, the wrong recipient),
 * remembered briefly in this process so the same bytes sent again are refused without another
 * facilitator call. Bounded: the oldest entries go first.
 */
export class RefusalMemory {
  readonly #entries = new Map<string, { reason: string; until: number }>();
  readonly #max: number;
  readonly #ttlMs: number;

  constructor(opts: { max: number; ttlMs: number }) {
    this.#max = opts.max;
    this.#ttlMs = opts.ttlMs;
  }

  recall(fingerprint: string, nowMs: number): string | undefined {
    const entry = this.#entries.get(fingerprint);
    if (!entry) return undefined;
    if (entry.until <= nowMs) {
      this.#entries.delete(fingerprint);
      return undefined;
    }
    return entry.reason;
  }

  remember(fingerprint: string, reason: string, nowMs: number): void {
    if (this.#ttlMs <= 0) return;
    this.#entries.delete(fingerprint);
    if (this.#entries.size >= this.#max) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(fingerprint, { reason, until: nowMs + this.#ttlMs });
  }

  get size(): number {
    return this.#entries.size;
  }
}
