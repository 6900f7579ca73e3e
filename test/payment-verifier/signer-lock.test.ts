// The settlement key's nonce across replicas: every transaction is sent while holding the key's
// lock in Redis, which keeps the next nonce. Two replicas sending at once must never use one nonce
// twice or skip one, and after a send that failed (the node may or may not have taken it) the next
// sender asks the node again.

import { localSignerLock, redisSignerLock } from "@tollgate/settlement-signer";
import { describe, expect, it } from "vitest";
import { eventually } from "../support/eventually.ts";
import { redisViaProxy, testRedis } from "../support/redis.ts";
import { uniqueId } from "./support.ts";

const prefix = `${uniqueId("test:signerlock:")}:`;
const redis = testRedis(prefix);

/** A node that accepts nonce n only when n is its next one, like a real node with no gaps. */
function node(start: number) {
  let next = start;
  const used: number[] = [];
  return {
    used,
    pending: async () => next,
    send: async (nonce: number) => {
      // time-based: a node's reply time, jittered so concurrent senders interleave.
      await new Promise((r) => setTimeout(r, Math.random() * 2));
      if (nonce !== next) throw new Error(`nonce too low or gapped: sent ${nonce}, node expects ${next}`);
      used.push(nonce);
      next++;
      return `0x${nonce.toString(16)}` as const;
    },
  };
}

describe("settlement key lock (Redis)", () => {
  it("gives two replicas sending 40 transactions at once 40 consecutive nonces, none twice", async () => {
    const chain = node(7);
    const signer = uniqueId("signer-");
    const replicas = [redisSignerLock(redis, prefix), redisSignerLock(redis, prefix)];
    const hashes = await Promise.all(
      Array.from({ length: 40 }, (_, i) => replicas[i % 2]!.withNonce(signer, chain.pending, chain.send)),
    );
    expect(chain.used).toEqual(Array.from({ length: 40 }, (_, i) => 7 + i));
    expect(new Set(hashes).size).toBe(40);
  });

  it("asks the node again after a failed send, and frees the lock for the next sender", async () => {
    const chain = node(0);
    const signer = uniqueId("signer-");
    const lock = redisSignerLock(redis, prefix, { waitMs: 1_000 });
    await lock.withNonce(signer, chain.pending, chain.send);
    let asked = 0;
    const pending = async () => {
      asked++;
      return chain.pending();
    };
    await expect(
      lock.withNonce(signer, pending, async () => {
        throw new Error("connection reset");
      }),
    ).rejects.toThrow("connection reset");
    expect(asked).toBe(0); // the stored nonce was used for the failed send
    await lock.withNonce(signer, pending, chain.send);
    expect(asked).toBe(1);
    expect(chain.used).toEqual([0, 1]);
  });
});

describe("settlement key lock across a Redis outage (the link cut by a TCP proxy in front of the machine's Redis)", () => {
  it("frees the lock once Redis is back when the outage struck mid-send: the next sender goes on at once, with the next nonce", async () => {
    const { proxy, viaProxy, close } = await redisViaProxy();
    try {
      const chain = node(0);
      const signer = uniqueId("signer-");
      const cutMidSend = redisSignerLock(viaProxy as never, prefix);
      const other = redisSignerLock(redis, prefix, { waitMs: 10_000 });
      // The transaction goes out, then Redis is out of reach as the lock is let go.
      await cutMidSend.withNonce(signer, chain.pending, async (nonce) => {
        await proxy.cut();
        return chain.send(nonce);
      });
      await proxy.restore();
      const started = performance.now();
      await other.withNonce(signer, chain.pending, chain.send);
      // Not the lock's 60 s hold (nor the 10 s wait, then "busy"): the reconnect, at most 2 s.
      expect(performance.now() - started).toBeLessThan(4_000);
      expect(chain.used).toEqual([0, 1]);
    } finally {
      await close();
    }
  });
});

describe("settlement key lock whose taking got no answer (Redis ran the script, the reply was lost as the link was cut by a TCP proxy in front of the machine's Redis)", () => {
  it("is let go once Redis answers again: the next sender goes on at once, not after the lock's 60 s hold", async () => {
    const { proxy, viaProxy, close } = await redisViaProxy();
    try {
      const chain = node(0);
      const signer = uniqueId("signer-");
      const lostReply = redisSignerLock(viaProxy as never, prefix);
      const other = redisSignerLock(redis, prefix, { waitMs: 10_000 });
      proxy.holdReplies();
      const attempt = lostReply.withNonce(signer, chain.pending, chain.send);
      const lockKey = `${prefix}signer:${signer.toLowerCase()}:lock`;
      expect(
        await eventually(
          () => redis.get(lockKey),
          (v) => v !== null,
          10_000,
          10,
        ),
      ).not.toBeNull(); // taken in Redis; its reply held
      await proxy.cut();
      await expect(attempt).rejects.toThrow();
      expect(chain.used).toEqual([]); // nothing sent by the sender that lost the reply
      await proxy.restore();
      const started = performance.now();
      await other.withNonce(signer, chain.pending, chain.send);
      // Not the 10 s wait, then "busy" (the lock held for 60 s): the reconnect, at most 2 s.
      expect(performance.now() - started).toBeLessThan(4_000);
      expect(chain.used).toEqual([0]);
    } finally {
      await close();
    }
  });
});

describe("settlement key lock (one process, no Redis)", () => {
  it("counts nonces itself after the first and asks the node again after a failed send", async () => {
    const chain = node(3);
    const lock = localSignerLock();
    let asked = 0;
    const pending = async () => {
      asked++;
      return chain.pending();
    };
    await lock.withNonce("k", pending, chain.send);
    await lock.withNonce("k", pending, chain.send);
    expect(asked).toBe(1);
    await expect(lock.withNonce("k", pending, () => Promise.reject(new Error("reset")))).rejects.toThrow();
    await lock.withNonce("k", pending, chain.send);
    expect(asked).toBe(2);
    expect(chain.used).toEqual([3, 4, 5]);
  });
});
