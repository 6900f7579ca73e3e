// The official SDK's x402-batch channel records (RedisChannelStorage: a compare-and-set in Lua per
// update), on a Redis client that reads back an update whose answer was lost (Redis ran it, then the
// link dropped) instead of failing it. Failed, a charge that landed was answered as a refused call
// (charged, not served) and a channel lock that landed kept the channel busy for the offer's timeout.
// Each update runs the SDK's own script inside one of ours that marks its write id in the same run
// (a key of its own, kept 30 s: WRITE_MARK_MS), as the mppx store does: read back, the mark says
// whether it landed; "not landed" leaves the mark fencing it off for its 30 s, so a late delivery of
// it then does nothing, whatever the record holds (the same bytes again included), and the update is
// answered "not applied": the SDK reads the record again and retries, as after any lost race. An
// update that creates the record is fenced the same way. (Past the mark's life only the SDK's own
// compare-and-set guards a delivery later still, as before; the mppx store's marks live as long.)
import type { Redis } from "@tollgate/platform";
import { answerLost, isCluster, scanEveryMaster, slotTags } from "@tollgate/platform/redis";
import { RedisChannelStorage } from "@x402/evm/batch-settlement/server/redis-storage";
import { channelRecordKey } from "./batch-refunds.ts";
import { markedWrite, WRITE_MARK_MS, writeIds } from "./read-back.ts";

/**
 * The SDK's script, run only when this write's mark (KEYS[2]) is not there yet, and marking it when
 * it applied. Not applied ({0, current}), as the SDK's script answers a lost race.
 */
function marked(script: string): string {
  return `
if redis.call('EXISTS', KEYS[2]) == 1 then return {0, redis.call('GET', KEYS[1]) or false} end
local result = (function()
${script}
end)()
if type(result) == 'table' and result[1] == 1 then redis.call('SET', KEYS[2], '1', 'PX', ${WRITE_MARK_MS}) end
return result`;
}

/**
 * The SDK's channel storage on `redis`, its keys `<keyPrefix>:server:channel:<id>`. On a Redis Cluster
 * a record's name carries its channel's hash tag (channelRecordKey), and so do its writes' marks: the
 * SDK's names are mapped to those here, in and out (a name it lists is already one).
 */
export function batchChannelStorage(redis: Redis, keyPrefix: string): RedisChannelStorage {
  const nextWrite = writeIds();
  const cluster = isCluster(redis);
  const tags = slotTags(redis);
  const records = `${keyPrefix}:server:channel:`;
  const recordKey = channelRecordKey(keyPrefix, tags);
  // The SDK's name of a record, as stored (a listed name is stored already: it carries a tag).
  const named = (key: string) =>
    cluster && key.startsWith(records) && !key.includes("{", records.length)
      ? recordKey(key.slice(records.length))
      : key;
  const tagOf = (key: string) =>
    key.startsWith(records)
      ? tags(
          "channel",
          key
            .slice(records.length)
            .replace(/^\{[^}]*\}/, "")
            .toLowerCase(),
        )
      : "";
  // Each script the SDK sends, wrapped (its update) or not (null): decided once per script text.
  const scripts = new Map<string, string | null>();
  const client = {
    get: (key: string) => redis.get(named(key)),
    set: (key: string, value: string, options?: { NX?: true; PX?: number }) =>
      redis.set(named(key), value, options),
    del: (key: string) => redis.del(named(key)),
    scanIterator: (options: { MATCH?: string; COUNT?: number }) => scanEveryMaster(redis, options),
    async eval(script: string, given: { keys: string[]; arguments: string[] }): Promise<unknown> {
      const options = cluster ? { keys: given.keys.map(named), arguments: given.arguments } : given;
      const [key] = options.keys;
      let wrapped = scripts.get(script);
      if (wrapped === undefined) {
        // The SDK's update only (@x402/evm pinned: expected exists, expected value, operation, next
        // value); a script with a `#!lua` header must stay first, so is never wrapped.
        const update = !script.startsWith("#!") && script.includes("local expectedExists = ARGV[1]");
        wrapped = update ? marked(script) : null;
        scripts.set(script, wrapped);
      }
      if (
        wrapped === null ||
        key === undefined ||
        options.keys.length !== 1 ||
        options.arguments.length !== 4
      )
        return redis.eval(script, options);
      const mark = `${keyPrefix}:~write:${cluster ? tagOf(key) : ""}${nextWrite()}`;
      const sentAt = performance.now();
      try {
        return await redis.eval(wrapped, { keys: [key, mark], arguments: options.arguments });
      } catch (err) {
        if (!answerLost(err)) throw err;
        const outcome = await markedWrite(redis, mark, sentAt);
        if (outcome === "unknown") throw err;
        if (outcome === "fenced") return [0, false]; // the SDK reads the record again and retries
        // As the SDK's script answers an applied write (its value is not read on this path).
        const [, , operation, next] = options.arguments;
        return [1, operation === "set" ? (next ?? false) : false];
      }
    },
  };
  return new RedisChannelStorage({ client, keyPrefix });
}
