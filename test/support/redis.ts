// The machine's Redis for one test file: a client connected before its tests, and every key under
// the file's own prefix deleted after them (the server is shared: never FLUSHALL).

import { connectRedis, createLogger, type RedisSingle } from "@tollgate/platform";
import { createClient } from "redis";
import { afterAll, beforeAll } from "vitest";
import { tcpProxy } from "./tcp-proxy.ts";

export function testRedis(prefix: string): RedisSingle {
  const redis = createClient({ url: "redis://127.0.0.1:6379" }) as unknown as RedisSingle;
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

/** A service's Redis client (its options) reaching the machine's Redis through a TCP proxy the test controls. */
export async function redisViaProxy() {
  const proxy = await tcpProxy(6379);
  const logger = createLogger("test");
  logger.level = "silent";
  const viaProxy = (await connectRedis({
    url: proxy.url("redis"),
    logger,
    unreachable: "wait",
  })) as RedisSingle;
  const close = async () => {
    viaProxy.destroy();
    await proxy.close();
  };
  return { proxy, viaProxy, close };
}
