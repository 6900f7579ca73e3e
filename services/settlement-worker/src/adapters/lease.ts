// A lease in Redis: at most one holder at a time, for `ttlMs` after its last renewal. The holder
// renews it on every tick; a holder that dies lets it lapse, and another replica takes over.
import { randomUUID } from "node:crypto";
import type { Redis } from "@tollgate/platform";

// KEYS[1] the lease; ARGV[1] our token, ARGV[2] its time to live (ms). Renew ours, or take a free one.
const HOLD = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`;

// Deletes the lease only if we still hold it.
const LET_GO = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export interface Lease {
  /** Takes or renews the lease; true while this process holds it. */
  hold(): Promise<boolean>;
  /** Gives it up (on shutdown), so another replica takes over without waiting for it to lapse. */
  letGo(): Promise<void>;
}

export function redisLease(redis: Redis, key: string, ttlMs: number): Lease {
  const token = randomUUID();
  return {
    async hold() {
      return (await redis.eval(HOLD, { keys: [key], arguments: [token, String(ttlMs)] })) === 1;
    },
    async letGo() {
      await redis.eval(LET_GO, { keys: [key], arguments: [token] });
    },
  };
}
