// The reservation store when Redis frees a reservation and the answer is lost (the link drops after
// the script ran): the release runs again under its own id and is answered what it freed, so the
// core still has the scheme undo its hold (an x402-batch deposit's channel lock). Taken as failed,
// the release was deferred, found nothing left to free, and the hold lapsed only with its timeout.
// The machine's Redis, reached through a TCP proxy the test controls (the stand-in for a network
// path that drops).
import { describe, expect, it } from "vitest";
import { RedisReservationStore } from "../../services/payment-verifier/src/stores/reservations-redis.ts";
import { until } from "../support/eventually.ts";
import { redisViaProxy, testRedis } from "../support/redis.ts";
import { paymentFacts, uniqueId } from "./support.ts";

const prefix = `${uniqueId("test:reservations-lost:")}:`;
const redis = testRedis(prefix);

describe("reservation store: a release whose answer was lost (replies held, then the link cut by a TCP proxy in front of the machine's Redis)", () => {
  it("is answered what it freed once Redis answers again, and frees nothing twice", async () => {
    const { proxy, viaProxy, close } = await redisViaProxy();
    try {
      const store = new RedisReservationStore(viaProxy, prefix);
      const key = uniqueId("k-");
      const requestId = uniqueId("req-");
      const facts = paymentFacts({ scheme: "batch-settlement", requestId });
      expect((await store.reserve(key, "tok", facts, 60_000)).ok).toBe(true);
      await store.markVerified(key, "tok", { collected: "", hold: "channel-lock-token" });

      proxy.holdReplies();
      const released = store.release(key, "tok", requestId, { id: "replica-a:1", keepMs: 60_000 });
      // Redis ran it: the reservation is gone (read beside the proxy); its answer is held.
      await until(
        "Redis ran the release",
        async () => (await redis.exists(`${prefix}reservation:${key}`)) === 0,
        10_000,
        10,
      );
      await proxy.cut();
      // time-based: the link stays cut a while: the outage the lost reply lives through.
      setTimeout(() => void proxy.restore(), 300);
      // What it freed, the scheme's hold with it: the core's undo runs on this.
      await expect(released).resolves.toMatchObject({ token: "tok", requestId, hold: "channel-lock-token" });
      // Another release of the call (a retried Release) frees nothing: the undo runs once.
      expect(
        await store.release(key, "tok", requestId, { id: "replica-b:1", keepMs: 60_000 }),
      ).toBeUndefined();
    } finally {
      await close();
    }
  }, 20_000);
});
