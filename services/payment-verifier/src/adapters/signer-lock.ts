// One settlement key may be mounted in several payment-verifier replicas (the self-hosted
// facilitator scales with them). Two replicas sending with the same nonce would make one settlement
// fail after its call was served, so every transaction of a key is sent while holding that key's
// lock in Redis, and the lock keeps the key's next nonce. Without Redis (the single-node stand-in)
// the process's own queue is the only sender, and the node's pending count is the nonce.
import { randomUUID } from "node:crypto";
import type { Redis } from "@tollgate/platform";
import type { Hex } from "viem";
import { FacilitatorUnavailableError } from "../core/types.ts";

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
  let next: { signer: string; nonce: number } | undefined;
  return {
    async withNonce(signer, pending, send) {
      const nonce = next?.signer === signer ? next.nonce : await pending();
      try {
        const hash = await send(nonce);
        next = { signer, nonce: nonce + 1 };
        return hash;
      } catch (err) {
        next = undefined;
        throw err;
      }
    },
  };
}

// KEYS[1] lock, KEYS[2] next nonce; ARGV[1] token, ARGV[2] hold ms.
// Reply: {1, next nonce or false} taken | {0} held by someone else.
const LOCK = `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {0} end
return {1, redis.call('GET', KEYS[2])}`;

// KEYS[1] lock, KEYS[2] next nonce; ARGV[1] token, ARGV[2] the next nonce ("" = unknown: the next
// holder asks the node). Only the holder records the nonce; the lock is released either way.
const UNLOCK = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[2]) else redis.call('SET', KEYS[2], ARGV[2], 'PX', 600000) end
return redis.call('DEL', KEYS[1])`;

export interface RedisSignerLockOptions {
  /** How long a holder may keep the lock (covers a slow submission; a crashed holder frees it then). */
  holdMs?: number;
  /** How long to wait for the lock before giving up with "facilitator unavailable". */
  waitMs?: number;
}

/** Two round trips per transaction: take the lock with the next nonce, then record it and let go. */
export function redisSignerLock(redis: Redis, prefix: string, opts: RedisSignerLockOptions = {}): SignerLock {
  const holdMs = String(opts.holdMs ?? 60_000);
  const waitMs = opts.waitMs ?? 15_000;
  return {
    async withNonce(signer, pending, send) {
      const base = `${prefix}signer:${signer.toLowerCase()}:`;
      const keys = [`${base}lock`, `${base}nonce`];
      const token = randomUUID();
      const deadline = Date.now() + waitMs;
      let stored: string | null = null;
      for (let attempt = 0; ; attempt++) {
        const [taken, next] = (await redis.eval(LOCK, { keys, arguments: [token, holdMs] })) as [
          number,
          string | null,
        ];
        if (taken === 1) {
          stored = next;
          break;
        }
        if (Date.now() > deadline) {
          throw new FacilitatorUnavailableError("the settlement key is busy in another replica; retry");
        }
        await new Promise((r) => setTimeout(r, Math.min(2 + attempt, 20) * (0.5 + Math.random())));
      }
      // Unknown whether the node took a failed send: the next holder asks the node for its pending count.
      let next = "";
      try {
        const nonce = stored === null ? await pending() : Number(stored);
        const hash = await send(nonce);
        next = String(nonce + 1);
        return hash;
      } finally {
        await redis.eval(UNLOCK, { keys, arguments: [token, next] }).catch(() => undefined);
      }
    },
  };
}
