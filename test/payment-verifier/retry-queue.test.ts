// The clean-ups payment-verifier could not run while its store was down (core/retry-queue.ts), and
// what a Verify does with them first. Issue 41: x402-batch's payer's first call after a Redis outage
// was refused "another request on this payment channel is in progress", twice in two runs
// (test/e2e/x402-batch-redis-outage.test.ts): the channel lock of a call that died with the outage
// was let go by the queue's timer round, and a Verify arriving while that round ran found nothing
// pending, so it took the channel first. The store here is a switch and a gate, so the race is
// played in order instead of by chance.
import { describe, expect, it } from "vitest";
import { RetryQueue } from "../../services/payment-verifier/src/core/retry-queue.ts";

/**
 * A store that is down until `up()`; a command fails when it was sent while the store was down, and
 * its reply waits at `gate` (on its way) until `open()`.
 */
function store() {
  let isUp = false;
  let open: () => void = () => undefined;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  return {
    up: () => {
      isUp = true;
    },
    open,
    async command(): Promise<void> {
      const sentWhileUp = isUp;
      await gate;
      if (!sentWhileUp) throw new Error("store unreachable");
    },
  };
}

/** What verify.ts does before it admits a payment. */
async function beforeVerify(queue: RetryQueue): Promise<void> {
  if (queue.pending) await queue.drain();
}

describe("RetryQueue, before a Verify", () => {
  it("waits for the round in flight, whose release lands once the store is back: the lock is let go first", async () => {
    const queue = new RetryQueue(Date.now);
    const redis = store();
    let released = false;
    queue.defer(60_000, async () => {
      await redis.command();
      released = true;
    });
    // The store is back; the timer's round runs the release, its reply still on its way.
    redis.up();
    const round = queue.retry();
    const verify = beforeVerify(queue);
    redis.open();
    await verify;
    expect(released).toBe(true);
    await round;
  });

  it("runs again what a round started while the store was down could not do", async () => {
    const queue = new RetryQueue(Date.now);
    const redis = store();
    let released = false;
    queue.defer(60_000, async () => {
      await redis.command();
      released = true;
    });
    // The timer's round sends the release while the store is down; a Verify comes; the store is back.
    const round = queue.retry();
    const verify = beforeVerify(queue);
    redis.up();
    redis.open();
    await round;
    await verify;
    expect(released).toBe(true);
    expect(queue.pending).toBe(false);
  });
});
