export type BreakerState = "closed" | "open" | "half_open";

/** How a call went through the breaker: an ordinary call, or the single half-open probe. */
export type BreakerTicket = "call" | "probe";

/**
 * One upstream URL's circuit breaker: after `threshold` consecutive transport failures it opens
 * and refuses calls for `cooldownMs`; the next call after that is the single half-open probe,
 * whose success closes it again and whose failure opens it for another cooldown. JSON-RPC errors
 * are answers, not failures, so a node that reverts calls stays closed. Synchronous bookkeeping
 * around the caller's own request: no promise or closure per call.
 */
export class Breaker {
  readonly #threshold: number;
  readonly #cooldownMs: number;
  readonly #onChange: (state: BreakerState) => void;
  #state: BreakerState = "closed";
  #failures = 0;
  #openedAt = 0;

  constructor(opts: { threshold: number; cooldownMs: number; onChange: (state: BreakerState) => void }) {
    this.#threshold = opts.threshold;
    this.#cooldownMs = opts.cooldownMs;
    this.#onChange = opts.onChange;
  }

  get state(): BreakerState {
    return this.#state;
  }

  /**
   * Whether a call may go now: "yes" when closed, "probe" when open long enough that the
   * next call becomes the half-open probe, "no" while open or while a probe is in flight.
   */
  admits(now = Date.now()): "yes" | "probe" | "no" {
    if (this.#state === "closed") return "yes";
    if (this.#state === "open" && now - this.#openedAt >= this.#cooldownMs) return "probe";
    return "no";
  }

  /** Lets a call in (undefined: refused, the breaker is open or its probe is in flight). */
  enter(now = Date.now()): BreakerTicket | undefined {
    if (this.#state === "closed") return "call";
    if (this.#state === "open" && now - this.#openedAt >= this.#cooldownMs) {
      this.#set("half_open");
      return "probe";
    }
    return undefined;
  }

  /** The node answered. */
  succeeded(ticket: BreakerTicket): void {
    this.#failures = 0;
    if (ticket === "probe" && this.#state === "half_open") this.#set("closed");
  }

  /** The call failed for reasons of its own (not the node's): a probe that ends so still closes. */
  neutral(ticket: BreakerTicket): void {
    if (ticket === "probe") this.succeeded(ticket);
  }

  /** A transport failure. */
  failed(ticket: BreakerTicket): void {
    if (ticket === "probe") {
      if (this.#state === "half_open") this.#open();
      return;
    }
    // A call let in while closed counts even if the breaker has moved on meanwhile.
    if (++this.#failures >= this.#threshold && this.#state !== "open") this.#open();
  }

  #open(): void {
    this.#openedAt = Date.now();
    this.#set("open");
  }

  #set(state: BreakerState): void {
    if (state === this.#state) return;
    this.#state = state;
    this.#onChange(state);
  }
}
