// One quorum read (CONSENSUS_<NETWORK>, README, Quorum reads): the same pinned calls sent to n
// upstreams at once, served as soon as k answers are the same; the answers still out are compared
// when they come, and every upstream whose answer differs from the k's is cordoned.
import { grpc, ServiceError } from "@tollgate/platform";
import { answerKey } from "./consensus.ts";
import { type RpcCall, type RpcOutcome, TransportError } from "./jsonrpc.ts";
import type { Upstream } from "./upstream.ts";

/** What a quorum read reports to its pool. */
export interface QuorumHooks {
  /** An answer left out of the quorum: `key` its answer, `quorum` the k's (answerKey). */
  disagreed(upstream: Upstream, key: string, quorum: string, agreed: readonly Upstream[]): void;
  /** No k alike: every distinct answer and who gave it. */
  split(answers: readonly { key: string; upstreams: readonly Upstream[] }[]): void;
  /** The read ended: served (`agreed`), or failed (`disagreement`, `unavailable`). */
  outcome(outcome: "agreed" | "disagreement" | "unavailable"): void;
  /** The failure when too few upstreams answered at all (as the pool's retry loop would fail). */
  noAnswer(last: TransportError | undefined, timedOut: boolean): ServiceError;
}

interface Answer {
  key: string;
  outcomes: RpcOutcome[];
  upstreams: Upstream[];
}

/** `upstream_disagreement`: no k answers alike. Never names the block or the answers (a free refusal). */
function disagreement(network: string, k: number, asked: number): ServiceError {
  return new ServiceError(
    grpc.status.UNKNOWN,
    "upstream_disagreement",
    `the ${network} nodes disagree: fewer than ${k} of the ${asked} asked gave the same answer`,
  );
}

export class QuorumRead {
  readonly #network: string;
  readonly #k: number;
  readonly #hooks: QuorumHooks;
  readonly #answers: Answer[] = [];
  #pending = 0;
  #asked = 0;
  #winner: Answer | undefined;
  /** A failure every node would give (result_too_large), or a bug: passed on as it is. */
  #failure: unknown;
  #last: TransportError | undefined;
  #timedOut = false;
  #resolve!: (outcomes: RpcOutcome[]) => void;
  #reject!: (err: unknown) => void;

  constructor(network: string, k: number, hooks: QuorumHooks) {
    this.#network = network;
    this.#k = k;
    this.#hooks = hooks;
  }

  /** Asks every upstream at once; resolves with the k's answer as soon as k answers are alike. */
  run(upstreams: readonly Upstream[], calls: readonly RpcCall[], timeoutMs: number): Promise<RpcOutcome[]> {
    const answer = new Promise<RpcOutcome[]>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#asked = upstreams.length;
    this.#pending = upstreams.length;
    for (const u of upstreams) {
      u.send(calls, timeoutMs).then(
        (outcomes) => this.#answered(u, outcomes),
        (err: unknown) => this.#failed(err),
      );
    }
    return answer;
  }

  #answered(upstream: Upstream, outcomes: RpcOutcome[]): void {
    const key = answerKey(outcomes);
    let answer = this.#answers.find((a) => a.key === key);
    if (answer === undefined) {
      answer = { key, outcomes, upstreams: [] };
      this.#answers.push(answer);
    }
    answer.upstreams.push(upstream);
    if (this.#winner === undefined && answer.upstreams.length >= this.#k) {
      this.#winner = answer;
      this.#hooks.outcome("agreed");
      this.#resolve(answer.outcomes);
    }
    this.#settle();
  }

  #failed(err: unknown): void {
    if (err instanceof TransportError) {
      if (err.kind === "timeout") this.#timedOut = true;
      this.#last = err;
    } else {
      this.#failure ??= err;
    }
    this.#settle();
  }

  /** Once every upstream answered or failed: cordon the dissenters, or fail the read. */
  #settle(): void {
    if (--this.#pending > 0) return;
    const winner = this.#winner;
    if (winner !== undefined) {
      for (const answer of this.#answers) {
        if (answer === winner) continue;
        for (const u of answer.upstreams) this.#hooks.disagreed(u, answer.key, winner.key, winner.upstreams);
      }
      return;
    }
    if (this.#failure !== undefined) {
      this.#hooks.outcome("unavailable");
      this.#reject(this.#failure);
    } else if (this.#answers.length >= 2) {
      this.#hooks.split(this.#answers);
      this.#hooks.outcome("disagreement");
      this.#reject(disagreement(this.#network, this.#k, this.#asked));
    } else {
      this.#hooks.outcome("unavailable");
      this.#reject(this.#hooks.noAnswer(this.#last, this.#timedOut));
    }
  }
}
