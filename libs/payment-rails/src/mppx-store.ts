// The state mppx keeps for MPP, shared by every replica and the session settlement loop: charge
// replay claims and session channels. mppx's own Store.redis is not atomic on node-redis (no
// `update`, no `tryClaim`: charges fail and channel writes fall back to an in-process lock), so
// this is a Store.from of our own: `update` is an optimistic compare-and-set in Lua (retried until
// it wins, so one channel's vouchers and deductions are linearizable across replicas), `tryClaim`
// is one SET NX PXAT (a replay claim lives exactly until its challenge expires), every other write
// carries a TTL, and every key sits under the service's prefix. Channel writes also add the
// channel id to an index set in the same script, which the settlement loop walks.
//
// A write whose answer is lost (Redis ran it, then the link dropped) is read back rather than
// guessed: each update marks its write id in the same script (a key of its own that lives 30 s), and
// each claim carries its own id, so the writer learns once Redis answers whether it landed; reading
// "not landed" also fences that write off, should it still arrive late. Guessing "not landed"
// would answer a call failed while its deduction stayed charged (a session voucher), or lose the
// claim of a transfer that was paid (a charge by hash). A session deduction whose read-back found
// Redis still away fails; its caller may have it settled once Redis answers: fenced off, or given
// back (Undoing, StoreScope).
//
// On a Redis Cluster a script's keys share one slot: a channel, its write marks and its share of the
// index (the index is split in INDEX_SHARDS sets, a channel's by a hash of its id) carry the hash
// tag `{mpp-channels:<shard>}`; a replay claim and its marks `{mpp:<key>}`. On a single Redis the
// names are untagged and the index one set, as before clusters were supported.
//
// The in-memory twin (the single-node stand-in when Redis is unreachable at start) keeps the same
// rules; test/payment-verifier/stores.contract.test.ts runs one suite against both.

import { AsyncLocalStorage } from "node:async_hooks";
import type { Redis } from "@tollgate/platform";
import { answerLost, isCluster, noSlotTag, readBack, slotTags } from "@tollgate/platform/redis";
import { Store } from "mppx/server";
import { LANDED, markedWrite, READ_BACK_MS, WRITE_MARK_MS, writeIds } from "./read-back.ts";

/** mppx's JSON: bigints travel as "<digits>#__bigint" (ox's Json), so both sides read each other. */
const BIGINT_SUFFIX = "#__bigint";
function encodeValue(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? `${v}${BIGINT_SUFFIX}` : v));
}
function decodeValue(raw: string): unknown {
  return JSON.parse(raw, (_k, v) =>
    typeof v === "string" && v.endsWith(BIGINT_SUFFIX) && /^-?[0-9]+#/.test(v)
      ? BigInt(v.slice(0, -BIGINT_SUFFIX.length))
      : v,
  );
}

/** How long a written value lives: channels are kept while in use, replay claims until they expire. */
export interface Retention {
  /** A channel (or any value) written now; refreshed by every write. */
  activeMs: number;
  /** A value the write marks finished (a finalized channel): kept this long for late replays. */
  finishedMs: number;
}

const DEFAULT_RETENTION: Retention = { activeMs: 30 * 24 * 3_600_000, finishedMs: 7 * 24 * 3_600_000 };

function isFinished(value: unknown): boolean {
  return typeof value === "object" && value !== null && (value as { finalized?: unknown }).finalized === true;
}

/** The two stores mppx is given, and what the settlement loop reads. */
export interface MppxState {
  readonly kind: "redis" | "memory";
  /** tempo.charge's store: replay claims (`mppx:charge:<hash>`) and proofs. */
  readonly charges: Store.AtomicStore;
  /** tempo.session's store: one record per channel, keyed by the channel id. */
  readonly channels: Store.AtomicStore;
  /** Every channel id written and not yet forgotten (the settlement loop's work list). */
  channelIds(): Promise<string[]>;
  /** Drops a channel from the work list (finalized, or gone). */
  forgetChannel(id: string): Promise<void>;
}

/** Retries of one update that lost its compare-and-set to a concurrent writer before giving up. */
const MAX_CAS_ATTEMPTS = 100;

