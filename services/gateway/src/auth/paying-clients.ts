// Which paying clients may have one paid call's node call started beside its Verify (see
// PayingClients): the latency of a paid call then hides Verify's, at a bounded cost in node calls
// for payments that turn out forged.

/** The most clients remembered; past it the least recently paid is forgotten. */
const PAYING_MAX = 10_000;

/** One paying client's standing (see PayingClients). */
interface Trust {
  /** Until when (Date.now ms) its paid calls may start their node call early; 0 once one was refused. */
  until: number;
  /** An early node call has started whose payment Verify has not answered yet. */
  pending: boolean;
  /** What its last settled payment was worth (micro-USD): the most an early call of its may cost. */
  paidMicro: number;
}

/** A price (USD decimal, as the catalog writes it) in micro-USD, the unit early calls are bounded in. */
export function microUsd(price: string): number {
  return Math.round(Number(price) * 1e6);
}

/**
 * Client addresses whose last payment settled (within the trust time), with what it was worth. One
 * paid call of theirs at a time, priced at most that, starts its node call while Verify runs (see
 * serveWithPayment); their other calls, dearer ones, and anyone else's, wait for Verify. Trust is
 * earned only by a settled payment: a payment that verifies and is then released (the node gave no
 * answer, or rpc-proxy refused the input) renews nothing, so a reusable authorization cannot keep
 * a client trusted, and a refused Verify ends it. So forged or unpaid payments cost at most one
 * upstream request per settled payment, worth at most what that payment paid.
 */
export class PayingClients {
  readonly #clients = new Map<string, Trust>();
  readonly #ttlMs: number;
  /** Counts the early node calls claimed (payment_early_calls_total). */
  readonly #claimed: { inc(): void } | undefined;

  constructor(ttlMs: number, claimed?: { inc(): void }) {
    this.#ttlMs = ttlMs;
    this.#claimed = claimed;
  }

  /**
   * The client's early node call for a call priced `priceMicro`, when it is trusted, has none
   * pending and last paid at least that much; undefined otherwise.
   */
  claim(client: string, priceMicro: number): Trust | undefined {
    const trust = this.#clients.get(client);
    if (trust === undefined || trust.pending || trust.until <= Date.now() || priceMicro > trust.paidMicro)
      return undefined;
    trust.pending = true;
    this.#claimed?.inc();
    return trust;
  }

  /** A settled payment worth `paidMicro` earns, or renews, its client's trust, bounded by that value. */
  settled(client: string, paidMicro: number): void {
    if (!client || this.#ttlMs <= 0) return;
    const trust = this.#clients.get(client) ?? { until: 0, pending: false, paidMicro: 0 };
    // Re-inserted: the map's order is the order of last payment, the oldest forgotten first.
    this.#clients.delete(client);
    trust.until = Date.now() + this.#ttlMs;
    trust.paidMicro = paidMicro;
    this.#clients.set(client, trust);
    if (this.#clients.size > PAYING_MAX) {
      for (const [oldest, t] of this.#clients) {
        // One with its early call pending stays (forgotten, it could start a second one).
        if (t.pending) continue;
        this.#clients.delete(oldest);
        break;
      }
    }
  }

  /** A refused payment ends its client's trust. */
  refused(client: string): void {
    const trust = this.#clients.get(client);
    if (trust === undefined) return;
    // Kept while another call's early node call is pending, so that one stays the only one.
    if (trust.pending) trust.until = 0;
    else this.#clients.delete(client);
  }
}
