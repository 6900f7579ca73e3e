// One settlement key may be mounted in several payment-verifier replicas (the self-hosted
// facilitator scales with them). Two replicas sending with the same nonce would make one settlement
// fail after its call was served, so every transaction of a key is sent while holding that key's
// lock in Redis, and the lock keeps the key's next nonce. Without Redis (the single-node stand-in)
// the process's own queue is the only sender, and the node's pending count is the nonce.
import { randomUUID } from "node:crypto";
import type { Hex } from "viem";
import { FacilitatorUnavailableError } from "../core/types.ts";
import type { Redis } from "./redis.ts";

export interface SignerLock {
  /**
   * Runs `send` with the next nonce of `address` while no other holder of the key can send. The
   * nonce advances only when `send` resolved (the node accepted the transaction).
   */
  withNonce(
    address: string,
    pending: () => Promise<number>,
    send: (nonce: number) => Promise<Hex>,
  ): Promise<Hex>;
}

/** The process's own queue (SerialSubmitter) already orders sends: read the nonce, send. */
export function localSignerLock(): SignerLock {
  let next: { address: string; nonce: number } | undefined;
  return {
    async withNonce(address, pending, send) {
      const nonce = next?.address === address ? next.nonce : await pending();
      try {
        const hash = await send(nonce);
        next = { address, nonce: nonce + 1 };
        return hash;
      } catch (err) {
        next = undefined;
        throw err;
      }
    },
  };
}

// KEYS[1] lock; ARGV[1] token. Deletes the lock only if we still hold it.
const UNLOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export interface RedisSignerLockOptions {
  /** How long a holder may keep the lock (covers a slow submission; a crashed holder frees it then). */
  holdMs?: number;
  /** How long to wait for the lock before giving up with "facilitator unavailable". */
  waitMs?: number;
}

export function redisSignerLock(redis: Redis, prefix: string, opts: RedisSignerLockOptions = {}): SignerLock {
  const holdMs = opts.holdMs ?? 60_000;
  const waitMs = opts.waitMs ?? 15_000;
  return {
    async withNonce(address, pending, send) {
      const base = `${prefix}signer:${address.toLowerCase()}:`;
      const lockKey = `${base}lock`;
      const nonceKey = `${base}nonce`;
      const token = randomUUID();
      const deadline = Date.now() + waitMs;
      for (let attempt = 0; ; attempt++) {
        const taken = await redis.set(lockKey, token, {
          condition: "NX",
          expiration: { type: "PX", value: holdMs },
        });
        if (taken === "OK") break;
        if (Date.now() > deadline) {
          throw new FacilitatorUnavailableError("the settlement key is busy in another replica; retry");
        }
        await new Promise((r) => setTimeout(r, Math.min(2 + attempt, 20) * (0.5 + Math.random())));
      }
      try {
        const stored = await redis.get(nonceKey);
        const nonce = stored === null ? await pending() : Number(stored);
        try {
          const hash = await send(nonce);
          await redis.set(nonceKey, String(nonce + 1), { expiration: { type: "PX", value: 10 * 60_000 } });
          return hash;
        } catch (err) {
          // Unknown whether the node took it: the next sender asks the node for its pending count.
          await redis.del(nonceKey).catch(() => undefined);
          throw err;
        }
      } finally {
        await redis.eval(UNLOCK, { keys: [lockKey], arguments: [token] }).catch(() => undefined);
      }
    },
  };
}