// KEYS[1] the value, KEYS[2] the channel index (or ""), KEYS[3] this write's mark. ARGV: 1 "1" when
// the value must be absent, 2 the expected raw value, 3 "set"|"delete", 4 the new raw value, 5 its
// TTL in ms, 6 the index member to add ("" for none). A mark already there means its writer read
// back "not landed" and has moved on: this late delivery must not land.
const COMPARE_AND_SET = `
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '1' then
  if current then return 0 end
elseif current ~= ARGV[2] then
  return 0
end
if ARGV[3] == 'set' then
  redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5])
  if ARGV[6] ~= '' then redis.call('SADD', KEYS[2], ARGV[6]) end
else
  redis.call('DEL', KEYS[1])
end
redis.call('SET', KEYS[3], '1', 'PX', ${WRITE_MARK_MS})
return 1`;

type Change = Store.Change<unknown, unknown>;

/** A signed session voucher as mppx stores it (the settlement worker reads it too). */
export interface StoredVoucher {
  cumulativeAmount: bigint;
  signature: string;
}
interface SessionChannelLike {
  highestVoucher?: StoredVoucher | null;
  settleableVoucher?: StoredVoucher | null;
  ceilingVoucher?: StoredVoucher | null;
  spent?: bigint;
  units?: number;
  settledOnChain?: bigint;
  finalized?: boolean;
  closeRequestedAt?: bigint;
}

/**
 * A session channel with the two vouchers nearest what it spent that it has held, for the
 * settlement worker: `settleableVoucher`, the highest within what was spent (what a scheduled
 * settle uses), and `ceilingVoucher`, the lowest above it (what a payer leaving without a voucher of
 * exactly what it spent is settled by; strictly above, or a voucher of exactly what was spent could
 * be pushed out by a later one before it is spent). mppx keeps only the highest voucher, and it
 * accepts a voucher and charges its call in two store updates: when the charge fails (Redis gone
 * between them) the highest is a price above what was spent until the payer's next call re-sends it,
 * and settling it then would move a price that bought nothing; the voucher before it is what was
 * spent. A payer that signed one price ahead keeps the same gap; its previous voucher, kept as the
 * ceiling, is what it spent once the next call is charged. Any other value passes unchanged.
 */
function keepSettleable(previous: unknown, next: unknown): unknown {
  const channel = next as SessionChannelLike | null;
  if (!channel || typeof channel !== "object" || !("highestVoucher" in channel)) return next;
  const spent = channel.spent;
  if (typeof spent !== "bigint") return next;
  const before = previous as SessionChannelLike | null;
  let floor: StoredVoucher | null = null;
  let ceiling: StoredVoucher | null = null;
  for (const v of [
    channel.highestVoucher,
    channel.settleableVoucher,
    channel.ceilingVoucher,
    before?.highestVoucher,
    before?.settleableVoucher,
    before?.ceilingVoucher,
  ]) {
    if (!v || typeof v.cumulativeAmount !== "bigint") continue;
    if (v.cumulativeAmount <= spent && (!floor || v.cumulativeAmount > floor.cumulativeAmount)) floor = v;
    if (v.cumulativeAmount > spent && (!ceiling || v.cumulativeAmount < ceiling.cumulativeAmount))
      ceiling = v;
  }
  if (floor === (channel.settleableVoucher ?? null) && ceiling === (channel.ceilingVoucher ?? null))
    return next;
  return { ...channel, settleableVoucher: floor, ceilingVoucher: ceiling };
}

/** The change an update writes, its channel (if it is one) keeping its settleable voucher. */
function settleable(previous: unknown, change: Change): Change {
  if (change.op !== "set") return change;
  const value = keepSettleable(previous, change.value);
  return value === change.value ? change : { ...change, value };
}

/**
 * What undoes an update its writer was told had failed but which landed after all (its answer lost,
 * Redis away past the read-back): for an update from `before` to `written` that must not stay, the
 * change to make to the value found then (undefined: leave it); undefined for any other update.
 */
export type Undo = (before: unknown, written: unknown) => ((now: unknown) => unknown) | undefined;

