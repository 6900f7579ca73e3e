// Quota leases: a hot key does not cost a gRPC round trip and a Redis script on every call.
// quota-meter counts a block of calls in both windows at once (a lease, atomically, within the
// burst guard); this gateway serves the key's next calls from it with no hop, numbering each
// call's X-Quota-*-Used in the order the units were counted, and gives back what it did not use
// when the lease ends (at most `ttl` later, or at shutdown). One Authorize per key is in flight
// at a time: concurrent calls of a key wait for it and share its answer, so a burst of calls
// never asks for a burst of leases. Lease sizes follow each key's pace: 1 unit for a key seen
// once, doubling while calls use a lease up before it ends. A key whose plan is spent (or that
// pays from credits only) gets a credit lease instead: a block of its account's credits, each call
// taking its own price from it and what is left going back the same way (the balance it answers
// with counts what the lease still holds). A JSON-RPC batch of N calls is served whole from one
// lease or not at all: N units of a unit lease, or its whole price from a credit lease (never a
// price of 0), otherwise quota-meter is asked for at least N units, which it grants all or none.
// The book is bounded (`maxKeys`): any caller can send any bearer string, so a key quota-meter
// does not know is forgotten as soon as it is refused, and a full book makes room by forgetting an
// idle key first, then ending the oldest lease (its units go back like any ended lease's).
import type { Authorization } from "./clients/quota-meter.ts";

/** The answer a call gets: quota-meter's, or a unit of a lease with its own quota values. */
export type Grant = Pick<
  Authorization,
  "decision" | "accountId" | "keyId" | "quota" | "metered" | "dayWindow" | "monthWindow" | "credits"
> & {
  /** Set when the call was served from a lease: which one, and its (last) unit's number in it. */
  leaseId?: string;
  unit?: number;
  /** Units of a unit lease the call took (a JSON-RPC batch: one per call); unset: 1. */
  units?: number;
};

export interface LeaseReturn {
  leaseId: string;
  accountId: string;
  units: number;
  dayWindow: string;
  monthWindow: string;
  /** A credit lease's credits not used (atomic units). */
  creditsLeft?: number;
}

/** What a credit lease holds: credits drawn and not spent yet, from the copy `epoch`. */
interface CreditBlock {
  left: number;
  epoch: string;
  /** The account's balance once the lease was drawn (without what it holds). */
  balance: number;
}

interface Lease {
  id: string;
  grant: Grant;
  /** Units counted and not served yet (a credit lease: calls it was drawn for, a count only). */
  left: number;
  /** Set for a credit lease. */
  credit: CreditBlock | undefined;
  /** How many units of this lease were handed out, the first included. */
  used: number;
  /** Numbers of units given back by calls that got no answer: handed out again first. */
  returned: number[];
  expiresAt: number;
}

interface KeyState {
  lease: Lease | undefined;
  /** The Authorize in flight for this key, if any, and the calls of the request it was asked for. */
  asking: Promise<Authorization> | undefined;
  askingCalls: number;
  /** How many units to ask for next. */
  want: number;
  /** When the key was last seen (idle keys are forgotten). */
  seen: number;
  /** The credit lease just ended for a call it could not cover: closed by that call's Authorize. */
  closing: CreditLeaseClose | undefined;
}

/** A credit lease the next Authorize returns first, so the balance it answers is exact. */
export interface CreditLeaseClose {
  leaseId: string;
  creditsLeft: number;
}

/** A call's share of a credit lease: its price, and the balance once it is paid. */
function creditCall(first: Grant, id: string, credit: CreditBlock, price: number): Grant {
  return {
    ...first,
    leaseId: id,
    credits: { drawn: price, remaining: credit.balance + credit.left, epoch: credit.epoch },
  };
}

/** Unit `k` (1-based) of lease `id` whose first unit's values are `first`; a batch's last of `units`. */
function numbered(first: Grant, id: string, k: number, units = 1): Grant {
  const q = first.quota;
  return {
    ...first,
    leaseId: id,
    unit: k,
    ...(units > 1 ? { units } : {}),
    quota: q && {
      ...q,
      ...(q.dayUsed != null ? { dayUsed: q.dayUsed + k - 1 } : {}),
      ...(q.monthUsed != null ? { monthUsed: q.monthUsed + k - 1 } : {}),
    },
  };
}

