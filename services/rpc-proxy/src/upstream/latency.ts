// Recent answer latencies of one upstream, per method class, in fixed-size rings: what a read's
// hedge delay is read from (the serving upstream's own recent quantile). Nothing is allocated per
// answer; the quantile is sorted anew every few answers, in a scratch array of the ring's size.
import type { RpcCall } from "./jsonrpc.ts";

/**
 * Method classes, each timed on its own: a plain read (a block number, a balance), an execution
 * (eth_call, eth_estimateGas), a log query, and a batch. A slow eth_getLogs says nothing about how
 * fast an eth_blockNumber should be.
 */
export const METHOD_CLASSES = 4;
const EXECUTION = 1;
const LOGS = 2;
const BATCH = 3;

export function methodClass(calls: readonly RpcCall[]): number {
  if (calls.length > 1) return BATCH;
  const method = calls[0]!.method;
  if (method === "eth_getLogs") return LOGS;
  if (method === "eth_call" || method === "eth_estimateGas") return EXECUTION;
  return 0;
}

/** Answers kept per upstream and class. */
const WINDOW = 64;
/** No quantile (so no hedge) until this many answers were seen. */
const MIN_SAMPLES = 16;
/** The quantile is sorted anew after this many answers. */
const REFRESH_EVERY = 8;

export class LatencyWindow {
  readonly #samples = new Float64Array(WINDOW).fill(Number.POSITIVE_INFINITY);
  readonly #scratch = new Float64Array(WINDOW);
  /** 0..1: which quantile `quantile` reads. */
  readonly #q: number;
  #count = 0;
  #next = 0;
  #sinceRefresh = 0;
  #quantile = Number.POSITIVE_INFINITY;

  constructor(q: number) {
    this.#q = q;
  }

  /** One answer's latency in milliseconds. */
  record(ms: number): void {
    this.#samples[this.#next] = ms;
    this.#next = (this.#next + 1) % WINDOW;
    if (this.#count < WINDOW) this.#count++;
    if (++this.#sinceRefresh >= REFRESH_EVERY && this.#count >= MIN_SAMPLES) this.#refresh();
  }

  /** The q-quantile of the recent answers in milliseconds; Infinity while too few were seen. */
  get quantile(): number {
    return this.#quantile;
  }

  #refresh(): void {
    this.#sinceRefresh = 0;
    // Slots not yet written hold Infinity and sort last.
    this.#scratch.set(this.#samples);
    this.#scratch.sort();
    this.#quantile = this.#scratch[Math.floor(this.#q * (this.#count - 1))]!;
  }
}

/**
 * The hedge budget of one network: each read earns `percent` hundredths of a hedge (up to a small
 * reserve, so a burst of slow answers after a quiet spell may hedge a few) and each hedge spends a
 * whole one, so hedges never exceed that share of reads. Whole numbers: no rounding drift.
 */
export class HedgeBudget {
  readonly #percent: number;
  readonly #cap: number;
  #hundredths = 0;

  constructor(percent: number, reserve = 10) {
    this.#percent = percent;
    this.#cap = reserve * 100;
  }

  get enabled(): boolean {
    return this.#percent > 0;
  }

  earn(): void {
    this.#hundredths = Math.min(this.#cap, this.#hundredths + this.#percent);
  }

  spend(): boolean {
    if (this.#hundredths < 100) return false;
    this.#hundredths -= 100;
    return true;
  }
}
