// The gRPC face of the payment core: turns PaymentVerifierService requests into plain calls on
// Payments and its answers back into proto messages. Requests the gateway could never send (no
// endpoint, an unknown endpoint, an empty request or payment id) fail with INVALID_ARGUMENT /
// NOT_FOUND; payment problems are answers. Every text a refusal carries to the client (reason,
// problem, headers such as PAYMENT-REQUIRED) is redacted as log lines are: a library's error
// message can quote the settlement chain's URL, and a provider key in its path.
import { type Endpoint, paidResource, RPC_ENDPOINT } from "@tollgate/catalog";
import { grpc, redactForClient, ServiceError } from "@tollgate/platform";
import type { ChallengeRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/ChallengeRequest";
import type { ChallengeResponse } from "@tollgate/platform/generated/tollgate/payment/v1/ChallengeResponse";
import type { DescribeMethodsResponse } from "@tollgate/platform/generated/tollgate/payment/v1/DescribeMethodsResponse";
import type { Header } from "@tollgate/platform/generated/tollgate/payment/v1/Header";
import type { KeepAnswerRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/KeepAnswerRequest";
import type { KeepAnswerResponse } from "@tollgate/platform/generated/tollgate/payment/v1/KeepAnswerResponse";
import type { PaymentError__Output } from "@tollgate/platform/generated/tollgate/payment/v1/PaymentError";
import type { Problem } from "@tollgate/platform/generated/tollgate/payment/v1/Problem";
import type { ReleaseRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/ReleaseRequest";
import type { Resource__Output } from "@tollgate/platform/generated/tollgate/payment/v1/Resource";
import type { SettleRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/SettleRequest";
import type { SettleResponse } from "@tollgate/platform/generated/tollgate/payment/v1/SettleResponse";
import type { VerifyRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/VerifyRequest";
import type { VerifyResponse } from "@tollgate/platform/generated/tollgate/payment/v1/VerifyResponse";
import type { VerifySignInRequest__Output } from "@tollgate/platform/generated/tollgate/payment/v1/VerifySignInRequest";
import type { VerifySignInResponse } from "@tollgate/platform/generated/tollgate/payment/v1/VerifySignInResponse";
import { eventOutcome, splitPaymentId } from "./core/context.ts";
import { settlementEventId } from "./core/events.ts";
import type { Payments } from "./core/payments.ts";
import type { PaymentErrorCode, PricedCall } from "./core/types.ts";
import type { SignInOutcome, SignInWithX } from "./protocols/sign-in-with-x.ts";

/**
 * The proto enum value of each core error code, named after it: a code the core adds without its
 * PaymentError value in the proto (or without its line here) fails to compile.
 */
const PAYMENT_ERROR: { [C in PaymentErrorCode]: `PAYMENT_ERROR_${Uppercase<C>}` & PaymentError__Output } = {
  payment_required: "PAYMENT_ERROR_PAYMENT_REQUIRED",
  payment_invalid: "PAYMENT_ERROR_PAYMENT_INVALID",
  rate_limited: "PAYMENT_ERROR_RATE_LIMITED",
  service_unavailable: "PAYMENT_ERROR_SERVICE_UNAVAILABLE",
  not_applicable: "PAYMENT_ERROR_NOT_APPLICABLE",
  identifier_conflict: "PAYMENT_ERROR_IDENTIFIER_CONFLICT",
  identifier_in_progress: "PAYMENT_ERROR_IDENTIFIER_IN_PROGRESS",
};

/**
 * The deprecated `error_code` string (see the proto): a gateway of the last release knows only
 * these, so the identifier's refusals (and a first answer given again) read as payment_invalid
 * there: refused, nothing served or charged.
 */
function legacyCode(code: PaymentErrorCode): string {
  return code === "identifier_conflict" || code === "identifier_in_progress" ? "payment_invalid" : code;
}

/** A refusal's headers for the client: each value redacted (only a changed one is copied). */
function redactHeaders(headers: Header[]): Header[] {
  return headers.map((h) => {
    const value = redactForClient(h.value ?? "");
    return value === h.value ? h : { ...h, value };
  });
}

function redactProblem(problem: Problem | null | undefined): Problem | null {
  if (!problem) return null;
  return {
    type: redactForClient(problem.type ?? ""),
    title: redactForClient(problem.title ?? ""),
    detail: redactForClient(problem.detail ?? ""),
  };
}

function required(value: string, name: string): string {
  if (!value)
    throw new ServiceError(grpc.status.INVALID_ARGUMENT, "invalid_parameter", `${name} is required`);
  return value;
}

/** Resolves the gRPC Resource to a priced call; an unknown endpoint is the caller's bug. */
function pricedCall(
  requestId: string,
  resource: Resource__Output | null,
  client = "",
  noService = false,
  digest = "",
): PricedCall {
  const path = required(resource?.endpoint ?? "", "resource.endpoint");
  // A bodiless POST to /rpc/{network} (an MPP session's close or top-up) has no calls to price it
  // by: it is named by the template, which names no call to serve (a body is named by its calls).
  const template = path === RPC_ENDPOINT.path;
  const endpoint: Endpoint | undefined = template ? RPC_ENDPOINT : paidResource(path);
  if (!endpoint) {
    throw new ServiceError(
      grpc.status.NOT_FOUND,
      "not_found",
      `no paid endpoint with path template "${path}"`,
    );
  }
  const account = resource?.account ?? "";
  if (account && !endpoint.topUp) {
    throw new ServiceError(
      grpc.status.INVALID_ARGUMENT,
      "invalid_parameter",
      "resource.account is for top-ups only",
    );
  }
  return {
    requestId: required(requestId, "request_id"),
    endpoint,
    network: resource?.network ?? "",
    url: resource?.url ?? "",
    client,
    ...(noService || template ? { noService: true } : {}),
    ...(account ? { account } : {}),
    ...(digest ? { digest } : {}),
  };
}

/** The proto enum value of each sign-in refusal. */
const SIGN_IN_ERROR = {
  invalid: "SIGN_IN_ERROR_INVALID",
  rate_limited: "SIGN_IN_ERROR_RATE_LIMITED",
  service_unavailable: "SIGN_IN_ERROR_SERVICE_UNAVAILABLE",
} as const satisfies Record<Extract<SignInOutcome, { valid: false }>["error"], string>;

export function grpcHandlers(payments: Payments, signIn: SignInWithX) {
  return {
    async Challenge(req: ChallengeRequest__Output): Promise<ChallengeResponse> {
      // The gateway's error text is redacted before it is rendered into the offers.
      const error = redactForClient(req.error);
      const headers = await payments.challenge(pricedCall(req.requestId, req.resource), error);
      const problem = payments.problem(undefined, "payment_required", error || "payment required");
      return { headers, problem: problem ?? null };
    },
    async Verify(req: VerifyRequest__Output): Promise<VerifyResponse> {
      const outcome = await payments.verify(
        pricedCall(req.requestId, req.resource, req.client, req.noService, req.requestDigest),
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
          answerMaxBytes: outcome.answerMaxBytes ?? 0,
          error: "PAYMENT_ERROR_UNSPECIFIED",
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
        // A first answer given again is no refusal: `answer` says it.
        error: outcome.answer ? "PAYMENT_ERROR_UNSPECIFIED" : PAYMENT_ERROR[outcome.code],
        // Deprecated, filled for one release (see the proto).
        errorCode: legacyCode(outcome.code),
        reason: redactForClient(outcome.reason),
        headers: redactHeaders(outcome.headers),
        noService: false,
        problem: redactProblem(outcome.problem),
        answer: outcome.answer ?? null,
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
          error: PAYMENT_ERROR[code],
          // Deprecated, filled for one release (see the proto).
          errorCode: code,
          reason: redactForClient(reason),
          headers: redactHeaders(headers),
          transaction,
          problem: redactProblem(outcome.problem),
        };
      }
      const { collection } = outcome;
      const token = splitPaymentId(req.paymentId)?.token ?? "";
      return {
        settled: true,
        // A refund's event is the settlement worker's: no event of this service names it.
        settlementId: collection.kind === "refund" ? "" : settlementEventId(token, eventOutcome(collection)),
        error: "PAYMENT_ERROR_UNSPECIFIED",
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
    async VerifySignIn(req: VerifySignInRequest__Output): Promise<VerifySignInResponse> {
      // The resource is only read for its URL (the origin a proof must name); it must be a chain call.
      const call = pricedCall(req.requestId, req.resource, req.client);
      if (call.endpoint.topUp) {
        throw new ServiceError(
          grpc.status.INVALID_ARGUMENT,
          "invalid_parameter",
          "sign-in is for chain calls",
        );
      }
      const outcome = await signIn.verify({
        requestId: call.requestId,
        url: call.url,
        proof: req.proof,
        client: call.client,
      });
      if (outcome.valid) {
        return {
          valid: true,
          wallet: outcome.wallet,
          chainId: outcome.chainId,
          error: "SIGN_IN_ERROR_UNSPECIFIED",
        };
      }
      return {
        valid: false,
        error: SIGN_IN_ERROR[outcome.error],
        // The reason may quote what the client sent; redacted as every refusal's text is.
        reason: redactForClient(outcome.reason),
        code: outcome.code,
      };
    },
    async KeepAnswer(req: KeepAnswerRequest__Output): Promise<KeepAnswerResponse> {
      required(req.requestId, "request_id");
      const paymentId = required(req.paymentId, "payment_id");
      const answer = req.answer ?? { status: 0, headers: [], body: "" };
      const kept = await payments.keepAnswer(
        paymentId,
        req.credentials,
        { status: answer.status, headers: answer.headers, body: answer.body },
        req.tooLarge,
      );
      return { kept };
    },
    async DescribeMethods(): Promise<DescribeMethodsResponse> {
      return { methods: payments.methods() };
    },
  };
}
