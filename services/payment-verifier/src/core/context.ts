// What the parts of the payment core share (verify, settle, takeover, release, the self-guarded
// path, refusals): the options Payments was made with, this replica's identity, the protocols and
// their schemes, the retry queue and the settlements running here, gathered in one plain object so
// each part is a set of functions over it. Also the shapes of the core's answers and the small
// helpers every part uses (a credential's scheme, payment ids, the store's unavailability).
import { createHash, randomUUID } from "node:crypto";
import type { Logger } from "@tollgate/platform";
import type { AnswerStore, KeptAnswer } from "../stores/answers.ts";
import type { Limit, RefusalMemory } from "../stores/attempt-limits.ts";
import type { ReservationStore } from "../stores/reservations.ts";
import type { SettlementRecorder } from "./events.ts";
import type { PaymentMetrics } from "./metrics.ts";
import { RetryQueue } from "./retry-queue.ts";
import type {
  Collection,
  Header,
  ParsedPayment,
  PaymentErrorCode,
  PaymentMeta,
  PaymentProtocol,
  PaymentScheme,
  Problem,
} from "./types.ts";

/** A settling payment is held this long if the process dies mid-settlement. */
export const SETTLING_TTL_MS = 5 * 60_000;
/** Marks the token of a payment its scheme guards itself (SelfGuarded): no reservation holds it. */
export const GUARDED = "g-";

export interface PaymentsOptions {
  /** In the order offers are listed; the first scheme of a protocol that claims a credential takes it. */
  schemes: readonly PaymentScheme[];
  /** Also counts payment attempts against `limits` (in the reserve's round trip). */
  reservations: ReservationStore;
  refusals: RefusalMemory;
  limits: { perClient: Limit; perPayer: Limit };
  events: SettlementRecorder;
  metrics: PaymentMetrics;
  logger: Logger;
  reservationTtlMs: number;
  /**
   * The first answers of payments that carry a payment identifier (core/answers.ts): where they
   * are kept, the largest body kept, and for how long. Without it identifiers are not honoured.
   */
  answers?: { store: AnswerStore; maxBytes: number; ttlMs: number };
  /** This process's replica id, the owner of the settlements it runs (a random one if not given). */
  replica?: string;
  now?: () => number;
}

export type VerifyOutcome =
  | {
      valid: true;
      paymentId: string;
      payer: string;
      scheme: string;
      /** A channel management action: Settle it at once, call no node. */
      noService: boolean;
      /**
       * The payment carries a payment identifier: once settled, its answer is handed to
       * KeepAnswer, the body when it is at most this many bytes (core/answers.ts).
       */
      answerMaxBytes?: number;
    }
  | {
      valid: false;
      code: PaymentErrorCode;
      reason: string;
      headers: Header[];
      scheme: string;
      problem?: Problem;
      /**
       * The first answer to this payer's payment identifier, for this same payment and request:
       * the gateway gives it again, calls no node, charges nothing (`code` is payment_invalid for
       * gateways that predate it).
       */
      answer?: KeptAnswer;
    };

export type SettleOutcome =
  | { settled: true; headers: Header[]; meta: PaymentMeta; collection: Collection }
  | {
      settled: false;
      code: PaymentErrorCode;
      reason: string;
      headers: Header[];
      transaction: string;
      problem?: Problem;
    };

/** A credential as the core sees it: none, one no scheme can take, or a scheme's payment. */
export type Detected =
  | { kind: "absent" }
  | { kind: "invalid"; scheme: string; reason: string; protocol: PaymentProtocol }
  | {
      kind: "payment";
      scheme: PaymentScheme;
      payment: ParsedPayment;
      /** The client's payment identifier (protocol.identify), when it sent one. */
      identified?: { id: string; payment: string };
    };

/** A payment_id taken apart: the payment's key and the token that holds its reservation. */
export interface PaymentRef {
  key: string;
  token: string;
}

/** The state one Payments instance's parts share. */
export interface Core {
  readonly opts: PaymentsOptions;
  readonly now: () => number;
  /** This process's replica id, the owner of the settlements it runs. */
  readonly replica: string;
  readonly protocols: readonly { protocol: PaymentProtocol; schemes: PaymentScheme[] }[];
  readonly queue: RetryQueue;
  /**
   * The settlements this replica runs, by call: a second Settle of one of them joins it. A settled
   * one stays until its `settled` record has landed in the store (answered before, not awaited).
   */
  readonly inFlight: Map<string, Promise<SettleOutcome>>;
  /** Calls whose Settle here is between its first begin and its answer being in inFlight. */
  readonly beginning: Set<string>;
  /** A new attempt id for a begin or a release sent by this process. */
  attemptId(): string;
}