/** How many of the oldest keys a full book looks at for one to forget (bounds the work of a flood). */
const EVICTION_SCAN = 32;

export function createLeaseBook(opts: { maxUnits: number; maxKeys?: number; now?: () => number }) {
  const now = opts.now ?? Date.now;
  const maxKeys = Math.max(1, opts.maxKeys ?? 20_000);
  const keys = new Map<string, KeyState>();
  const ended: LeaseReturn[] = [];

  function end(lease: Lease): void {
    if (lease.credit ? lease.credit.left > 0 : lease.left > 0) {
      ended.push({
        leaseId: lease.id,
        accountId: lease.grant.accountId,
        units: lease.credit ? 0 : lease.left,
        dayWindow: lease.grant.dayWindow,
        monthWindow: lease.grant.monthWindow,
        ...(lease.credit ? { creditsLeft: lease.credit.left } : {}),
      });
    }
  }

  /**
   * Makes room for one more key in a full book: forgets the oldest idle key (no live lease with
   * units left, no Authorize in flight) among the first EVICTION_SCAN, else ends the oldest live
   * lease there. Either way what the lease did not use goes back with the next sweep. A key with an
   * Authorize in flight is kept (its answer lands in its state): false when every key looked at is.
   */
  function evict(): boolean {
    const t = now();
    let leased: string | undefined;
    let looked = 0;
    for (const [apiKey, state] of keys) {
      if (!state.asking) {
        const lease = state.lease;
        if (!lease || spent(lease, 1, 1) || lease.expiresAt <= t) {
          if (lease) end(lease);
          keys.delete(apiKey);
          return true;
        }
        leased ??= apiKey;
      }
      if (++looked >= EVICTION_SCAN) break;
    }
    if (leased === undefined) return false;
    const lease = keys.get(leased)?.lease;
    if (lease) end(lease);
    keys.delete(leased);
    return true;
  }

  /** The key's state, made (room permitting) when the book does not hold it yet. */
  function stateOf(apiKey: string): KeyState | undefined {
    const known = keys.get(apiKey);
    if (known) return known;
    if (keys.size >= maxKeys && !evict()) return undefined;
    const state: KeyState = {
      lease: undefined,
      asking: undefined,
      askingCalls: 1,
      want: 1,
      seen: 0,
      closing: undefined,
    };
    keys.set(apiKey, state);
    return state;
  }

  /**
   * Whether the lease cannot serve a request of `calls` calls at `price` whole: a unit lease has
   * fewer units left; a credit lease holds less than the price, or the price is 0 (a credit lease
   * never serves a call for nothing).
   */
  function spent(lease: Lease, price: number, calls: number): boolean {
    return lease.credit ? price <= 0 || lease.credit.left < price : lease.left < calls;
  }

  /** A unit (a batch's units, or a call's price) of the key's live lease, if it covers the request. */
  function take(state: KeyState, t: number, price: number, calls: number): Grant | undefined {
    const lease = state.lease;
    if (!lease) return undefined;
    if (spent(lease, price, calls) || lease.expiresAt <= t) {
      // Used up early: the key's pace outgrew the lease; ended with units left: it did not.
      state.want = spent(lease, price, calls)
        ? Math.min(opts.maxUnits, Math.max(2, lease.used * 2))
        : Math.max(1, lease.used);
      end(lease);
      if (lease.credit && lease.credit.left > 0)
        state.closing = { leaseId: lease.id, creditsLeft: lease.credit.left };
      state.lease = undefined;
      return undefined;
    }
    lease.used++;
    if (lease.credit) {
      lease.credit.left -= price;
      return creditCall(lease.grant, lease.id, lease.credit, price);
    }
    if (calls > 1) return batchOf(lease, calls);
    lease.left--;
    const again = lease.returned.pop();
    if (again !== undefined) {
      lease.used--;
      return numbered(lease.grant, lease.id, again);
    }
    return numbered(lease.grant, lease.id, lease.used);
  }

  /**
   * A batch's `calls` units of a unit lease (it holds them): units given back by calls that got
   * no answer first, then fresh ones; numbered by the highest it took.
   */
  function batchOf(lease: Lease, calls: number): Grant {
    lease.left -= calls;
    let k = 0;
    for (let i = 0; i < calls; i++) {
      const n = lease.returned.pop() ?? ++lease.used;
      if (n > k) k = n;
    }
    return numbered(lease.grant, lease.id, k, calls);
  }

  /** An answer served alone (not from the book): a credit lease of one call names its id. */
  function alone(answer: Authorization): Grant {
    return answer.credits && answer.lease ? { ...answer, leaseId: answer.lease.id } : answer;
  }

  return {
    /**
     * The grant for one request of `apiKey`: a unit of its lease when it has one (a batch: all its
     * units, or its whole price), otherwise the answer of one Authorize shared with every call of
     * the key waiting on it.
     */
    async grant(
      apiKey: string,
      /**
       * `want`: lease units to ask for (at least `calls`); `close`: the key's credit lease this
       * gateway just ended, returned in the same Authorize.
       */
      authorize: (want: number, close?: CreditLeaseClose) => Promise<Authorization>,
      /** The request's price in USDC atomic units (what it takes from a credit lease). */
      price = 0,
      /** Calls the request holds (a JSON-RPC batch: one per call): units taken all at once or none. */
      calls = 1,
    ): Promise<Grant> {
      for (;;) {
        // Looked up on every turn: a waiter's key may have been forgotten while it waited.
        const state = stateOf(apiKey);
        // A full book whose oldest keys all wait on quota-meter: this call asks alone, unshared.
        if (!state) return alone(await authorize(calls));
        const t = now();
        state.seen = t;
        const unit = take(state, t, price, calls);
        if (unit) return unit;
        if (state.asking) {
          const asked = state.askingCalls;
          const answer = await state.asking;
          // A refusal, or an answer served unmetered (quota-meter failing open), holds for
          // every call that waited on it, save one it does not speak for: a credit refusal (no
          // credits for that call's price), or a refusal of a larger batch than this request
          // (the units it could not have all at once may cover this one). Those ask on their own.
          if (answer.decision === "DECISION_NO_CREDITS" || asked > calls) continue;
          if (answer.decision !== "DECISION_ALLOW" || !answer.metered || !answer.lease) return answer;
          continue;
        }
        const asking = authorize(Math.max(state.want, calls), state.closing);
        state.closing = undefined;
        state.asking = asking;
        state.askingCalls = calls;
        let answer: Authorization;
        try {
          answer = await asking;
        } finally {
          state.asking = undefined;
        }
        const lease = answer.lease;
        if (answer.decision === "DECISION_ALLOW" && answer.metered && lease && lease.units > 0) {
          const drawn = answer.credits;
          // A credit lease: this call takes its price; the rest of the block waits for the key's next calls.
          const credit = drawn
            ? { left: drawn.drawn - price, epoch: drawn.epoch, balance: drawn.remaining }
            : undefined;
          // This request takes the first unit (a batch: its first `calls`, quota-meter granted at
          // least that many); the rest wait for the key's next calls.
          const taken = credit ? 1 : calls;
          state.lease = {
            id: lease.id,
            grant: answer,
            // An older quota-meter may grant a batch fewer units than its calls (never below none).
            left: Math.max(0, lease.units - taken),
            credit,
            used: taken,
            returned: [],
            expiresAt: now() + lease.ttlMs,
          };
          return credit
            ? creditCall(answer, lease.id, credit, price)
            : numbered(answer, lease.id, taken, taken);
        }
        // An unknown or revoked key holds no entry: a stream of made-up keys leaves nothing behind.
        if (answer.decision === "DECISION_INVALID_KEY" && keys.get(apiKey) === state) keys.delete(apiKey);
        return answer;
      }
    },

    /** Whether the book holds the key: quota-meter answered for it lately, or is answering now. */
    holds(apiKey: string): boolean {
      return keys.has(apiKey);
    },

    /**
     * A call served from a lease got no answer, so it is not charged: its unit goes back to the
     * lease it came from, to be served again, when that lease is still live. False otherwise (the
     * caller then refunds the unit to quota-meter's windows).
     */
    giveBack(apiKey: string, grant: Grant): boolean {
      const lease = keys.get(apiKey)?.lease;
      if (!lease || lease.id !== grant.leaseId || lease.expiresAt <= now()) return false;
      if (lease.credit && grant.credits) {
        lease.credit.left += grant.credits.drawn;
        lease.used--;
        return true;
      }
      if (grant.unit === undefined) return false;
      // A batch's units all go back (numbered as a run ending at its last: the numbers it took
      // when it reused given-back ones may differ, only the X-Quota-*-Used shown would).
      const units = grant.units ?? 1;
      lease.left += units;
      for (let k = grant.unit - units + 1; k <= grant.unit; k++) lease.returned.push(k);
      return true;
    },

    /** Ends leases past their time and forgets idle keys; returns every unused unit to give back. */
    sweep(): LeaseReturn[] {
      const t = now();
      for (const [apiKey, state] of keys) {
        if (state.lease && state.lease.expiresAt <= t) {
          end(state.lease);
          state.want = Math.max(1, state.lease.used);
          state.lease = undefined;
        }
        if (!state.lease && !state.asking && t - state.seen > 60_000) keys.delete(apiKey);
      }
      return ended.splice(0);
    },

    /** Ends every lease now (shutdown): everything unused goes back. */
    drain(): LeaseReturn[] {
      for (const state of keys.values()) {
        if (state.lease) end(state.lease);
        state.lease = undefined;
      }
      return ended.splice(0);
    },

    /** Keys the book holds, leased or not (bounded by `maxKeys`). */
    get keys(): number {
      return keys.size;
    },

    /** Keys with a live lease (a metric). */
    get size(): number {
      let n = 0;
      for (const state of keys.values()) if (state.lease) n++;
      return n;
    },
  };
}

