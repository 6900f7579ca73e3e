// The official SDK's x402-batch channel records (RedisChannelStorage: a compare-and-set in Lua per
// update), on a Redis client that reads back an update whose answer was lost (Redis ran it, then the
// link dropped) instead of failing it. Failed, a charge that landed was answered as a refused call
// (charged, not served) and a channel lock that landed kept the channel busy for the offer's timeout.
// The SDK's script takes (expected exists, expected value, operation, next value) for one key: read
// back, the key holding what the update writes means it landed; still holding what it expected, it
// has not landed yet, and may still (a late delivery): the record is rewritten as an equal one (its
// JSON and a trailing space) by the same compare-and-set, so that late delivery finds it changed and
// does nothing, and the update is answered "not applied": the SDK reads the record again and retries,
// as after any lost race. An update that created the record (nothing to rewrite), or a record found
// changed otherwise, stays failed as before.
import type { Redis } from "@tollgate/platform";
import { answerLost, readBack } from "@tollgate/platform/redis";
import { RedisChannelStorage } from "@x402/evm/batch-settlement/server/redis-storage";
import { READ_BACK_MS } from "./read-back.ts";

const OPERATIONS = new Set(["set", "delete", "keep"]);

/** The SDK's channel storage on `redis`, its keys `<keyPrefix>:server:channel:<id>`. */
export function batchChannelStorage(redis: Redis, keyPrefix: string): RedisChannelStorage {
  const client = {
    get: (key: string) => redis.get(key),
    set: (key: string, value: string, options?: { NX?: true; PX?: number }) => redis.set(key, value, options),
    del: (key: string) => redis.del(key),
    scanIterator: (options: { MATCH?: string; COUNT?: number }) => redis.scanIterator(options),
    async eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown> {
      try {
        return await redis.eval(script, options);
      } catch (err) {
        const [key] = options.keys;
        const [exists, expected, operation, next] = options.arguments;
        if (!answerLost(err) || key === undefined || options.arguments.length !== 4) throw err;
        if (!OPERATIONS.has(operation ?? "")) throw err;
        const found = await readBack(() => redis.get(key), READ_BACK_MS);
        if (!found) throw err;
        const before = exists === "0" ? null : (expected ?? null);
        const written = operation === "set" ? (next ?? null) : operation === "delete" ? null : before;
        if (found.value === written) return [1, written ?? false];
        if (exists !== "1" || before === null || found.value !== before) throw err;
        const fenced = `${before} `;
        const fence = await readBack(
          () => redis.eval(script, { keys: [key], arguments: ["1", before, "set", fenced] }),
          READ_BACK_MS,
        );
        const [applied, current] = (fence?.value ?? []) as [number?, (string | false)?];
        // Fenced (by this run, or by an earlier one whose answer was lost): the SDK retries.
        if (applied === 1 || current === fenced) return [0, fenced];
        // The late delivery beat the fence: it landed after all.
        if (applied === 0 && (current || null) === written) return [1, written ?? false];
        throw err;
      }
    },
  };
  return new RedisChannelStorage({ client, keyPrefix });
}
