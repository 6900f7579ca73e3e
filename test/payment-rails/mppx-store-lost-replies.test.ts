// The mppx store when Redis runs a write and its answer is lost (the link drops after the script ran):
// the writer reads back whether it landed instead of guessing. Guessing "failed" answered a session
// call failed while its deduction stayed charged, and lost the claim of a paid transfer; guessing
// "landed" would serve a call whose charge never happened. The machine's Redis, reached through a TCP
// proxy the test controls (the stand-in for a network path that drops).
import { describe, expect, it } from "vitest";
import {
  redisAtomicStore,
  type StoreScope,
  storeScope,
  type Undoing,
  undoDeduction,
} from "../../libs/payment-rails/src/mppx-store.ts";
import { uniqueId } from "../payment-verifier/support.ts";
import { until } from "../support/eventually.ts";
import { redisViaProxy, testRedis } from "../support/redis.ts";

const prefix = `${uniqueId("test:mppx-lost:")}:`;
const redis = testRedis(prefix);

/**
 * A channel's deduction, as mppx's session server writes it: spent raised by the price, units by one. `meanwhile`
 * runs once, between the store's read and its write (the moment the link is to fail).
 */
function deduct(meanwhile: () => void) {
  let once = true;
  return (current: unknown) => {
    if (once) meanwhile();
    once = false;
    const channel = current as { spent: bigint; units: number };
    return {
      op: "set" as const,
      value: { ...channel, spent: channel.spent + 1_000n, units: channel.units + 1 },
      result: "charged",
    };
  };
}

const spentOf = async (key: string) =>
  (JSON.parse((await redis.get(key)) ?? "{}") as { spent: string }).spent;

type Proxy = Awaited<ReturnType<typeof redisViaProxy>>["proxy"];

/**
 * A channel at 5,000 spent, its deduction started through the proxy with `fault` struck between its
 * read and its write; `undoing`: what the store does with a failed update that landed after all.
 */
async function deductThrough(
  fault: (proxy: Proxy) => void,
  test: (t: {
    proxy: Proxy;
    update: Promise<unknown>;
    spent: () => Promise<string>;
    key: string;
    /** Where the store left the undo of the update, had it failed with its outcome unknown. */
    scope: StoreScope;
  }) => Promise<void>,
  undoing?: Undoing,
  storePrefix = `${prefix}ch:`,
) {
  const { proxy, viaProxy, close } = await redisViaProxy();
  try {
    const store = redisAtomicStore(viaProxy, storePrefix, undefined, undefined, undoing);
    const key = uniqueId("channel-");
    await store.put(key, { spent: 5_000n, units: 5 });
    // As a session Settle runs mppx: inside an undo scope.
    const scope: StoreScope = {};
    const update = storeScope.run(scope, () =>
      store.update(
        key,
        deduct(() => fault(proxy)),
      ),
    );
    await test({ proxy, update, spent: () => spentOf(`${storePrefix}${key}`), key, scope });
  } finally {
    await close();
  }
}

