// The clean-ups the payment store refused because it was unreachable (releases, settled records,
// drops, a scheme letting go of a hold), kept and tried again until they land or lapse. Left
// undone, a payment stays reserved and a channel scheme's request stays held until their TTLs, so a
// payer re-signing the same voucher (an x402-batch client that was never charged) is refused for
// minutes after Redis is back; done first thing once it answers, the next call goes through.

/** How often a clean-up that could not reach the store is tried again, and how many wait at most. */
const DEFERRED_RETRY_MS = 500;
const DEFERRED_MAX = 10_000;
/** Of those, releases of reservations and channel locks whose answer was lost (see deferLost). */
const LOST_RESERVES_MAX = 1_000;

/** A clean-up the store refused (it was unreachable), tried again until it lands or lapses. */
interface Deferred {
  /** Past this, the reservation it frees has lapsed on its own. */
  until: number;
  run(): Promise<void>;
  /** Told once it is over: landed, lapsed or dropped (the queue was full). */
  over?: () => void;
}

export class RetryQueue {
  readonly #now: () => number;
  readonly #deferred: Deferred[] = [];
  #retrying: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  /** Lost-answer releases (reservations, channel locks) waiting here. */
  #lostReserves = 0;

  constructor(now: () => number) {
    this.#now = now;
  }

  /**
   * Whether any clean-up waits or is being tried (a Verify runs them first: it may re-use what they
   * free). A round in flight counts: its jobs are out of the list while it runs.
   */
  get pending(): boolean {
    return this.#deferred.length > 0 || this.#retrying !== undefined;
  }

  /**
   * Runs every clean-up waiting now, after the round in flight, if any: that round may have started
   * while the store was still down (the timer's), and its jobs then wait again. Resolves once each
   * landed or was refused again. Without this, a Verify arriving while the timer's round ran found
   * nothing pending and took the channel before the lock of a call that died with Redis was let go:
   * the payer's first call after the outage was refused busy.
   */
  async drain(): Promise<void> {
    if (this.#retrying) await this.#retrying;
    if (this.#deferred.length > 0) await this.retry();
  }

  /** Keeps `run` to try again for `ttlMs`; `over` is told once it landed, lapsed or was dropped. */
  defer(ttlMs: number, run: () => Promise<unknown>, over?: () => void): void {
    if (this.#deferred.length >= DEFERRED_MAX) this.#deferred.shift()?.over?.();
    this.#deferred.push({ until: this.#now() + ttlMs, run: async () => void (await run()), over });
    this.#retryTimer ??= setInterval(() => void this.retry(), DEFERRED_RETRY_MS).unref();
  }

  /**
   * Defers the release of something the store may have taken though its answer was lost. At most
   * LOST_RESERVES_MAX of these wait at a time (a hung Redis times every Verify out): the rest lapse
   * with their TTL, and the clean-ups that matter more keep their place.
   */
  deferLost(ttlMs: number, run: () => Promise<unknown>): void {
    if (this.#lostReserves >= LOST_RESERVES_MAX) return;
    this.#lostReserves++;
    this.defer(ttlMs, run, () => this.#lostReserves--);
  }

  /** Runs the deferred clean-ups once (coalesced); those the store still refuses wait again. */
  retry(): Promise<void> {
    this.#retrying ??= (async () => {
      const due = this.#deferred.splice(0);
      for (const [i, d] of due.entries()) {
        if (d.until <= this.#now()) {
          d.over?.();
          continue;
        }
        try {
          await d.run();
          d.over?.();
        } catch {
          // Still unreachable: keep this one and the rest for the next round.
          this.#deferred.unshift(...due.slice(i));
          break;
        }
      }
      if (this.#deferred.length === 0) {
        clearInterval(this.#retryTimer);
        this.#retryTimer = undefined;
      }
    })().finally(() => {
      this.#retrying = undefined;
    });
    return this.#retrying;
  }
}
