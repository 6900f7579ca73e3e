// Where nonces and sessions live: Redis (shared by every replica), or an in-memory stand-in when
// Redis is unreachable at start and REDIS_STANDIN is set (`pnpm start` on a machine without Redis).
import { closeRedis, connectRedis, type Logger, redactUrl } from "@tollgate/platform";

export interface Kv {
  readonly kind: "redis" | "memory";
  /** Sets `key` to `value` for `ttlMs`. */
  set(key: string, value: string, ttlMs: number): Promise<void>;
  get(key: string): Promise<string | null>;
  /** Reads and deletes in one step: what makes a nonce single-use across replicas. */
  take(key: string): Promise<string | null>;
  del(key: string): Promise<void>;
  /**
   * Counts one hit on `key` in a fixed window of `windowMs` that starts at the first hit, and
   * returns the count so far and the milliseconds left in the window.
   */
  hit(key: string, windowMs: number): Promise<{ count: number; resetMs: number }>;
  close(): Promise<void>;
}

export class MemoryKv implements Kv {
  readonly kind = "memory";
  readonly #entries = new Map<string, { value: string; expiresAt: number }>();
  readonly #now: () => number;
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }
  async set(key: string, value: string, ttlMs: number) {
    this.#entries.set(key, { value, expiresAt: this.#now() + ttlMs });
  }
  async get(key: string) {
    const e = this.#entries.get(key);
    if (!e) return null;
    if (e.expiresAt <= this.#now()) {
      this.#entries.delete(key);
      return null;
    }
    return e.value;
  }
  async take(key: string) {
    const value = await this.get(key);
    this.#entries.delete(key);
    return value;
  }
  async del(key: string) {
    this.#entries.delete(key);
  }
  async hit(key: string, windowMs: number) {
    const now = this.#now();
    const e = this.#entries.get(key);
    if (!e || e.expiresAt <= now) {
      this.#entries.set(key, { value: "1", expiresAt: now + windowMs });
      return { count: 1, resetMs: windowMs };
    }
    e.value = String(Number(e.value) + 1);
    return { count: Number(e.value), resetMs: e.expiresAt - now };
  }
  async close() {}
}

export async function openKv(opts: {
  url: string;
  clusterNodes?: readonly string[];
  prefix: string;
  connectTimeoutMs: number;
  standIn: boolean;
  logger: Logger;
}): Promise<Kv> {
  // The platform's one connector: no offline queue (commands fail at once while disconnected, a
  // 503), the same reconnect policy as every service; unreachable at start-up with the stand-in
  // allowed: in-memory, else keep connecting in the background (sign-in answers 503 meanwhile).
  const client = await connectRedis({
    url: opts.url,
    ...(opts.clusterNodes ? { clusterNodes: opts.clusterNodes } : {}),
    logger: opts.logger,
    connectTimeoutMs: opts.connectTimeoutMs,
    unreachable: opts.standIn ? "give-up" : "background",
  });
  if (!client) {
    opts.logger.warn(
      `Redis is unreachable at ${redactUrl(opts.url)}: nonces and sessions live in this process only (one replica; sessions end on restart)`,
    );
    return new MemoryKv();
  }
  const p = opts.prefix;
  return {
    kind: "redis",
    async set(key, value, ttlMs) {
      await client.set(p + key, value, { expiration: { type: "PX", value: ttlMs } });
    },
    async get(key) {
      return (await client.get(p + key)) as string | null;
    },
    async take(key) {
      return (await client.getDel(p + key)) as string | null;
    },
    async del(key) {
      await client.del(p + key);
    },
    async hit(key, windowMs) {
      // One round trip: the count, the window set only by the first hit (NX), and what is left of it.
      const [count, , ttl] = (await client
        .multi()
        .incr(p + key)
        .pExpire(p + key, windowMs, "NX")
        .pTTL(p + key)
        .exec()) as unknown as [number, number, number];
      return { count, resetMs: ttl > 0 ? ttl : windowMs };
    },
    async close() {
      if (client.isReady) await closeRedis(client);
      else if (client.isOpen) client.destroy();
    },
  };
}
