// At-most-once use of a payment across all replicas. A verified payment is reserved under its key
// (what makes it unique where it is collected) by one mesh-generated token, the `payment_id` the
// gateway hands back to Settle or Release; nothing a caller sends can name or take over a
// reservation. reserved → settling → settled (kept while the payment could still be collected);
// Release, or a settlement that moved nothing, deletes it so the client may pay again.
//
// A reserve also counts the attempt against the attempt limits (stores/attempt-limits.ts), in the
// same round trip. This module is the contract: the Redis store (reservations-redis.ts, Lua in
// reservations-lua.ts, atomic per key) and the in-memory stand-in (reservations-memory.ts)
// implement the same state machine; test/payment-verifier/stores.contract.test.ts runs one suite
// against both.
//
// On a Redis Cluster every key a reserve touches shares its payer's slot (the hash tag
// `{payer:<address>}`): the reservation (its key carries the tag: keyOf), the payer's attempt
// bucket, its penalty and its draws in flight. The client's attempt bucket is another entity's:
// there it is counted beside the reserve, sent at the same time (no round trip more).
import type { AttemptCheck } from "./attempt-limits.ts";

/** The payer named by a penalty (payerPenalty: `<scheme>:<payer>`). */
export function penaltyPayer(penalty: string): string {
  return penalty.slice(penalty.lastIndexOf(":") + 1).toLowerCase();
}

export type ReservationState = "reserved" | "settling" | "settled";

/** What the core records about a verified payment. */
export interface PaymentFacts {
  scheme: string;
  /** The gateway's id of the request the payment was verified for. */
  requestId: string;
  /** Catalog path template. */
  endpoint: string;
  /** The API network the call was for. */
  network: string;
  payer: string;
  /** Atomic units of `asset`. */
  amount: string;
  asset: string;
  paymentNetwork: string;
  /** Fingerprint of the credentials Verify accepted (so Settle can tell it was given the same). */
  credential: string;
  /** A top-up only: the account the buyer named (PricedCall.account), for its settlement event. */
  account?: string;
}

export interface Reservation extends PaymentFacts {
  state: ReservationState;
  /** The mesh-generated payment id that holds the reservation. */
  token: string;
  /** Set when the money already moved before the call (nothing to collect at Settle). */
  collected: string;
  /** What the scheme holds between Verify and Settle (opaque to the core). */
  hold: string;
  transaction: string;
  /** The receipt headers of a settled payment (JSON), so a repeated Settle answers the same. */
  receipt: string;
  /** The replica whose Settle runs the settlement (set when it begins, moved by a takeover). */
  owner: string;
  /**
   * The begin that made it `settling` (the owner's id for it; each begin writes its own, a takeover
   * its own marked `+takeover`: what it took over may have moved money, so it is never abandoned).
   */
  attempt: string;
}

/**
 * A payment whose settlement sends a transaction that spends the payer's own balance (an EIP-3009
 * transfer, an x402-batch deposit). The store keeps, per payer `account` (chain, token and payer),
 * every such payment reserved and not yet settled, dropped or released: what the payer's balance
 * must cover before anything is sent (the core compares it with the balance Verify read).
 */
export interface Draw {
  /** Whose balance: chain, token and payer (compared in lower case). */
  account: string;
  /** Atomic units of the token. */
  amount: string;
  /** The longest it counts (a reservation's TTL and a settlement's): a crashed holder's lapses. */
  ttlMs: number;
}

/** The attempt a reserve counts: one against each check's limit, at `nowMs`. */
export interface Attempt {
  checks: readonly AttemptCheck[];
  nowMs: number;
  /** Who is refused outright while penalized (see `penalize`), checked first; none when empty. */
  penalty?: string;
}

export type ReserveResult =
  | {
      ok: true;
      token: string;
      retried: boolean;
      /** With a draw: the sum of the account's draws in flight, this one included (atomic units). */
      drawn?: bigint;
    }
  /**
   * Held or used (`current`), refused by the attempt limit of scope `limited`, or refused because
   * the attempt's `penalty` holds for `penalizedMs` more (nothing counted or reserved).
   */
  | { ok: false; current: Reservation | undefined; limited?: string; penalizedMs?: number };

/**
 * `ok`: this replica runs the settlement (`takenOver`: from an owner that died mid-settlement).
 * Otherwise what is there: `busy` when the same call is settling under a live owner (this replica
 * included), who will answer it; the caller waits for the outcome.
 */
export type BeginSettle =
  | { ok: true; reservation: Reservation; takenOver: boolean }
  | { ok: false; current: Reservation | undefined; busy: boolean };

