import type { Logger } from "@tollgate/platform";
import type { UpstreamPolicyConfig } from "../config.ts";
import type { Metrics } from "../metrics.ts";
import { TransportError } from "./jsonrpc.ts";
import { type NetworkPool, OUT_OF_ROTATION } from "./pool.ts";
import type { Upstream } from "./upstream.ts";

/**
 * Polls every upstream's eth_blockNumber in the background. The answers give health,
 * head and lag (for upstream choice and for resolving block tags in log range checks
 * without a round trip), and the polls themselves are the half-open probes that close
 * a breaker once its node is back. The first poll of an upstream also checks its
 * eth_chainId, in the same batch, so a URL pointing at the wrong chain is never used.
 */
export class HeadTracker {
  readonly #pools: NetworkPool[];
  readonly #policy: UpstreamPolicyConfig;
  readonly #metrics: Metrics;
  readonly #logger: Logger;
  readonly #timers = new Map<Upstream, NodeJS.Timeout>();
  #stopped = false;

  constructor(pools: NetworkPool[], policy: UpstreamPolicyConfig, metrics: Metrics, logger: Logger) {
    this.#pools = pools;
    this.#policy = policy;
    this.#metrics = metrics;
    this.#logger = logger;
  }

  /** Runs the first round (so heads are known before serving), then polls each upstream on its own. */
  async start(): Promise<void> {
    await this.pollAll();
    for (const pool of this.#pools) for (const u of pool.upstreams) this.#schedule(pool, u);
  }

  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  // One timer per upstream, so a hung node never delays the polls of the others.
  #schedule(pool: NetworkPool, u: Upstream): void {
    if (this.#stopped) return;
    const timer = setTimeout(async () => {
      await this.#poll(pool, u);
      this.#publish(pool);
      this.#schedule(pool, u);
    }, this.#policy.headPollMs);
    timer.unref();
    this.#timers.set(u, timer);
  }

  /** Polls every upstream once, now. */
  async pollAll(): Promise<void> {
    await Promise.all(
      this.#pools.map(async (pool) => {
        await Promise.all(pool.upstreams.map((u) => this.#poll(pool, u)));
        this.#publish(pool);
      }),
    );
  }

  async #poll(pool: NetworkPool, u: Upstream): Promise<void> {
    // A hung node keeps its previous poll pending until the timeout; do not pile up.
    if (u.pollInFlight || u.wrongChain) return;
    if (u.breaker.admits() === "no") {
      u.lastPollOk = false;
      return;
    }
    u.pollInFlight = true;
    const wasOk = u.lastPollOk;
    try {
      const checkChain = this.#policy.verifyChainId && !u.chainVerified;
      const calls = checkChain
        ? [
            { method: "eth_chainId", params: [] },
            { method: "eth_blockNumber", params: [] },
          ]
        : [{ method: "eth_blockNumber", params: [] }];
      // A poll counts against the upstream's budget and is never skipped for it (budget.ts).
      u.budget?.take(Date.now());
      const outcomes = await u.send(calls, this.#policy.timeoutMs);
      if (checkChain) {
        const chain = outcomes[0]!;
        if (chain.ok && typeof chain.result === "string") {
          if (BigInt(chain.result) !== BigInt(pool.chainId)) {
            u.wrongChain = true;
            u.lastPollOk = false;
            this.#logger.error(
              { upstream: u.label, expected: pool.chainId, got: chain.result },
              "upstream serves another chain; it will not be used",
            );
            return;
          }
          u.chainVerified = true;
        }
      }
      const head = outcomes[outcomes.length - 1]!;
      if (head.ok && typeof head.result === "string" && /^0x[0-9a-fA-F]+$/.test(head.result)) {
        const polled = BigInt(head.result);
        if (polled !== u.head) u.headChangedAt = Date.now();
        u.head = polled;
        u.lastPollOk = true;
      } else {
        u.lastPollOk = false;
      }
    } catch (err) {
      u.lastPollOk = false;
      if (wasOk) {
        const kind = err instanceof TransportError ? err.kind : "error";
        this.#logger.warn({ upstream: u.label, kind }, "upstream head poll failed");
      }
    } finally {
      u.pollInFlight = false;
    }
    if (!wasOk && u.lastPollOk)
      this.#logger.info({ upstream: u.label, head: String(u.head) }, "upstream answering");
  }

  /**
   * After a poll: the consistent head again, then each upstream's place in the rotation (one
   * policy: NetworkPool.outOfRotation), with a log line when it leaves or comes back.
   */
  #publish(pool: NetworkPool): void {
    const now = Date.now();
    pool.updateHead(now);
    const head = pool.head();
    if (head !== undefined) this.#metrics.consensusHead.set({ network: pool.name }, Number(head));
    for (const u of pool.upstreams) {
      const labels = { network: pool.name, upstream: u.label };
      const reason = pool.outOfRotation(u, now);
      this.#metrics.upstreamHealthy.set(labels, reason === undefined ? 1 : 0);
      for (const r of OUT_OF_ROTATION)
        this.#metrics.cordoned.set({ ...labels, reason: r }, r === reason ? 1 : 0);
      if (u.head !== undefined) this.#metrics.headBlock.set(labels, Number(u.head));
      this.#metrics.lagBlocks.set(labels, Number(pool.lag(u)));
      if (u.budget) this.#metrics.monthCalls.set(labels, u.budget.monthCalls);
      if (reason !== u.published) {
        if (reason === undefined) this.#logger.info({ upstream: u.label }, "upstream back in rotation");
        else
          this.#logger.warn(
            { upstream: u.label, reason, head: String(u.head), consensusHead: String(head) },
            "upstream out of rotation",
          );
        u.published = reason;
      }
    }
  }
}
