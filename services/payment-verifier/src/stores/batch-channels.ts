// The official SDK's x402-batch channel records (RedisChannelStorage: a compare-and-set in Lua per
// update), on a Redis client that reads back an update whose answer was lost (Redis ran it, then the
// link dropped) instead of failing it. Failed, a charge that landed was answered as a refused call
// (charged, not served) and a channel lock that landed kept the channel busy for the offer's timeout.
// The SDK's script takes (expected exists, expected value, operation, next value) for one key: read
// back, the key holding what the update writes means it landed. Anything else stays failed, as
// before: "not landed" cannot be told apart from "not landed yet" (the SDK's script has no fence
// against a late delivery), and a retry could then take the channel's lock twice.
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
        throw err;
      }
    },
  };
  return new RedisChannelStorage({ client, keyPrefix });
}
