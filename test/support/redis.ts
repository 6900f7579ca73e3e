// The machine's Redis for one test file: a client connected before its tests, and every key under
// the file's own prefix deleted after them (the server is shared: never FLUSHALL).

import type { Redis } from "@tollgate/platform";
import { createClient } from "redis";
import { afterAll, beforeAll } from "vitest";

export function testRedis(prefix: string): Redis {
  const redis = createClient({ url: "redis://127.0.0.1:6379" }) as unknown as Redis;
  beforeAll(async () => {
    await redis.connect();
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(keys);
    await redis.close();
  });
  return redis;
}
