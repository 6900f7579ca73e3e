// The Redis budget of Authorize, kept by one timer for every call in flight rather than a timer per
// call: all calls share one budget, so their deadlines come in the order the calls started.

/** What a wait past its budget resolves to (no Error object per timed-out call). */
export const OVER_BUDGET: unique symbol = Symbol("over budget");

/** Above this event-loop utilization the wait is our own queue, not Redis. */
const BUSY_LOOP = 0.8;

interface Waiter {
  /** Past it, the call fails open if this process was mostly idle meanwhile. */
  deadline: number;
  /** Past it, the call fails open whatever the reason. */
  hardDeadline: number;
  settle: (value: unknown) => void;
  done: boolean;
}

/**
 * Waits for store replies within `budgetMs`. Past the budget a call gives up (OVER_BUDGET) if this
 * process was mostly idle meanwhile (Redis is slow or gone). If the event loop was busy instead (a
 * burst of calls queued on our side), giving up would serve calls past their quota for no Redis
 * trouble at all, so it waits on, up to `maxMs`. Each check first lets pending I/O run: timers run
 * before I/O in Node's loop, so a reply may already be waiting, unread.
 */
export class BudgetWatch {
  readonly #budgetMs: number;
  readonly #maxMs: number;
  #queue: Waiter[] = [];
  #head = 0;
  #timer: NodeJS.Timeout | undefined;
  #loopSince = performance.eventLoopUtilization();

  constructor(budgetMs: number, maxMs: number) {
    this.#budgetMs = budgetMs;
    this.#maxMs = Math.max(budgetMs, maxMs);
  }

  /** The reply, or OVER_BUDGET. A rejection of `reply` passes through. */
  wait<T>(reply: Promise<T>): Promise<T | typeof OVER_BUDGET> {
    return new Promise((resolve, reject) => {
      const now = Date.now();
      const waiter: Waiter = {
        deadline: now + this.#budgetMs,
        hardDeadline: now + this.#maxMs,
        settle: resolve as (value: unknown) => void,
        done: false,
      };
      this.#queue.push(waiter);
      if (!this.#timer) {
        // From idle: busy-ness is measured from here.
        this.#loopSince = performance.eventLoopUtilization();
        this.#arm(this.#budgetMs);
      }
      reply.then(
        (value) => {
          if (waiter.done) return;
          waiter.done = true;
          resolve(value);
        },
        (err: unknown) => {
          if (waiter.done) return;
          waiter.done = true;
          reject(err);
        },
      );
    });
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => setImmediate(() => this.#check()), Math.max(1, ms));
    this.#timer.unref();
  }

  #check(): void {
    this.#timer = undefined;
    const now = Date.now();
    const loop = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(loop, this.#loopSince).utilization > BUSY_LOOP;
    this.#loopSince = loop;
    const queue = this.#queue;
    let next = Number.POSITIVE_INFINITY;
    for (let i = this.#head; i < queue.length; i++) {
      const w = queue[i] as Waiter;
      if (w.done) continue;
      if (w.deadline > now) {
        next = Math.min(next, w.deadline - now);
        break;
      }
      if (!busy || now >= w.hardDeadline) {
        w.done = true;
        w.settle(OVER_BUDGET);
      } else {
        next = Math.min(next, this.#budgetMs, w.hardDeadline - now);
      }
    }
    while (this.#head < queue.length && (queue[this.#head] as Waiter).done) this.#head++;
    if (this.#head === queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head > 1024) {
      this.#queue = queue.slice(this.#head);
      this.#head = 0;
    }
    if (this.#head < this.#queue.length) this.#arm(Number.isFinite(next) ? next : this.#budgetMs);
  }
}
