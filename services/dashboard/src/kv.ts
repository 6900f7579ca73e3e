// Where nonces and sessions live: Redis (shared by every replica), or an in-memory stand-in when
// Redis is unreachable at start and REDIS_STANDIN is set (`pnpm start` on a machine without Redis).
import type { Logger } from "@tollgate/platform";
import { redactUrl } from "@tollgate/platform";
import { createClient } from "redis";

export interface Kv {
  readonly kind: "redis" | "memory";
  /** Sets `key` to `value` for `ttlMs`. */
  set(key: string, value: string, ttlMs: number): Promise<void>;
  get(key: string): Promise<string | null>;
  /** Reads and deletes in one step: what makes a nonce single-use across replicas. */
  take(key: string): Promise<string | null>;
  del(key: string): Promise<void>;
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
  async close() {}
}

export async function openKv(opts: {
  url: string;
  prefix: string;
  connectTimeoutMs: number;
  standIn: boolean;
  logger: Logger;
}): Promise<Kv> {
  const client = createClient({
    url: opts.url,
    // Commands fail at once while disconnected (a 503), rather than queue behind a reconnect.
    disableOfflineQueue: true,
    socket: {
      connectTimeout: opts.connectTimeoutMs,
      reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 2_000),
    },
  });
  let warned = false;
  client.on("error", (err: Error) => {
    if (warned) return;
    warned = true;
    opts.logger.warn({ err: err.message, redis: redactUrl(opts.url) }, "Redis unreachable; retrying");
    setTimeout(() => {
      warned = false;
    }, 10_000).unref();
  });
  const connected = await Promise.race([
    client.connect().then(
      () => true,
      () => false,
    ),
    new Promise<false>((r) => setTimeout(() => r(false), opts.connectTimeoutMs).unref()),
  ]);
  if (!connected && opts.standIn) {
    client.destroy();
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
    async close() {
      if (client.isReady) await client.close().catch(() => client.destroy());
      else if (client.isOpen) client.destroy();
    },
  };
}
