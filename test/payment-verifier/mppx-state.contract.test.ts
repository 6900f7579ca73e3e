// The state mppx keeps for MPP (replay claims, session channels), written twice — a Redis Lua
// compare-and-set and an in-memory stand-in: one contract suite run against both
// (stores.contract.support.ts), and how the Redis one lays out its keys.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { type MppxState, redisMppxState } from "../../libs/payment-rails/src/mppx-store.ts";
import { eventually } from "../support/eventually.ts";
import { useContractStores } from "./stores.contract.support.ts";

const { prefix, redis, mppxStates } = useContractStores();

describe.each(mppxStates)(
  "mppx state contract (MPP replay claims and session channels): %s",
  (_name, make) => {
    const channelId = () => `0x${randomBytes(32).toString("hex")}`;

    it("reads back what mppx writes, bigints included (mppx's own JSON)", async () => {
      const state = make();
      const id = channelId();
      const value = { channelId: id, spent: 123n, deposit: 10n ** 20n, finalized: false, units: 3 };
      await state.channels.put(id, value);
      expect(await state.channels.get(id)).toEqual(value);
      expect(await state.channels.get(channelId())).toBeNull();
      await state.channels.delete(id);
      expect(await state.channels.get(id)).toBeNull();
    });

    it("lets one of many concurrent claims of a replay key win, until the key's expiry", async () => {
      const state = make();
      const key = `mppx:charge:${channelId()}`;
      const expires = Date.now() + 1_200;
      const claims = await Promise.all(
        Array.from({ length: 20 }, () => state.charges.tryClaim?.(key, expires)),
      );
      expect(claims.filter((c) => c === true)).toHaveLength(1);
      expect(await state.charges.tryClaim?.(key, Date.now() + 60_000)).toBe(false);
      // Claimable again once the first claim's expiry has passed.
      expect(
        await eventually(() => state.charges.tryClaim?.(key, Date.now() + 60_000), true, 10_000, 50),
      ).toBe(true);
    });

    it("applies concurrent updates of one channel one at a time (deductions from two replicas)", async () => {
      const replicas = [make(), make()];
      // The memory stand-in is one process: its replicas are the same store.
      const stores = replicas[0]?.kind === "memory" ? [replicas[0], replicas[0]] : replicas;
      const id = channelId();
      await stores[0]?.channels.put(id, { spent: 0n, highest: 25n });
      const deduct = (state: MppxState) =>
        state.channels.update(id, (current) => {
          const c = current as { spent: bigint; highest: bigint };
          if (c.highest - c.spent < 1n) return { op: "noop" as const, result: "refused" };
          return { op: "set" as const, value: { ...c, spent: c.spent + 1n }, result: String(c.spent + 1n) };
        });
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) => deduct(stores[i % 2] as MppxState)),
      );
      const taken = results.filter((r) => r !== "refused");
      expect(taken).toHaveLength(25);
      expect(new Set(taken).size).toBe(25);
      expect(results.filter((r) => r === "refused")).toHaveLength(5);
      expect(await stores[1]?.channels.get(id)).toEqual({ spent: 25n, highest: 25n });
      // delete and noop do what they say.
      expect(await stores[0]?.channels.update(id, () => ({ op: "delete" as const, result: "gone" }))).toBe(
        "gone",
      );
      expect(await stores[1]?.channels.get(id)).toBeNull();
    });

    it("keeps with each session channel the vouchers nearest what it spent (the highest within, the lowest above), for the settlement worker", async () => {
      const state = make();
      const voucher = (amount: bigint) => ({ cumulativeAmount: amount, signature: `0x${amount}` });
      const channel = async () => {
        const id = channelId();
        const kept = async () => {
          const c = (await state.channels.get(id)) as {
            settleableVoucher?: unknown;
            ceilingVoucher?: unknown;
          };
          return [c.settleableVoucher, c.ceilingVoucher];
        };
        const write = (fields: object) =>
          state.channels.update(id, (current) => ({
            op: "set" as const,
            value: { ...(current as object), ...fields },
            result: null,
          }));
        // As mppx serves a call: the voucher accepted (the highest raised), then the price charged.
        const accept = (highest: bigint) =>
          write({ highestVoucher: voucher(highest), highestVoucherAmount: highest });
        const charge = (spent: bigint) => write({ spent });
        await state.channels.put(id, {
          channelId: id,
          highestVoucher: null,
          highestVoucherAmount: 0n,
          spent: 0n,
        });
        return { kept, write, accept, charge };
      };
      const c = await channel();
      expect(await c.kept()).toEqual([undefined, undefined]);
      await c.accept(1_000n);
      await c.charge(1_000n);
      expect(await c.kept()).toEqual([voucher(1_000n), null]);
      // A voucher one price ahead (its payer skipped a price, or its call's charge never landed
      // and the payer moved past it): the highest stays a price above what is spent.
      await c.accept(3_000n);
      await c.charge(2_000n);
      expect(await c.kept()).toEqual([voucher(1_000n), voucher(3_000n)]);
      await c.accept(4_000n);
      await c.charge(3_000n);
      // The voucher of 3,000, kept above, is now exactly what was spent.
      expect(await c.kept()).toEqual([voucher(3_000n), voucher(4_000n)]);
      // Two prices ahead: the lowest voucher above what was spent is kept for a leaving payer.
      await c.accept(6_000n);
      await c.charge(4_000n);
      await c.accept(7_000n);
      await c.charge(5_000n);
      expect(await c.kept()).toEqual([voucher(4_000n), voucher(6_000n)]);
      // Any other write of the channel keeps them (the settle recording what moved on chain).
      await c.write({ settledOnChain: 4_000n });
      expect(await c.kept()).toEqual([voucher(4_000n), voucher(6_000n)]);

      // Two vouchers accepted before the first one's charge: the first is kept until it is spent.
      const d = await channel();
      await d.accept(1_000n);
      await d.charge(1_000n);
      await d.accept(2_000n);
      await d.accept(3_000n);
      await d.charge(2_000n);
      expect(await d.kept()).toEqual([voucher(2_000n), voucher(3_000n)]);
    });

    it("lists written channels for the settlement loop until forgotten; values expire, finished ones sooner", async () => {
      // Retentions far apart, and each expiry waited for (a poll with a generous deadline), not
      // slept for: on a loaded machine a 600 ms retention lapsed before a 300 ms sleep ended.
      const state = make({ activeMs: 120_000, finishedMs: 200 });
      const [open, closed] = [channelId(), channelId()];
      await state.channels.update(open, () => ({
        op: "set" as const,
        value: { finalized: false },
        result: null,
      }));
      await state.channels.update(closed, () => ({
        op: "set" as const,
        value: { finalized: true },
        result: null,
      }));
      expect(await state.channelIds()).toEqual(expect.arrayContaining([open, closed]));
      await state.forgetChannel(closed);
      expect(await state.channelIds()).not.toContain(closed);
      expect(await state.channelIds()).toContain(open);
      await expect.poll(() => state.channels.get(closed), { timeout: 20_000, interval: 50 }).toBeNull();
      expect(await state.channels.get(open)).toEqual({ finalized: false });
      // An open channel's value expires too, after its own (here short) retention.
      const brief = make({ activeMs: 200, finishedMs: 200 });
      const other = channelId();
      await brief.channels.update(other, () => ({
        op: "set" as const,
        value: { finalized: false },
        result: null,
      }));
      await expect.poll(() => brief.channels.get(other), { timeout: 20_000, interval: 50 }).toBeNull();
    });
  },
);

describe("mppx state in Redis", () => {
  it("writes under the service's prefix in mppx's encoding, every key with a TTL (a replay claim's is its challenge's expiry)", async () => {
    const state = redisMppxState(redis, `${prefix}mpp:`);
    const id = `0x${randomBytes(32).toString("hex")}`;
    await state.channels.put(id, { spent: 123n });
    expect(await redis.get(`${prefix}mpp:channel:${id}`)).toBe('{"spent":"123#__bigint"}');
    expect(await redis.pTTL(`${prefix}mpp:channel:${id}`)).toBeGreaterThan(29 * 24 * 3_600_000);
    const expires = Date.now() + 5 * 60_000;
    expect(await state.charges.tryClaim?.("mppx:charge:0xabc", expires)).toBe(true);
    expect(await redis.pExpireTime(`${prefix}mpp:replay:mppx:charge:0xabc`)).toBe(expires);
  });
});