export interface ReservationStore {
  readonly kind: "redis" | "memory";
  /**
   * A payment's key in this store: its key where it is collected (`raw`), on a Redis Cluster under
   * its payer's hash tag (one slot with what its reserve counts for that payer); `raw` elsewhere.
   */
  keyOf(payer: string, raw: string): string;
  get(key: string): Promise<Reservation | undefined>;
  /**
   * Counts the attempt (a full limit refuses it, and nothing else happens), then takes the payment
   * for one request. A Verify retried for the same request (same mesh request id, same endpoint,
   * network, amount and payer) gets the token it already holds; anything else that finds the key
   * held or used is refused. With `draw`, the payment joins its account's draws in flight (until
   * it is settled, dropped, released, recorded as collected already, or its draw's TTL lapses) in
   * the same step, and the answer carries their sum.
   */
  reserve(
    key: string,
    token: string,
    facts: PaymentFacts,
    ttlMs: number,
    attempt?: Attempt,
    draw?: Draw,
  ): Promise<ReserveResult>;
  /**
   * Counts an attempt that reserves nothing (a credential refused before its reservation: it does
   * not decode, or its signature is not its payer's) against the limits; the scope of the first
   * limit that is full, if any, counting nothing then.
   */
  countAttempt(attempt: Attempt): Promise<string | undefined>;
  /**
   * Records the verdict on a reservation held by `token`: the money that already moved (nothing
   * to collect, so it no longer counts as a draw), and what the scheme holds until Settle or Release.
   */
  markVerified(key: string, token: string, verified: { collected: string; hold: string }): Promise<void>;
  /**
   * reserved (by `token`, for `requestId`) → settling, owned by `owner`. One Settle of a call at a
   * time: the same call already settling is `busy` while its owner is alive (its liveness key,
   * `heartbeat`), and taken over by `owner` (compare-and-set) once it is not. `idleHere`: the
   * caller is that owner and runs no Settle of this call (its settlement ended, its `settled`
   * record lost with the store, or its begin's answer was lost): taken over at once. `attempt`: the
   * caller's id for this begin, written with it (see `abandon`).
   */
  beginSettle(
    key: string,
    token: string,
    requestId: string,
    ttlMs: number,
    owner: string,
    idleHere?: boolean,
    attempt?: string,
  ): Promise<BeginSettle>;
  /** Marks replica `owner` alive for `ttlMs` (one renewal per process, not per call). */
  heartbeat(owner: string, ttlMs: number): Promise<void>;
  /** settling (by `token`) → settled, remembered for `retentionMs`. */
  markSettled(
    key: string,
    token: string,
    transaction: string,
    receipt: string,
    retentionMs: number,
  ): Promise<void>;
  /**
   * Forgets a payment whose settlement moved nothing (held by `token`); with `settling`, only while
   * that owner's begin (its attempt id) still holds it, never a settlement a takeover runs since.
   * True when this drop deleted it (so no takeover can run it any more). `keepDraw`: its transfer
   * was broadcast and may still land, so its draw keeps counting until its TTL (a retry of the same
   * payment takes its place).
   */
  drop(
    key: string,
    token: string,
    settling?: { owner: string; attempt: string },
    keepDraw?: boolean,
  ): Promise<boolean>;
  /**
   * Frees a reservation still `reserved` by `token` for `requestId`; returns what it freed. With
   * `release` (a mesh-made id per release, and how long to remember it), the same release run again
   * (its answer lost, or deferred) answers what it freed for `keepMs`; any other release of it gets
   * nothing.
   */
  release(
    key: string,
    token: string,
    requestId: string,
    release?: ReleaseMark,
  ): Promise<Reservation | undefined>;
  /**
   * Forgets a payment still `settling` (by `token`) under `owner`'s begin `attempt`, which ran nothing
   * (its answer was lost); returns what it freed. A later begin or a takeover wrote its own attempt
   * (a takeover's marked, so never this one).
   */
  abandon(key: string, token: string, owner: string, attempt: string): Promise<Reservation | undefined>;
  /**
   * Refuses every reserve whose attempt names `penalty` for the next `ms` (replicas share it). A
   * penalty names its payer last (`<scheme>:<payer>`, payerPenalty): the payer of the payments it
   * refuses (its slot on a Redis Cluster).
   */
  penalize(penalty: string, ms: number): Promise<void>;
  close(): Promise<void>;
}

/** A release's own id and how long the store answers it again (see ReservationStore.release). */
export interface ReleaseMark {
  id: string;
  keepMs: number;
}

/** What a takeover's begin adds to its attempt id (BEGIN_SETTLE, beginSettle): never abandoned. */
export const TAKEOVER_MARK = "+takeover";
export const isTakeover = (attempt: string) => attempt.endsWith(TAKEOVER_MARK);