export type LeaseBook = ReturnType<typeof createLeaseBook>;

/**
 * Unknown-key attempts per client address, a token bucket each: a key the lease book does not hold
 * takes a token before quota-meter is asked, and gives it back unless quota-meter calls it unknown
 * or revoked. A client whose bucket is empty is answered 429 without asking (`take` is false), so
 * made-up keys cost quota-meter at most `burst` and then `perSecond` Authorize calls per client,
 * concurrent ones included; a genuine key costs nothing (its token comes back) and a key the book
 * holds is never counted. Per gateway replica; a client whose bucket is full again holds no entry,
 * and at most `maxClients` are remembered (the oldest forgotten first).
 */
export function createUnknownKeyLimiter(opts: {
  perSecond: number;
  burst: number;
  maxClients?: number;
  now?: () => number;
}) {
  const now = opts.now ?? Date.now;
  const maxClients = opts.maxClients ?? 10_000;
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    /** Takes one of the client's tokens; false when it has none left (answer 429). */
    take(client: string): boolean {
      const t = now();
      let bucket = buckets.get(client);
      if (bucket) {
        bucket.tokens = Math.min(opts.burst, bucket.tokens + ((t - bucket.at) * opts.perSecond) / 1_000);
        bucket.at = t;
      } else {
        if (buckets.size >= maxClients) buckets.delete(buckets.keys().next().value as string);
        bucket = { tokens: opts.burst, at: t };
        buckets.set(client, bucket);
      }
      if (bucket.tokens < 1) return false;
      bucket.tokens -= 1;
      return true;
    },

    /** The key was not unknown after all (or got no answer): the client's token comes back. */
    giveBack(client: string): void {
      const bucket = buckets.get(client);
      if (!bucket) return;
      bucket.tokens += 1;
      if (bucket.tokens >= opts.burst) buckets.delete(client);
    },

    /** Clients remembered (bounded by `maxClients`). */
    get clients(): number {
      return buckets.size;
    },
  };
}

export type UnknownKeyLimiter = ReturnType<typeof createUnknownKeyLimiter>;
