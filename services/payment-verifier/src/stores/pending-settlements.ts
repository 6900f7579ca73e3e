// The exact facilitator's memory of broadcast-but-unconfirmed settlements (keyed by the payment's
// signature), shared through Redis so that a settle retried on any replica reconciles with the
// transaction already sent instead of broadcasting a second one.

import type { Redis } from "@tollgate/platform";
import type { PendingSettlementStore } from "@x402/core/facilitator";

const KEEP_MS = 15 * 60_000;

export class RedisPendingSettlementStore implements PendingSettlementStore {
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
    await this.#redis.set(this.#prefix + key, txHash, { expiration: { type: "PX", value: KEEP_MS } });
  }

  async delete(key: string): Promise<void> {
    await this.#redis.del(this.#prefix + key);
  }
}
