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
  const client = createClient(contracts.paymentVerifier().PaymentVerifierService, address, {
    service: "payment-verifier",
    ...mesh,
    defaultDeadlineMs: deadlines.verifyMs,
  });
  return {
    challenge(requestId: string, resource: Resource, error = "") {
      return client.call("Challenge", { requestId, resource, error });
    },
    verify(requestId: string, resource: Resource, credentials: Header[]) {
      return client.call("Verify", { requestId, resource, credentials });
    },
    settle(requestId: string, paymentId: string, resource: Resource, credentials: Header[]) {
      return client.call(
        "Settle",
        { requestId, paymentId, resource, credentials },
        { deadlineMs: deadlines.settleMs },
      );
    },
    release(requestId: string, paymentId: string, reason: string) {
      return client.call("Release", { requestId, paymentId, reason });
    },
    methods() {
      return client.call("DescribeMethods", {});
    },
    close: () => client.close(),
  };
}

export type PaymentVerifierClient = ReturnType<typeof createPaymentVerifierClient>;
