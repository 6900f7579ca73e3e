import { contracts, createClient, type MeshClientOptions } from "@tollgate/platform";
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
  });
  return {
    challenge(requestId: string, resource: Resource, error = "") {
      return rpc.call("Challenge", { requestId, resource, error });
    },
    /** `noService`: the request names no call (see VerifyRequest.no_service in the proto). */
    verify(requestId: string, resource: Resource, credentials: Header[], client = "", noService = false) {
      return rpc.call("Verify", { requestId, resource, credentials, client, noService });
    },
    settle(requestId: string, paymentId: string, resource: Resource, credentials: Header[]) {
      return rpc.call(
        "Settle",
        { requestId, paymentId, resource, credentials },
        { deadlineMs: deadlines.settleMs },
      );
    },
    release(requestId: string, paymentId: string, reason: string, resource: Resource, credentials: Header[]) {
      return rpc.call("Release", { requestId, paymentId, reason, resource, credentials });
    },
    methods() {
      return rpc.call("DescribeMethods", {});
    },
    close: () => rpc.close(),
  };
}

export type PaymentVerifierClient = ReturnType<typeof createPaymentVerifierClient>;
