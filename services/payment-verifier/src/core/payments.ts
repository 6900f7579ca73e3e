// The payment core, the same for every protocol and scheme: find the scheme a credential belongs
// to, limit attempts, reserve the payment at most once across replicas under a token only this
// service generates, verify, then settle after the node answered or release after it did not, and
// record every outcome as an event. It knows nothing of x402 or MPP: protocols decode credentials
// and render offers, schemes check and collect payments. Driven by plain objects (see transport.ts
// for the gRPC mapping); payment problems are answers, never exceptions.
//
// This class is the core's one face; the work lives by responsibility in verify.ts, settle.ts
// (with takeover.ts), release.ts, self-guarded.ts, refusals.ts and retry-queue.ts, over the state
// they share (context.ts).
import type { KeptAnswer } from "../stores/answers.ts";
import { keepAnswer } from "./answers.ts";
import {
  type Core,
  createCore,
  type PaymentsOptions,
  type SettleOutcome,
  type VerifyOutcome,
} from "./context.ts";
import { challenge, problemFor } from "./refusals.ts";
import { release } from "./release.ts";
import { settle } from "./settle.ts";
import { createLiveness, type Liveness } from "./takeover.ts";
import type {
  Header,
  PaymentErrorCode,
  PaymentMethodInfo,
  PaymentProtocol,
  PricedCall,
  Problem,
} from "./types.ts";
import { verify } from "./verify.ts";

export type { PaymentsOptions, SettleOutcome, VerifyOutcome } from "./context.ts";
export { payerPenalty } from "./verify.ts";

export class Payments {
  readonly #core: Core;
  readonly #liveness: Liveness;

  constructor(opts: PaymentsOptions) {
    this.#core = createCore(opts);
    this.#liveness = createLiveness(this.#core);
  }

  /** Marks this replica alive, then renews it (see takeover.ts): call once before any Settle. */
  start(): Promise<void> {
    return this.#liveness.start();
  }

  /** Stops the liveness beat (the process is going away). */
  close(): void {
    this.#liveness.close();
  }

  /**
   * Every protocol's one rendering of its schemes' offers. A scheme that cannot take payments now
   * drops out alone; the 402 still answers with the others.
   */
  challenge(call: PricedCall, refusal = ""): Promise<Header[]> {
    return challenge(this.#core, call, refusal);
  }

  /**
   * The problem a protocol defines for a refusal: the credential's protocol, or (no credential)
   * the first protocol that defines one, since the 402 offers every protocol.
   */
  problem(
    protocol: PaymentProtocol | undefined,
    code: PaymentErrorCode,
    reason: string,
  ): Problem | undefined {
    return problemFor(this.#core, protocol, code, reason);
  }

  verify(call: PricedCall, credentials: readonly Header[]): Promise<VerifyOutcome> {
    return verify(this.#core, call, credentials);
  }

  /** `deadline`: when the caller stops waiting for the answer (epoch ms), if it said. */
  settle(
    call: PricedCall,
    paymentId: string,
    credentials: readonly Header[],
    deadline = Number.POSITIVE_INFINITY,
  ): Promise<SettleOutcome> {
    return settle(this.#core, call, paymentId, credentials, deadline);
  }

  /** Frees a verified payment whose call got no answer. Only the holder of the token can. */
  release(
    requestId: string,
    call: PricedCall | undefined,
    paymentId: string,
    credentials: readonly Header[],
    reason: string,
  ): Promise<void> {
    return release(this.#core, requestId, call, paymentId, credentials, reason);
  }

  /**
   * Keeps the answer of a settled call whose Verify asked for it (a payment identifier), for a
   * retry of the same payment; true when kept (core/answers.ts).
   */
  keepAnswer(
    paymentId: string,
    credentials: readonly Header[],
    answer: KeptAnswer,
    tooLarge: boolean,
  ): Promise<boolean> {
    return keepAnswer(this.#core, paymentId, credentials, answer, tooLarge);
  }

  methods(): PaymentMethodInfo[] {
    return this.#core.opts.schemes.flatMap((s) => s.methods());
  }
}