describe("mppx store: a write whose answer was lost (replies held, then the link cut by a TCP proxy in front of the machine's Redis)", () => {
  it("an update Redis ran is read back as landed once Redis answers: the call is charged once, not refused", async () => {
    await deductThrough(
      (proxy) => proxy.holdReplies(),
      async ({ proxy, update, spent }) => {
        await until("Redis ran the write", async () => (await spent()) === "6000#__bigint", 10_000, 10);
        await proxy.cut();
        // time-based: the link stays cut a while: the outage the lost reply lives through.
        // time-based: the link stays cut a while: the outage the lost reply lives through.
        setTimeout(() => void proxy.restore(), 300);
        await expect(update).resolves.toBe("charged");
        // Charged exactly once: not taken as failed, and not run a second time.
        expect(await spent()).toBe("6000#__bigint");
      },
    );
  });

  it("an update Redis ran is read back as landed however many writes other replicas made to the channel meanwhile", async () => {
    const others = redisAtomicStore(redis, `${prefix}ch:`);
    await deductThrough(
      (proxy) => proxy.holdReplies(),
      async ({ proxy, update, spent, key }) => {
        await until("Redis ran the write", async () => (await spent()) === "6000#__bigint", 10_000, 10);
        await proxy.cut();
        // Other replicas go on charging the channel while this one waits for Redis.
        for (let i = 0; i < 20; i++)
          await others.update(
            key,
            deduct(() => {}),
          );
        // time-based: the link stays cut a while: the outage the lost reply lives through.
        // time-based: the link stays cut a while: the outage the lost reply lives through.
        setTimeout(() => void proxy.restore(), 300);
        await expect(update).resolves.toBe("charged");
        expect(await spent()).toBe("26000#__bigint");
      },
    );
  });

  it("an update the link dropped before Redis ran it is run again once Redis answers, once", async () => {
    // Every byte held both ways, then dropped: the script never reaches Redis.
    await deductThrough(
      (proxy) => proxy.stall(),
      async ({ proxy, update, spent }) => {
        await until("the update reached the stalled link", () => proxy.held > 0, 10_000, 5);
        await proxy.cut();
        expect(await spent()).toBe("5000#__bigint");
        // time-based: the link stays cut a while: the outage the lost reply lives through.
        // time-based: the link stays cut a while: the outage the lost reply lives through.
        setTimeout(() => void proxy.restore(), 300);
        await expect(update).resolves.toBe("charged");
        expect(await spent()).toBe("6000#__bigint");
      },
    );
  });

  it("a replay claim Redis took is read back as this claimer's: the paid transfer is served, and a second claim of it is refused", async () => {
    const { proxy, viaProxy, close } = await redisViaProxy();
    try {
      const store = redisAtomicStore(viaProxy, `${prefix}replay:`);
      const other = redisAtomicStore(redis, `${prefix}replay:`);
      const key = uniqueId("mppx:charge:0x");
      const expires = Date.now() + 60_000;
      proxy.holdReplies();
      const claim = store.tryClaim?.(key, expires);
      await until(
        "Redis ran the write",
        async () => (await redis.exists(`${prefix}replay:${key}`)) === 1,
        10_000,
        10,
      );
      await proxy.cut();
      // time-based: the link stays cut a while: the outage the lost reply lives through.
      setTimeout(() => void proxy.restore(), 300);
      await expect(claim).resolves.toBe(true);
      await expect(other.tryClaim?.(key, expires)).resolves.toBe(false);
    } finally {
      await close();
    }
  });

  it("a write with Redis still away when the read-back gives up fails as before (the call answered 503)", async () => {
    await deductThrough(
      (proxy) => proxy.holdReplies(),
      async ({ proxy, update, spent }) => {
        await until("Redis ran the write", async () => (await spent()) === "6000#__bigint", 10_000, 10);
        await proxy.cut();
        await expect(update).rejects.toThrow();
      },
    );
  }, 15_000);

  it("a session deduction that failed so (its call answered failed) but had landed is given back once Redis answers: the channel is not charged for it", async () => {
    const reports: string[] = [];
    await deductThrough(
      (proxy) => proxy.holdReplies(),
      async ({ proxy, update, spent, scope }) => {
        await until("Redis ran the write", async () => (await spent()) === "6000#__bigint", 10_000, 10);
        await proxy.cut();
        await expect(update).rejects.toThrow();
        expect(await spent()).toBe("6000#__bigint");
        const undo = scope.undo;
        expect(undo).toBeDefined();
        // time-based: Redis stays away a while; the undo waits for it.
        setTimeout(() => void proxy.restore(), 1_000);
        // Run by its caller (the core, once no takeover can serve the call); it waits for Redis.
        await undo?.();
        expect(await spent()).toBe("5000#__bigint");
        expect(reports).toEqual(["undone"]);
      },
      { undo: undoDeduction, report: (outcome) => reports.push(outcome) },
    );
  }, 20_000);

  it("a session deduction that failed so and had not reached Redis is fenced off once Redis answers: nothing given back, nothing charged", async () => {
    const reports: string[] = [];
    // A store prefix of its own: the marks under it are this test's writes only.
    const own = `${prefix}fenced:`;
    const fenced = async () => {
      const marks = await redis.keys(`${own}~write:*`);
      const values = await Promise.all(marks.map((m) => redis.get(m)));
      return values.filter((v) => v === "0").length;
    };
    await deductThrough(
      (proxy) => proxy.stall(),
      async ({ proxy, update, spent, scope }) => {
        await until("the update reached the stalled link", () => proxy.held > 0, 10_000, 5);
        await proxy.cut();
        await expect(update).rejects.toThrow();
        expect(await fenced()).toBe(0);
        await proxy.restore();
        expect(scope.undo).toBeDefined();
        await scope.undo?.();
        // Its mark now says "not landed": a late delivery of it can never land.
        expect(await fenced()).toBe(1);
        expect(await spent()).toBe("5000#__bigint");
        expect(reports).toEqual([]);
      },
      { undo: undoDeduction, report: (outcome) => reports.push(outcome) },
      own,
    );
  }, 20_000);
});

