import {
  BrokenCircuitError,
  type CircuitBreakerPolicy,
  CircuitState,
  ConsecutiveBreaker,
  circuitBreaker,
  handleWhen,
} from "cockatiel";
import { TransportError } from "./jsonrpc.ts";

export type BreakerState = "closed" | "open" | "half_open";

function toState(state: CircuitState): BreakerState {
  if (state === CircuitState.Closed) return "closed";
  if (state === CircuitState.HalfOpen) return "half_open";
  return "open";
}

/**
 * One upstream URL's circuit breaker (cockatiel): after `threshold` consecutive transport
 * failures it opens and rejects calls for `cooldownMs`; the next call after that is the
 * single half-open probe, whose success closes it again. JSON-RPC errors are answers, not
 * failures, so a node that reverts calls stays closed.
 */
export class Breaker {
  readonly #policy: CircuitBreakerPolicy;
  readonly #cooldownMs: number;
  #openedAt = 0;

  constructor(opts: { threshold: number; cooldownMs: number; onChange: (state: BreakerState) => void }) {
    this.#cooldownMs = opts.cooldownMs;
    this.#policy = circuitBreaker(
      handleWhen((err) => err instanceof TransportError),
      { halfOpenAfter: opts.cooldownMs, breaker: new ConsecutiveBreaker(opts.threshold) },
    );
    this.#policy.onStateChange((state) => {
      if (state === CircuitState.Open) this.#openedAt = Date.now();
      opts.onChange(toState(state));
    });
  }

  get state(): BreakerState {
    return toState(this.#policy.state);
  }

  /**
   * Whether a call may go now: "yes" when closed, "probe" when open long enough that the
   * next call becomes the half-open probe, "no" while open or while a probe is in flight.
   */
  admits(now = Date.now()): "yes" | "probe" | "no" {
    const state = this.#policy.state;
    if (state === CircuitState.Closed) return "yes";
    if (state === CircuitState.Open && now - this.#openedAt >= this.#cooldownMs) return "probe";
    return "no";
  }

  async execute<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await this.#policy.execute(fn);
    } catch (err) {
      if (err instanceof BrokenCircuitError) {
        throw new TransportError("breaker_open", "circuit breaker is open", { sent: false });
      }
      throw err;
    }
  }
}
