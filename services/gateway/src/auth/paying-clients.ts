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
}

/**
 * Client addresses whose last payment settled (within the trust time). One paid call of theirs at a
 * time starts its node call while Verify runs (see serveWithPayment); their other calls, and anyone
 * else's, wait for Verify. Trust is earned only by a settled payment: a payment that verifies and
 * is then released (the node gave no answer, or rpc-proxy refused the input) renews nothing, so a
 * reusable authorization cannot keep a client trusted, and a refused Verify ends it. So forged or
 * unpaid payments cost at most one upstream request per settled payment.
 */
export class PayingClients {
  readonly #clients = new Map<string, Trust>();
  readonly #ttlMs: number;

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  /** The client's early node call, when it is trusted and has none pending; undefined otherwise. */
  claim(client: string): Trust | undefined {
    const trust = this.#clients.get(client);
    if (trust === undefined || trust.pending || trust.until <= Date.now()) return undefined;
    trust.pending = true;
    return trust;
  }

  /** A settled payment earns, or renews, its client's trust. */
  settled(client: string): void {
    if (!client || this.#ttlMs <= 0) return;
    const trust = this.#clients.get(client) ?? { until: 0, pending: false };
    // Re-inserted: the map's order is the order of last payment, the oldest forgotten first.
    this.#clients.delete(client);
    trust.until = Date.now() + this.#ttlMs;
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
