// A lease in Redis: at most one holder at a time, for `ttlMs` after its last renewal. The holder
// renews it on every tick; a holder that dies lets it lapse, and another replica takes over. Every
// take of the lease raises its epoch (a fencing token): a holder checks, right before each
// transaction it sends, that the lease is still its own under the epoch it took, so a replica that
// stalled past its lease never acts after another replica took over.
import { randomUUID } from "node:crypto";
import type { ScriptRunner } from "@tollgate/settlement-signer";

// KEYS[1] the lease, KEYS[2] its epoch; ARGV[1] our token, ARGV[2] its time to live (ms).
// Renew ours, or take a free one under a new epoch. Reply: the epoch held, or 0.
const HOLD = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return tonumber(redis.call('GET', KEYS[2]) or '0')
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end
return 0`;

// KEYS[1] the lease, KEYS[2] its epoch; ARGV[1] our token, ARGV[2] the epoch we took. 1 while both hold.
const FENCE = `
if redis.call('GET', KEYS[1]) == ARGV[1] and redis.call('GET', KEYS[2]) == ARGV[2] then return 1 end
return 0`;

// Deletes the lease only if we still hold it.
const LET_GO = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export interface Lease {
  /** Takes or renews the lease; true while this process holds it. */
  hold(): Promise<boolean>;
  /** The epoch this process took the lease under (0: not held at the last hold()). */
  epoch(): number;
  /** True when the lease is still this process's, under the epoch it took (checked before acting). */
  fence(): Promise<boolean>;
  /** Gives it up (on shutdown), so another replica takes over without waiting for it to lapse. */
  letGo(): Promise<void>;
}

/**
 * The lease `key` (its epoch beside it: `<key>:epoch`). `tag`: their hash tag, so both share one slot
 * of a Redis Cluster (the platform's slotTags; none on a single Redis).
 */
export function redisLease(
  redis: ScriptRunner,
  key: string,
  ttlMs: number,
  tag: (kind: string, id: string) => string = () => "",
): Lease {
  const token = randomUUID();
  const tagged = `${key}${tag("lease", key)}`;
  const keys = [tagged, `${tagged}:epoch`];
  let epoch = 0;
  return {
    async hold() {
      epoch = Number(await redis.eval(HOLD, { keys, arguments: [token, String(ttlMs)] }));
      return epoch > 0;
    },
    epoch: () => epoch,
    async fence() {
      if (epoch === 0) return false;
      return (await redis.eval(FENCE, { keys, arguments: [token, String(epoch)] })) === 1;
    },
    async letGo() {
      epoch = 0;
      await redis.eval(LET_GO, { keys: [tagged], arguments: [token] });
    },
  };
}