/**
 * A session call's deduction (mppx's planDeduction: `spent` up by the price, `units` up by one)
 * given back: its Settle failed, so its call was answered failed and must not stay charged. Not
 * below what the channel settled on chain (that money moved), nor on a channel finalized or closing.
 * A scheduled settle already under way may still land a voucher above `spent`: the payer then paid
 * that price, as without the undo, and its next call's charge is already settled.
 */
export const undoDeduction: Undo = (before, written) => {
  const b = before as SessionChannelLike | null;
  const w = written as SessionChannelLike | null;
  if (typeof b?.spent !== "bigint" || typeof w?.spent !== "bigint" || typeof b.units !== "number")
    return undefined;
  if (w.units !== b.units + 1 || w.spent <= b.spent) return undefined;
  const price = w.spent - b.spent;
  return (now) => {
    const n = now as SessionChannelLike | null;
    if (typeof n?.spent !== "bigint" || n.finalized === true) return undefined;
    // A close under way captures what `spent` said when it began (mppx's planDeduction stops here too).
    if (typeof n.closeRequestedAt === "bigint" && n.closeRequestedAt !== 0n) return undefined;
    if (n.spent - price < (n.settledOnChain ?? 0n)) return undefined;
    // The vouchers the deduction pushed out (the one of exactly what was spent before it) come back.
    return keepSettleable(before, { ...n, spent: n.spent - price, units: Math.max(0, (n.units ?? 1) - 1) });
  };
};

/**
 * What the store tells a caller that runs mppx inside `storeScope.run(scope, …)` (mppx swallows the
 * store's errors: a failed deduction reaches its caller as "channel not found"): that the store
 * failed, and the undo of a write that failed with its outcome unknown. The caller runs the undo, or
 * not: only it knows whether the call could still be answered served elsewhere.
 */
export interface StoreScope {
  failed?: boolean;
  undo?: () => Promise<void>;
}
export const storeScope = new AsyncLocalStorage<StoreScope>();

/** What a store does with an update that failed and later turns out to have landed. */
export interface Undoing {
  undo: Undo;
  /** Told what became of each: undone, left (nothing it could undo), or unknown for good. */
  report(outcome: "undone" | "kept" | "unknown", key: string): void;
}

/** Errors the caller's own update function threw (mppx refusing a payment), not the store's. */
const callerErrors = new WeakSet<object>();

/** An update's function run; what it throws is the caller's verdict, passed on as such. */
function decided(fn: (current: unknown) => Change, current: unknown): Change {
  try {
    return fn(current);
  } catch (err) {
    if (typeof err === "object" && err !== null) callerErrors.add(err);
    throw err;
  }
}

/**
 * Runs a store operation; a failure of the store (Redis, a value it cannot decode, compare-and-set
 * lost too often) is told to the caller's scope (StoreScope.failed), then thrown. What the caller's
 * update function threw is its own refusal, not a store failure.
 */
async function noted<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    const scope = storeScope.getStore();
    if (scope && !(typeof err === "object" && err !== null && callerErrors.has(err))) scope.failed = true;
    throw err;
  }
}

/** How often a failed update's outcome is asked again while Redis is away. */
const UNDO_POLL_MS = 500;

/** The sets the channel index is split in on a Redis Cluster (a channel's: a hash of its id). */
const INDEX_SHARDS = 16;

function shardOf(key: string): number {
  let h = 0;
  for (let i = 0; i < key.length; i++) h = (h * 31 + key.charCodeAt(i)) | 0;
  return (h >>> 0) % INDEX_SHARDS;
}

/**
 * An mppx AtomicStore in Redis under `prefix`: Lua compare-and-set updates, `SET NX PXAT` claims,
 * TTLs; writes of a key also add it to the set `index` (its shard of it on a Redis Cluster), when given.
 */
