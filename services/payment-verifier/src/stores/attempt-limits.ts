// Limits on payment attempts per client address and per payer (GCRA, shared by every replica
// through Redis): a flood of forged or replayed payments costs the attacker a 429, not us a
// facilitator round trip each. Counted with the reservation, in the same Lua script
// (reservations-lua.ts); the in-memory stand-in implements the same rule, and
// test/payment-verifier/stores.contract.test.ts runs one suite against both.

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

/**
 * The rule in Lua, for a script that counts attempts (reservations-lua.ts: with the reservation,
 * in one round trip): `take_attempts(keys, args, now)` counts one attempt against every bucket
 * `keys[i]` (`args[2i-1]` interval ms, `args[2i]` burst) and returns 0, or the index of the first
 * bucket that is full, counting nothing. A refused attempt does not advance its bucket, so a client
 * that backs off is served again.
 */
export const TAKE_ATTEMPTS_LUA = `
local function take_attempts(keys, args, now)
  for i, key in ipairs(keys) do
    local interval = tonumber(args[i * 2 - 1])
    local burst = tonumber(args[i * 2])
    local tat = tonumber(redis.call('GET', key)) or now
    if tat < now then tat = now end
    if tat + interval - now > burst * interval then return i end
  end
  for i, key in ipairs(keys) do
    local interval = tonumber(args[i * 2 - 1])
    local tat = tonumber(redis.call('GET', key)) or now
    if tat < now then tat = now end
    local nextTat = tat + interval
    redis.call('SET', key, string.format('%.3f', nextTat), 'PX', math.ceil(nextTat - now) + 1000)
  end
  return 0
end
`;

/** The checks that count (an empty id or a zero limit skips one). */
export function activeChecks(checks: readonly AttemptCheck[]): AttemptCheck[] {
  return checks.filter((c) => c.id !== "" && c.limit.perSecond > 0 && c.limit.burst > 0);
}

/** A bucket's interval (ms between sustained attempts). */
export const intervalOf = (limit: Limit) => 1000 / limit.perSecond;

/**
 * The Redis key of a check's bucket under a service's prefix (payer addresses in any casing are
 * one), on a Redis Cluster under the hash tag of whom it counts (`tag`: `{payer:<address>}`).
 */
export const attemptKey = (
  prefix: string,
  check: AttemptCheck,
  tag: (kind: string, id: string) => string,
) => {
  const id = check.id.toLowerCase();
  return `${prefix}attempts:${check.scope}:${tag(check.scope, id)}${id}`;
};

/** Single-node stand-in: the same rule, in this process. Entries expire once their bucket is full again. */
export class MemoryAttemptLimiter {
  readonly #tat = new Map<string, number>();
  readonly #sweeper: NodeJS.Timeout;

  constructor() {
    this.#sweeper = setInterval(() => {
      const now = Date.now();
      for (const [key, tat] of this.#tat) if (tat + 1000 < now) this.#tat.delete(key);
    }, 10_000);
    this.#sweeper.unref();
  }

  /** Counts one attempt against every check; returns the scope of the first limit exceeded, if any. */
  take(checks: readonly AttemptCheck[], nowMs: number): string | undefined {
    const used = activeChecks(checks);
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

  close(): void {
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