describe('mppx store: a failure told to the caller\'s scope (mppx itself turns it into "channel not found", which the session scheme would answer 402)', () => {
  it("a read or write that fails inside a scope marks it failed, so the session scheme answers 503; one that succeeds does not", async () => {
    const { proxy, viaProxy, close } = await redisViaProxy();
    try {
      const store = redisAtomicStore(viaProxy, `${prefix}ch:`);
      const key = uniqueId("channel-");
      const ok: StoreScope = {};
      await storeScope.run(ok, () => store.put(key, { spent: 1n, units: 1 }));
      expect(await storeScope.run(ok, () => store.get(key))).toEqual({ spent: 1n, units: 1 });
      expect(ok.failed).toBeUndefined();
      // What mppx's own update function throws is its refusal of the payment (a 402), not the store's.
      const refused: StoreScope = {};
      const finalized = () => {
        throw new Error("channel is finalized");
      };
      await expect(storeScope.run(refused, () => store.update(key, finalized))).rejects.toThrow(
        "channel is finalized",
      );
      expect(refused.failed).toBeUndefined();
      await proxy.cut();
      const failed: StoreScope = {};
      await expect(storeScope.run(failed, () => store.get(key))).rejects.toThrow();
      expect(failed.failed).toBe(true);
    } finally {
      await close();
    }
  }, 15_000);
});

describe("undoDeduction: what giving a failed call's deduction back may change", () => {
  const before = { spent: 5_000n, units: 5, settledOnChain: 0n };
  const written = { spent: 6_000n, units: 6, settledOnChain: 0n };
  it("gives the price back from the channel as it is by then (other calls charged meanwhile stay charged)", () => {
    const undo = undoDeduction(before, written);
    expect(undo?.({ spent: 9_000n, units: 9, settledOnChain: 0n })).toEqual({
      spent: 8_000n,
      units: 8,
      settledOnChain: 0n,
    });
  });
  it("never below what the channel settled on chain, nor on a finalized or closing channel", () => {
    const undo = undoDeduction(before, written);
    expect(undo?.({ spent: 6_000n, units: 6, settledOnChain: 6_000n })).toBeUndefined();
    expect(undo?.({ spent: 6_000n, units: 6, settledOnChain: 0n, finalized: true })).toBeUndefined();
    expect(undo?.({ spent: 6_000n, units: 6, settledOnChain: 0n, closeRequestedAt: 17n })).toBeUndefined();
  });
  it("brings back the voucher of exactly what was spent before, which the deduction pushed out", () => {
    const v = (n: bigint) => ({ cumulativeAmount: n, signature: `0x${n}` });
    const b = {
      ...before,
      highestVoucher: v(6_000n),
      settleableVoucher: v(5_000n),
      ceilingVoucher: v(6_000n),
    };
    const w = { ...written, highestVoucher: v(6_000n), settleableVoucher: v(6_000n), ceilingVoucher: null };
    expect(undoDeduction(b, w)?.(w)).toMatchObject({
      spent: 5_000n,
      settleableVoucher: v(5_000n),
      ceilingVoucher: v(6_000n),
    });
  });
  it("leaves every other update: a voucher accepted, a sync of what was settled on chain", () => {
    expect(undoDeduction(before, { ...before, highestVoucherAmount: 9_000n })).toBeUndefined();
    expect(undoDeduction(before, { ...before, spent: 7_000n, settledOnChain: 7_000n })).toBeUndefined();
  });
});