export function redisAtomicStore(
  redis: Redis,
  prefix: string,
  index?: string,
  retention: Retention = DEFAULT_RETENTION,
  undoing?: Undoing,
): Store.AtomicStore {
  const ttl = (value: unknown) => String(isFinished(value) ? retention.finishedMs : retention.activeMs);
  const nextWrite = writeIds();
  const tags = slotTags(redis);
  // A key's hash tag (none on a single Redis): its index shard's when indexed, else its own.
  const tagOf =
    tags === noSlotTag
      ? () => ""
      : index
        ? (key: string) => tags("mpp-channels", String(shardOf(key)))
        : (key: string) => tags("mpp", key);
  const nameOf = (key: string) => `${prefix}${tagOf(key)}${key}`;
  const indexOf = (key: string) => `${index}${tagOf(key)}`;
  const markOf = (key: string, id: string) => `${prefix}~write:${tagOf(key)}${id}`;
  async function update<result>(key: string, fn: (current: unknown) => Change): Promise<result> {
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const raw = await redis.get(nameOf(key));
      const current = raw === null ? null : decodeValue(raw);
      const change = settleable(current, decided(fn, current));
      if (change.op === "noop") return change.result as result;
      const id = nextWrite();
      const sentAt = performance.now();
      let won: unknown;
      try {
        won = await redis.eval(COMPARE_AND_SET, {
          keys: [nameOf(key), index ? indexOf(key) : nameOf(key), markOf(key, id)],
          arguments: [
            raw === null ? "1" : "0",
            raw ?? "",
            change.op,
            change.op === "set" ? encodeValue(change.value) : "",
            change.op === "set" ? ttl(change.value) : "0",
            change.op === "set" && index ? key : "",
          ],
        });
      } catch (err) {
        if (!answerLost(err)) throw err;
        const outcome = await markedWrite(redis, markOf(key, id), sentAt);
        if (outcome === "landed") return change.result as result;
        if (outcome === "unknown") {
          // Told failed: should it have landed, its caller may have it undone once Redis answers
          // (at once "unknown" if its mark may have lapsed already).
          const undo = change.op === "set" ? undoing?.undo(current, change.value) : undefined;
          const scope = undo ? storeScope.getStore() : undefined;
          if (undo && scope) scope.undo = () => undoOnceKnown(key, id, sentAt, undo);
          else if (undo) undoing?.report("unknown", key); // no caller to decide: kept, and said
          throw err;
        }
        continue; // it did not land, and now never will: again, on what is there now
      }
      if (won === 1) return change.result as result;
    }
    throw new Error(`mppx store: no update of ${key} won after ${MAX_CAS_ATTEMPTS} attempts`);
  }

  /**
   * An update that failed with its outcome unknown: once Redis answers (while its mark still tells),
   * fenced off if it had not landed, else undone (`undoing`), since its writer answered failure.
   */
  async function undoOnceKnown(key: string, id: string, sentAt: number, undo: (now: unknown) => unknown) {
    if (!undoing) return;
    while (performance.now() - sentAt < WRITE_MARK_MS - UNDO_POLL_MS) {
      // Unref'd: a process shutting down does not wait for Redis on its account.
      await new Promise((r) => setTimeout(r, UNDO_POLL_MS).unref());
      let landed: unknown;
      try {
        landed = await redis.eval(LANDED, { keys: [markOf(key, id)], arguments: [] });
      } catch {
        continue;
      }
      if (landed !== 1) {
        // Fenced off (it never lands), unless the answer came after the mark lapsed.
        if (performance.now() - sentAt >= WRITE_MARK_MS) undoing.report("unknown", key);
        return;
      }
      try {
        const undone = await update<boolean>(key, (now) => {
          const value = undo(now);
          return value === undefined ? { op: "noop", result: false } : { op: "set", value, result: true };
        });
        undoing.report(undone ? "undone" : "kept", key);
      } catch {
        undoing.report("unknown", key);
      }
      return;
    }
    undoing.report("unknown", key);
  }

  return Store.from({
    get: (key: string) =>
      noted(async () => {
        const raw = await redis.get(nameOf(key));
        return raw === null ? null : decodeValue(raw);
      }),
    put: (key: string, written: unknown) =>
      noted(async () => {
        const value = keepSettleable(null, written);
        await redis.set(nameOf(key), encodeValue(value), { PX: Number(ttl(value)) });
        if (index) await redis.sAdd(indexOf(key), key);
      }),
    delete: (key: string) =>
      noted(async () => {
        await redis.del(nameOf(key));
      }),
    update: (key: string, fn: (current: unknown) => Change) => noted(() => update(key, fn)),
    async tryClaim(key: string, expires: number) {
      // A claim already past its expiry is still recorded for a moment, so the SET is valid.
      const at = Math.max(expires, Date.now() + 1_000);
      const claim = nextWrite();
      const claimIt = async () =>
        (await redis.set(nameOf(key), encodeValue({ expires, type: "mppx:replay", claim }), {
          NX: true,
          PXAT: at,
        })) === "OK";
      try {
        return await claimIt();
      } catch (err) {
        if (!answerLost(err)) throw err;
        const found = await readBack(() => redis.get(nameOf(key)), READ_BACK_MS);
        if (!found) throw err;
        if (found.value === null) return claimIt();
        return (decodeValue(found.value) as { claim?: unknown }).claim === claim;
      }
    },
  } as never) as Store.AtomicStore;
}

