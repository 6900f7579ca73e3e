import { CallError, contracts, createClient, grpc, type MeshClientOptions } from "@tollgate/platform";
import type { Header } from "@tollgate/platform/generated/tollgate/payment/v1/Header";
import type { Resource } from "@tollgate/platform/generated/tollgate/payment/v1/Resource";

export type { Header, Resource };

/**
 * The gateway's view of payment-verifier. The gateway never interprets a payment:
 * it forwards the payment headers and copies back the headers it is given.
 */
export function createPaymentVerifierClient(
  address: string,
  mesh: MeshClientOptions,
  deadlines: { verifyMs: number; settleMs: number },
) {
  const rpc = createClient(contracts.paymentVerifier().PaymentVerifierService, address, {
    service: "payment-verifier",
    ...mesh,
    defaultDeadlineMs: deadlines.verifyMs,
    // Challenge, Verify, Settle and Release as messages on open streams, not a unary call each:
    // a paid request makes two of them on its critical path.
    exchange: { method: "Exchange" },
  });
  return {
    challenge(requestId: string, resource: Resource, error = "") {
      return againIfGone(() => rpc.call("Challenge", { requestId, resource, error }));
    },
    /**
     * `noService`: the request names no call (see VerifyRequest.no_service in the proto);
     * `requestDigest`: what it asks besides its URL (VerifyRequest.request_digest).
     */
    verify(
      requestId: string,
      resource: Resource,
      credentials: Header[],
      client = "",
      noService = false,
      requestDigest = "",
    ) {
      return againIfGone(() =>
        rpc.call("Verify", { requestId, resource, credentials, client, noService, requestDigest }),
      );
    },
    settle(requestId: string, paymentId: string, resource: Resource, credentials: Header[]) {
      return untilAnswered(
        (deadlineMs) => rpc.call("Settle", { requestId, paymentId, resource, credentials }, { deadlineMs }),
        deadlines.settleMs,
      );
    },
    release(requestId: string, paymentId: string, reason: string, resource: Resource, credentials: Header[]) {
      return againIfGone(() => rpc.call("Release", { requestId, paymentId, reason, resource, credentials }));
    },
    /** A SIGN-IN-WITH-X proof (as received): the wallet it signs in, or why it is refused. */
    verifySignIn(requestId: string, resource: Resource, proof: string, client: string) {
      return againIfGone(() => rpc.call("VerifySignIn", { requestId, resource, proof, client }));
    },
    /** The answer a payment identifier's retry gets again (VerifyResponse.answer_max_bytes). */
    keepAnswer(
      requestId: string,
      paymentId: string,
      resource: Resource,
      credentials: Header[],
      answer: { status: number; headers: Header[]; body: string },
      tooLarge: boolean,
    ) {
      return againIfGone(() =>
        rpc.call("KeepAnswer", { requestId, paymentId, resource, credentials, answer, tooLarge }),
      );
    },
    methods() {
      return rpc.call("DescribeMethods", {});
    },
    close: () => rpc.close(),
  };
}

/**
 * A call whose replica went away (UNAVAILABLE: refused, or the connection dropped mid-call) is sent
 * once more (a Settle until its deadline: untilAnswered), and the channel's round robin takes it to
 * another replica. Every payment-verifier call is safe to repeat: Challenge reads; a Verify of the
 * same request gets the same payment_id, a VerifySignIn the same wallet (its nonce is held by the
 * request's id); a Settle of the same call waits for the settlement its
 * first attempt began, or takes it over once that replica died (never a second transfer;
 * payment-verifier README); Release frees only its holder's reservation. Without it, a replica
 * killed mid-settlement left a charged call answered 503 (chaos run).
 */
function againIfGone<T>(call: () => Promise<T>): Promise<T> {
  return call().catch((err: unknown) => {
    if (!gone(err)) throw err;
    return call();
  });
}

const gone = (err: unknown) => err instanceof CallError && err.failure.grpcCode === grpc.status.UNAVAILABLE;

/** Waits between Settle attempts: doubling from the first, at most the last. */
const SETTLE_AGAIN_MS = [50, 1_000] as const;
/** Below this much of its deadline left, a Settle is not sent again (it could not wait for anything). */
const SETTLE_LAST_MS = 1_000;

/**
 * A Settle is sent again each time its replica goes away, until its deadline (`budgetMs` for all
 * attempts together), not just once: by then the call was served by the node, and a Settle that
 * reached a replica may have moved the payer's money. Answered 503 after an attempt that may have
 * settled, the payer would have paid for a call answered failed; each new attempt joins the
 * settlement its predecessor began, or reads its outcome (see againIfGone). A soak saw both
 * connections drop at once in a full GC of every process, and a second attempt drop with the first.
 */
async function untilAnswered<T>(call: (deadlineMs: number) => Promise<T>, budgetMs: number): Promise<T> {
  const deadline = Date.now() + budgetMs;
  let wait: number = SETTLE_AGAIN_MS[0];
  for (;;) {
    try {
      return await call(Math.max(1, deadline - Date.now()));
    } catch (err) {
      if (!gone(err) || deadline - Date.now() - wait < SETTLE_LAST_MS) throw err;
    }
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, SETTLE_AGAIN_MS[1]);
  }
}

export type PaymentVerifierClient = ReturnType<typeof createPaymentVerifierClient>;