export function createCore(opts: PaymentsOptions): Core {
  const now = opts.now ?? Date.now;
  const replica = opts.replica ?? randomUUID();
  const byProtocol = new Map<PaymentProtocol, PaymentScheme[]>();
  for (const scheme of opts.schemes) {
    const list = byProtocol.get(scheme.protocol) ?? [];
    list.push(scheme);
    byProtocol.set(scheme.protocol, list);
  }
  let attempts = 0;
  return {
    opts,
    now,
    replica,
    protocols: [...byProtocol].map(([protocol, schemes]) => ({ protocol, schemes })),
    queue: new RetryQueue(now),
    inFlight: new Map(),
    beginning: new Set(),
    attemptId: () => `${replica}:${++attempts}`,
  };
}

/** The scheme a credential belongs to: the first of its protocol's schemes that claims it. */
export function detect(core: Core, credentials: readonly Header[]): Detected {
  for (const { protocol, schemes } of core.protocols) {
    const decoded = protocol.decode(credentials);
    if (decoded.kind === "absent") continue;
    if (decoded.kind === "invalid")
      return { kind: "invalid", scheme: protocol.name, reason: decoded.reason, protocol };
    for (const scheme of schemes) {
      const claim = scheme.claim(decoded.credential);
      if (claim.kind === "invalid")
        return { kind: "invalid", scheme: scheme.name, reason: claim.reason, protocol };
      if (claim.kind === "payment") {
        // The key under its payer's hash tag (a claim's payment is its own, made for this call):
        // what the reserve counts for the payer shares its slot on a Redis Cluster.
        claim.payment.key = core.opts.reservations.keyOf(claim.payment.payer, claim.payment.key);
        const identity = protocol.identify?.(decoded.credential);
        if (identity?.kind === "invalid")
          return { kind: "invalid", scheme: scheme.name, reason: identity.reason, protocol };
        return identity?.kind === "identified"
          ? {
              kind: "payment",
              scheme,
              payment: claim.payment,
              identified: { id: identity.id, payment: identity.payment },
            }
          : { kind: "payment", scheme, payment: claim.payment };
      }
    }
    const offered = schemes.map((s) => s.name).join(", ");
    return {
      kind: "invalid",
      scheme: protocol.name,
      reason: `this ${protocol.name} payment is for a scheme not offered here; offered: ${offered}`,
      protocol,
    };
  }
  return { kind: "absent" };
}

/** `payment_id` = the payment's key and the token that holds its reservation (opaque to callers). */
export function paymentIdOf(key: string, token: string): string {
  return `${key}#${token}`;
}

export function splitPaymentId(paymentId: string): PaymentRef | undefined {
  const at = paymentId.lastIndexOf("#");
  if (at <= 0 || at === paymentId.length - 1) return undefined;
  return { key: paymentId.slice(0, at), token: paymentId.slice(at + 1) };
}

export function fingerprint(credentials: readonly Header[]): string {
  const hash = createHash("sha256");
  for (const h of credentials) hash.update(`${h.name.toLowerCase()}\n${h.value}\n`);
  return hash.digest("base64url");
}

/** The metrics label of a collection. */
export function outcomeOf(collection: Collection): "settled" | "accrued" | "channel_settled" | "refunded" {
  return collection.kind === "refund" ? "refunded" : eventOutcome(collection);
}

/** The event outcome of a collection this service journals (a refund is the worker's to journal). */
export function eventOutcome(
  collection: Exclude<Collection, { kind: "refund" }>,
): "settled" | "accrued" | "channel_settled" {
  if (collection.kind === "accrual") return "accrued";
  return collection.kind === "transaction" ? "settled" : "channel_settled";
}

/** What a collection is found by: its transaction, or an accrual's channel when it came with none. */
export function referenceOf(collection: Collection): string {
  return collection.kind === "accrual"
    ? (collection.transaction ?? collection.channel)
    : collection.transaction;
}

/** The reservation store could not be reached: refuse rather than risk serving a payment twice. */
export class StoreUnavailableError extends Error {}

/** Runs a store operation; an unreachable store becomes a StoreUnavailableError. */
export async function store<T>(core: Core, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    throw unavailable(core, err);
  }
}

export function unavailable(core: Core, err: unknown): StoreUnavailableError {
  core.opts.logger.warn({ err: err instanceof Error ? err.message : err }, "payment store unavailable");
  return new StoreUnavailableError("payment replay protection is unavailable");
}