/** Redis-backed state under `prefix` (the service's key prefix + "mpp:"). */
export function redisMppxState(
  redis: Redis,
  prefix: string,
  retention = DEFAULT_RETENTION,
  undoing?: Undoing,
): MppxState {
  const index = `${prefix}channel-ids`;
  // On a cluster the index is INDEX_SHARDS sets, `<index>{mpp-channels:<n>}`; one set otherwise.
  const tags = slotTags(redis);
  const shards = isCluster(redis)
    ? Array.from({ length: INDEX_SHARDS }, (_, n) => `${index}${tags("mpp-channels", String(n))}`)
    : [index];
  return {
    kind: "redis",
    charges: redisAtomicStore(redis, `${prefix}replay:`, undefined, retention),
    channels: redisAtomicStore(redis, `${prefix}channel:`, index, retention, undoing),
    channelIds: async () => (await Promise.all(shards.map((s) => redis.sMembers(s)))).flat(),
    async forgetChannel(id) {
      await redis.sRem(`${index}${tags("mpp-channels", String(shardOf(id)))}`, id);
    },
  };
}

interface Entry {
  raw: string;
  expiresAt: number;
}

function memoryStore(
  entries: Map<string, Entry>,
  index: Set<string> | undefined,
  retention: Retention,
): Store.AtomicStore {
  const read = (key: string): string | null => {
    const entry = entries.get(key);
    if (!entry) return null;
    if (entry.expiresAt <= Date.now()) {
      entries.delete(key);
      return null;
    }
    return entry.raw;
  };
  const write = (key: string, value: unknown) => {
    const ms = isFinished(value) ? retention.finishedMs : retention.activeMs;
    entries.set(key, { raw: encodeValue(value), expiresAt: Date.now() + ms });
    index?.add(key);
  };
  return Store.from({
    async get(key: string) {
      const raw = read(key);
      return raw === null ? null : decodeValue(raw);
    },
    async put(key: string, value: unknown) {
      write(key, keepSettleable(null, value));
    },
    async delete(key: string) {
      entries.delete(key);
    },
    // One JS turn: nothing interleaves between the read and the write.
    async update<result>(key: string, fn: (current: unknown) => Change) {
      const raw = read(key);
      const current = raw === null ? null : decodeValue(raw);
      const change = settleable(current, fn(current));
      if (change.op === "set") write(key, change.value);
      if (change.op === "delete") entries.delete(key);
      return change.result as result;
    },
    tryClaim(key: string, expires: number) {
      if (read(key) !== null) return false;
      entries.set(key, {
        raw: encodeValue({ expires, type: "mppx:replay" }),
        expiresAt: Math.max(expires, Date.now() + 1_000),
      });
      return true;
    },
  } as never) as Store.AtomicStore;
}

/** The single-node stand-in: the same rules in this process's memory. */
export function memoryMppxState(retention = DEFAULT_RETENTION): MppxState {
  const index = new Set<string>();
  return {
    kind: "memory",
    charges: memoryStore(new Map(), undefined, retention),
    channels: memoryStore(new Map(), index, retention),
    channelIds: async () => [...index],
    async forgetChannel(id) {
      index.delete(id);
    },
  };
}
