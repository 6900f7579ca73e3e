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
    /** `noService`: the request names no call (see VerifyRequest.no_service in the proto). */
    verify(requestId: string, resource: Resource, credentials: Header[], client = "", noService = false) {
      return againIfGone(() => rpc.call("Verify", { requestId, resource, credentials, client, noService }));
    },
    settle(requestId: string, paymentId: string, resource: Resource, credentials: Header[]) {
      return againIfGone(() =>
        rpc.call(
          "Settle",
          { requestId, paymentId, resource, credentials },
          { deadlineMs: deadlines.settleMs },
        ),
      );
    },
    release(requestId: string, paymentId: string, reason: string, resource: Resource, credentials: Header[]) {
      return againIfGone(() => rpc.call("Release", { requestId, paymentId, reason, resource, credentials }));
    },
    methods() {
      return rpc.call("DescribeMethods", {});
    },
    close: () => rpc.close(),
  };
}

/**
 * A call whose replica went away (UNAVAILABLE: refused, or the connection dropped mid-call) is sent
 * once more, and the channel's round robin takes it to another replica. Every payment-verifier call
 * is safe to repeat: Challenge reads; a Verify of the same request gets the same payment_id; a
 * Settle of the same call waits for the settlement its first attempt began, or takes it over once
 * that replica died (never a second transfer; payment-verifier README); Release frees only its
 * holder's reservation. Without it, a replica killed
 * mid-settlement left a charged call answered 503 (chaos run).
 */
function againIfGone<T>(call: () => Promise<T>): Promise<T> {
  return call().catch((err: unknown) => {
    if (!(err instanceof CallError) || err.failure.grpcCode !== grpc.status.UNAVAILABLE) throw err;
    return call();
  });
}

export type PaymentVerifierClient = ReturnType<typeof createPaymentVerifierClient>;
