import { randomUUID } from "node:crypto";
import type { Redis } from "@tollgate/platform";
import { readBack } from "@tollgate/platform/redis";

/**
 * How long a store write whose answer was lost waits for Redis to read back (or run again) what it
 * did: inside the gateway's Verify (10 s) and Settle (30 s) deadlines. Past it, the write fails as
 * before (503) and its clean-up waits for Redis.
 */
export const READ_BACK_MS = 5_000;

/**
 * How long a write's mark lives (its own key, set by the script that writes, in the same run). A
 * writer that reads "not landed" later than this after sending (a reply that hung on a silent link:
 * node-redis puts no deadline on a sent command) cannot tell it from a mark that lapsed, and takes
 * the write as failed.
 */
export const WRITE_MARK_MS = 30_000;

/**
 * KEYS[1] a write's mark. 1 when that write landed; otherwise 0, and the mark now fences it off: the
 * write's script finds the mark there and does nothing, should it still arrive (a late delivery).
 */
export const LANDED = `
if redis.call('SET', KEYS[1], '0', 'NX', 'PX', ${WRITE_MARK_MS}) then return 0 end
return tonumber(redis.call('GET', KEYS[1]))`;

/** Write ids for marks: a store's own random prefix and a counter (unique across replicas and restarts). */
export function writeIds(): () => string {
  const writer = randomUUID().slice(0, 13);
  let writes = 0;
  return () => `${writer}:${++writes}`;
}

/**
 * What became of a marked write whose answer was lost, sent at `sentAt` (performance.now()), once
 * Redis answers within READ_BACK_MS: "landed"; "fenced" (it had not, and now never will); "unknown"
 * (Redis did not answer in time, or the answer came after the mark could have lapsed).
 */
export async function markedWrite(
  redis: Redis,
  mark: string,
  sentAt: number,
): Promise<"landed" | "fenced" | "unknown"> {
  const found = await readBack(() => redis.eval(LANDED, { keys: [mark], arguments: [] }), READ_BACK_MS);
  if (!found) return "unknown";
  if (found.value === 1) return "landed";
  return performance.now() - sentAt < WRITE_MARK_MS ? "fenced" : "unknown";
}
