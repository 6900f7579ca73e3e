// A Redis link that goes silent (no reset) under a service's client: the service's own connector
// (connectRedis) must give it up and connect anew, where node-redis alone waits for the kernel
// (minutes). Stand-in: a TCP proxy in front of the machine's real Redis plays the silent network.
import { randomUUID } from "node:crypto";
import {
  answerLost,
  closeRedis,
  connectRedis,
  createLogger,
  type Redis,
  replyWatch,
} from "@tollgate/platform";
import { afterAll, describe, expect, it } from "vitest";
import { until } from "../support/eventually.ts";
import { redisViaProxy } from "../support/redis.ts";
import { tcpProxy } from "../support/tcp-proxy.ts";

describe("replyWatch (the silent-link state machine, driven with plain numbers)", () => {
  /** A watch (tick 1 s, silent after 3 s) whose first probe, sent at 0, went unanswered until 3 s. */
  function suspectAt3s() {
    const watch = replyWatch({ everyMs: 1_000, silentMs: 3_000 });
    expect(watch.tick(0, true)).toBe("probe");
    const token = watch.sent(0);
    expect(watch.tick(1_000, true)).toBe("wait");
    expect(watch.tick(2_000, true)).toBe("wait");
    expect(watch.tick(3_000, true)).toBe("silent");
    return { watch, token };
  }

  it("probes every tick while none is out, finds the link silent once a probe waits silentMs, and waits for the caller's decision", () => {
    const { watch, token } = suspectAt3s();
    // Deciding (a second opinion under way): nothing else happens meanwhile.
    expect(watch.tick(4_000, true)).toBe("wait");
    // Given up: the next link is probed afresh, and the old probe's late failure changes nothing.
    watch.decided(4_200, false);
    expect(watch.tick(5_000, true)).toBe("probe");
    const next = watch.sent(5_000);
    watch.settled(token);
    expect(watch.tick(6_000, true)).toBe("wait");
    expect(watch.tick(7_000, true)).toBe("wait");
    expect(watch.tick(8_000, true)).toBe("silent");
    watch.settled(next);
  });

  it("a link kept (Redis slow, not the link) is looked at again silentMs after the decision, until its probe is answered", () => {
    const { watch, token } = suspectAt3s();
    watch.decided(3_500, true);
    expect(watch.tick(4_000, true)).toBe("wait");
    expect(watch.tick(5_000, true)).toBe("wait");
    expect(watch.tick(6_000, true)).toBe("wait");
    expect(watch.tick(7_000, true)).toBe("silent");
    watch.decided(7_200, true);
    expect(watch.waiting()).toBe(true);
    // Answered at last (even while a decision is under way, the caller sees it): probing goes on.
    watch.settled(token);
    expect(watch.waiting()).toBe(false);
    expect(watch.tick(8_000, true)).toBe("probe");
  });

  it("an answered probe lets the next go; no probe while the link is down", () => {
    const watch = replyWatch({ everyMs: 1_000, silentMs: 3_000 });
    expect(watch.tick(0, true)).toBe("probe");
    watch.settled(watch.sent(0));
    expect(watch.tick(1_000, false)).toBe("wait");
    expect(watch.tick(2_000, true)).toBe("probe");
  });

  it("a late tick (this process's loop was blocked, the answer maybe unread) never finds the link silent", () => {
    const watch = replyWatch({ everyMs: 1_000, silentMs: 3_000 });
    expect(watch.tick(0, true)).toBe("probe");
    watch.sent(0);
    expect(watch.tick(5_000, true)).toBe("wait");
    // The next tick on time decides.
    expect(watch.tick(6_000, true)).toBe("silent");
  });
});

describe("a service's Redis client on a link that goes silent (stand-in: TCP proxy in front of the real Redis)", () => {
  const key = `tollgate-test:silent-link:${randomUUID()}`;
  let cleanup: (() => Promise<void>) | undefined;
  afterAll(async () => cleanup?.());

  it("fails the command waiting on it as answer-lost within seconds, and the next command is served on a new link", async () => {
    const { proxy, viaProxy, close } = await redisViaProxy();
    cleanup = async () => {
      await viaProxy.del(key).catch(() => undefined);
      await close();
    };
    await viaProxy.set(key, "0");
    // Redis runs this one; its answer never comes back.
    proxy.holdReplies();
    const lost = viaProxy.incr(key);
    await until("Redis ran it (its answer held at the proxy)", () => proxy.held > 0, 10_000, 5);
    proxy.silence();
    await proxy.restore(); // new links flow; the silenced one stays silent
    const started = Date.now();
    const err = await lost.then(
      () => undefined,
      (e: unknown) => e,
    );
    // Without the watch, it waits for the kernel to give the connection up (minutes).
    expect(Date.now() - started).toBeLessThan(12_000);
    expect(err).toBeInstanceOf(Error);
    expect(answerLost(err)).toBe(true);
    // The writer reads back what landed, on the new link.
    await expect.poll(() => viaProxy.get(key).catch(() => "offline"), { timeout: 5_000 }).toBe("1");
    expect(await viaProxy.incr(key)).toBe(2);
  }, 20_000);

  it("waits for a Redis that is only slow (every link held, new ones too, 5 s): the command is answered, not failed as lost", async () => {
    const { proxy, viaProxy, close } = await redisViaProxy();
    try {
      await viaProxy.set(key, "10");
      proxy.stall(); // every byte held, on this link and on any new one: a Redis that stalls
      const started = Date.now();
      const answered = viaProxy.incr(key);
      // time-based: Redis stalls 5 s, the outage a link must outlive (the case under test).
      setTimeout(() => void proxy.restore(), 5_000);
      // A link given up would fail it (answer lost) with Redis never having run it.
      await expect(answered).resolves.toBe(11);
      expect(Date.now() - started).toBeGreaterThanOrEqual(4_900);
      expect(await viaProxy.get(key)).toBe("11");
    } finally {
      await close();
    }
  }, 20_000);

  it("closes within seconds at shutdown though a command waits on the silent link (the watch no longer runs on a closing client)", async () => {
    const { proxy, viaProxy, close } = await redisViaProxy();
    try {
      proxy.holdReplies();
      const waiting = viaProxy.get(key).catch((e: unknown) => e);
      await until("Redis answered (its answer held at the proxy)", () => proxy.held > 0, 10_000, 5);
      proxy.silence();
      const started = Date.now();
      await closeRedis(viaProxy);
      // node-redis's close() waits for every pending reply: minutes on a silent link.
      expect(Date.now() - started).toBeLessThan(4_000);
      expect(viaProxy.isOpen).toBe(false);
      expect(await waiting).toBeInstanceOf(Error);
    } finally {
      await close();
    }
  }, 20_000);

  it("drops a link that goes silent during its handshake (nothing read or written for idleMs), before it is ready, and connects anew", async () => {
    const proxy = await tcpProxy(6379);
    const logger = createLogger("test");
    logger.level = "silent";
    proxy.silenceNew();
    const client = (await connectRedis({
      url: proxy.url("redis"),
      logger,
      unreachable: "background",
      connectTimeoutMs: 300,
      idleMs: 2_000,
    })) as Redis;
    try {
      expect(client.isReady).toBe(false);
      await proxy.restore(); // new links flow; the one in its handshake stays silent
      await expect.poll(() => client.isReady, { timeout: 12_000, interval: 100 }).toBe(true);
      expect(await client.ping()).toBe("PONG");
    } finally {
      client.destroy();
      await proxy.close();
    }
  }, 20_000);
});
