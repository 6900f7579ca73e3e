// One settlement key may be mounted in several processes: payment-verifier replicas (the
// self-hosted facilitator settles `exact` payments and batch deposits) and the settlement worker
// (batch claims, settles, refunds). Two of them sending with the same nonce would make one
// transaction fail (a call already served, or a claim), so every transaction of a key is sent while
// holding that key's lock in Redis, and the lock keeps the key's next nonce. Without Redis (the
// single-node stand-in) the process's own queue is the only sender, and the node's pending count is
// the nonce.
import { randomUUID } from "node:crypto";
import { mayHaveRun } from "@tollgate/platform/redis";
import { retryLater } from "@tollgate/platform/retry-later";
import type { Hex } from "viem";

/** What the lock needs of a Redis client (node-redis's `eval`). */
export interface ScriptRunner {
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** The key stayed locked by another process for longer than the wait. */
class SignerBusyError extends Error {
  override name = "SignerBusyError";
}

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
// holder asks the node; "keep" = nothing was sent: the stored one stands). Only the holder records
// the nonce; the lock is released either way.
const UNLOCK = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[2]) elseif ARGV[2] ~= 'keep' then redis.call('SET', KEYS[2], ARGV[2], 'PX', 600000) end
return redis.call('DEL', KEYS[1])`;
const KEEP_NONCE = "keep";

export interface RedisSignerLockOptions {
  /** How long a holder may keep the lock (covers a slow submission; a crashed holder frees it then). */
  holdMs?: number;
  /** How long to wait for the lock before giving up. */
  waitMs?: number;
  /** The error thrown when the wait is over (a service's own "unavailable" error); SignerBusyError by default. */
  busy?: (message: string) => Error;
  /**
   * The hash tag of a signer's keys (its lock and next nonce, one slot of a Redis Cluster: the
   * platform's slotTags); none by default.
   */
  tag?: (kind: string, id: string) => string;
}

/** Two round trips per transaction (the sender waits for one): take the lock with the next nonce, then record it and let go. */
export function redisSignerLock(
  redis: ScriptRunner,
  prefix: string,
  opts: RedisSignerLockOptions = {},
): SignerLock {
  const holdMs = String(opts.holdMs ?? 60_000);
  const waitMs = opts.waitMs ?? 15_000;
  const busy = opts.busy ?? ((message: string) => new SignerBusyError(message));
  const tag = opts.tag ?? (() => "");
  // The locks this process may hold but could not let go, let go once Redis answers again: an
  // unlock that failed (Redis went away mid-send), and a lock whose taking got no answer (Redis ran
  // the script, then went away before its reply: its append-only file keeps the lock across the
  // restart, under a token only this process knows). Else such a lock stays held for the rest of
  // its hold (60 s), and every sender of the key waits on it, then gives up, long after Redis is back.
  const later = retryLater((u: { keys: string[]; token: string; next: string }) =>
    redis.eval(UNLOCK, { keys: u.keys, arguments: [u.token, u.next] }),
  );
  const unlockLater = (token: string, keys: string[], next: string, until: number) =>
    later(token, { keys, token, next }, until);
  return {
    async withNonce(signer, pending, send) {
      const base = `${prefix}signer:${tag("signer", signer.toLowerCase())}${signer.toLowerCase()}:`;
      const keys = [`${base}lock`, `${base}nonce`];
      const token = randomUUID();
      const deadline = Date.now() + waitMs;
      let takenAt = 0;
      let stored: string | null = null;
      for (let attempt = 0; ; attempt++) {
        let reply: unknown;
        try {
          reply = await redis.eval(LOCK, { keys, arguments: [token, holdMs] });
        } catch (err) {
          // Taken or not, unknown: let it go later should it be ours, the stored nonce untouched
          // (nothing was sent under this token).
          if (mayHaveRun(err)) unlockLater(token, keys, KEEP_NONCE, Date.now() + Number(holdMs));
          throw err;
        }
        const [taken, next] = reply as [number, string | null];
        if (taken === 1) {
          stored = next;
          takenAt = Date.now();
          break;
        }
        if (Date.now() > deadline) {
          throw busy("the settlement key is busy in another replica; retry");
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
        // Not awaited: the sender has its hash a round trip sooner, and this process's next LOCK is
        // sent after this UNLOCK on the same connection (Redis answers a connection in order).
        redis
          .eval(UNLOCK, { keys, arguments: [token, next] })
          .catch(() => unlockLater(token, keys, next, takenAt + Number(holdMs)));
      }
    },
  };
}
