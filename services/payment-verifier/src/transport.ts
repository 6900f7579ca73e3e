// The gRPC face of the payment core: turns PaymentVerifierService requests into plain calls on
// Payments and its answers back into proto messages. Requests the gateway could never send (no
// endpoint, an unknown endpoint, an empty request or payment id) fail with INVALID_ARGUMENT /
// NOT_FOUND; payment problems are answers.
import { ENDPOINTS, type Endpoint } from "@tollgate/catalog";
import { grpc, ServiceError } from "@tollgate/platform";
import type { ChallengeRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/ChallengeRequest";
import type { ChallengeResponse } from "@tollgate/platform/generated/tollgate/payment/v1/ChallengeResponse";
import type { DescribeMethodsResponse } from "@tollgate/platform/generated/tollgate/payment/v1/DescribeMethodsResponse";
import type { ReleaseRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/ReleaseRequest";
import type { Resource__Output } from "@tollgate/platform/generated/tollgate/payment/v1/Resource";
import type { SettleRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/SettleRequest";
import type { SettleResponse } from "@tollgate/platform/generated/tollgate/payment/v1/SettleResponse";
import type { VerifyRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/VerifyRequest";
import type { VerifyResponse } from "@tollgate/platform/generated/tollgate/payment/v1/VerifyResponse";
import type { Payments } from "./core/payments.ts";
import type { PricedCall } from "./core/types.ts";

const byPath = new Map<string, Endpoint>(ENDPOINTS.map((e) => [e.path, e]));

function required(value: string, name: string): string {
  if (!value)
    throw new ServiceError(grpc.status.INVALID_ARGUMENT, "invalid_parameter", `${name} is required`);
  return value;
}

/** Resolves the gRPC Resource to a priced call; an unknown endpoint is the caller's bug. */
export function pricedCall(
  requestId: string,
  resource: Resource__Output | null,
  client = "",
  noService = false,
): PricedCall {
  const path = required(resource?.endpoint ?? "", "resource.endpoint");
  const endpoint = byPath.get(path);
  if (!endpoint) {
    throw new ServiceError(
      grpc.status.NOT_FOUND,
      "not_found",
      `no paid endpoint with path template "${path}"`,
    );
  }
  return {
    requestId: required(requestId, "request_id"),
    endpoint,
    network: resource?.network ?? "",
    url: resource?.url ?? "",
    client,
    ...(noService ? { noService } : {}),
  };
}

export function grpcHandlers(payments: Payments) {
  return {
    async Challenge(req: ChallengeRequest__Output): Promise<ChallengeResponse> {
      const headers = await payments.challenge(pricedCall(req.requestId, req.resource), req.error);
      const problem = payments.problem(undefined, "payment_required", req.error || "payment required");
      return { headers, problem: problem ?? null };
    },
    async Verify(req: VerifyRequest__Output): Promise<VerifyResponse> {
      const outcome = await payments.verify(
        pricedCall(req.requestId, req.resource, req.client, req.noService),
        req.credentials,
      );
      if (outcome.valid) {
        const { paymentId, payer, scheme, noService } = outcome;
        return {
          valid: true,
          paymentId,
          payer,
          scheme,
          noService,
          errorCode: "",
          reason: "",
          headers: [],
          problem: null,
        };
      }
      return {
        valid: false,
        paymentId: "",
        payer: "",
        scheme: outcome.scheme,
        errorCode: outcome.code,
        reason: outcome.reason,
        headers: outcome.headers,
        noService: false,
        problem: outcome.problem ?? null,
      };
    },
    async Settle(
      req: SettleRequest__Output,
      rpc?: { getDeadline(): Date | number },
    ): Promise<SettleResponse> {
      const call = pricedCall(req.requestId, req.resource);
      // A Settle waiting for the same call's settlement elsewhere answers before its caller gives up.
      const deadline = rpc?.getDeadline();
      const outcome = await payments.settle(
        call,
        required(req.paymentId, "payment_id"),
        req.credentials,
        deadline instanceof Date ? deadline.getTime() : deadline,
      );
      if (!outcome.settled) {
        const { code, reason, headers, transaction } = outcome;
        return {
          settled: false,
          errorCode: code,
          reason,
          headers,
          transaction,
          problem: outcome.problem ?? null,
        };
      }
      const { collection } = outcome;
      return {
        settled: true,
        errorCode: "",
        reason: "",
        headers: outcome.headers,
        meta: outcome.meta,
        transaction: collection.kind === "accrual" ? (collection.transaction ?? "") : collection.transaction,
        accrual:
          collection.kind === "accrual"
            ? { channel: collection.channel, amount: collection.amount, cumulative: collection.cumulative }
            : null,
      };
    },
    async Release(req: ReleaseRequest__Output): Promise<Record<string, never>> {
      const requestId = required(req.requestId, "request_id");
      const paymentId = required(req.paymentId, "payment_id");
      const call = req.resource?.endpoint ? pricedCall(requestId, req.resource) : undefined;
      await payments.release(requestId, call, paymentId, req.credentials, req.reason);
      return {};
    },
    async DescribeMethods(): Promise<DescribeMethodsResponse> {
      return { methods: payments.methods() };
    },
  };
}
