// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ChallengeRequest as _tollgate_payment_v1_ChallengeRequest, ChallengeRequest__Output as _tollgate_payment_v1_ChallengeRequest__Output } from '../../../tollgate/payment/v1/ChallengeRequest.ts';
import type { ChallengeResponse as _tollgate_payment_v1_ChallengeResponse, ChallengeResponse__Output as _tollgate_payment_v1_ChallengeResponse__Output } from '../../../tollgate/payment/v1/ChallengeResponse.ts';
import type { DescribeMethodsRequest as _tollgate_payment_v1_DescribeMethodsRequest, DescribeMethodsRequest__Output as _tollgate_payment_v1_DescribeMethodsRequest__Output } from '../../../tollgate/payment/v1/DescribeMethodsRequest.ts';
import type { DescribeMethodsResponse as _tollgate_payment_v1_DescribeMethodsResponse, DescribeMethodsResponse__Output as _tollgate_payment_v1_DescribeMethodsResponse__Output } from '../../../tollgate/payment/v1/DescribeMethodsResponse.ts';
import type { ExchangeRequest as _tollgate_payment_v1_ExchangeRequest, ExchangeRequest__Output as _tollgate_payment_v1_ExchangeRequest__Output } from '../../../tollgate/payment/v1/ExchangeRequest.ts';
import type { ExchangeResponse as _tollgate_payment_v1_ExchangeResponse, ExchangeResponse__Output as _tollgate_payment_v1_ExchangeResponse__Output } from '../../../tollgate/payment/v1/ExchangeResponse.ts';
import type { KeepAnswerRequest as _tollgate_payment_v1_KeepAnswerRequest, KeepAnswerRequest__Output as _tollgate_payment_v1_KeepAnswerRequest__Output } from '../../../tollgate/payment/v1/KeepAnswerRequest.ts';
import type { KeepAnswerResponse as _tollgate_payment_v1_KeepAnswerResponse, KeepAnswerResponse__Output as _tollgate_payment_v1_KeepAnswerResponse__Output } from '../../../tollgate/payment/v1/KeepAnswerResponse.ts';
import type { ReleaseRequest as _tollgate_payment_v1_ReleaseRequest, ReleaseRequest__Output as _tollgate_payment_v1_ReleaseRequest__Output } from '../../../tollgate/payment/v1/ReleaseRequest.ts';
import type { ReleaseResponse as _tollgate_payment_v1_ReleaseResponse, ReleaseResponse__Output as _tollgate_payment_v1_ReleaseResponse__Output } from '../../../tollgate/payment/v1/ReleaseResponse.ts';
import type { SettleRequest as _tollgate_payment_v1_SettleRequest, SettleRequest__Output as _tollgate_payment_v1_SettleRequest__Output } from '../../../tollgate/payment/v1/SettleRequest.ts';
import type { SettleResponse as _tollgate_payment_v1_SettleResponse, SettleResponse__Output as _tollgate_payment_v1_SettleResponse__Output } from '../../../tollgate/payment/v1/SettleResponse.ts';
import type { VerifyRequest as _tollgate_payment_v1_VerifyRequest, VerifyRequest__Output as _tollgate_payment_v1_VerifyRequest__Output } from '../../../tollgate/payment/v1/VerifyRequest.ts';
import type { VerifyResponse as _tollgate_payment_v1_VerifyResponse, VerifyResponse__Output as _tollgate_payment_v1_VerifyResponse__Output } from '../../../tollgate/payment/v1/VerifyResponse.ts';
import type { VerifySignInRequest as _tollgate_payment_v1_VerifySignInRequest, VerifySignInRequest__Output as _tollgate_payment_v1_VerifySignInRequest__Output } from '../../../tollgate/payment/v1/VerifySignInRequest.ts';
import type { VerifySignInResponse as _tollgate_payment_v1_VerifySignInResponse, VerifySignInResponse__Output as _tollgate_payment_v1_VerifySignInResponse__Output } from '../../../tollgate/payment/v1/VerifySignInResponse.ts';

/**
 * PaymentVerifierService owns every payment scheme (x402 `exact`, x402 `x402-batch`,
 * MPP `charge` and `session`). The gateway forwards the payment headers untouched and
 * copies back the headers this service returns; it never interprets a payment.
 * 
 * The call order for a paid request is Verify → upstream call → Settle (the node answered:
 * data, a revert, a not-found) or Release (no answer: 5xx, timeout, result too large), so a
 * call that got no answer is never charged. Every id that makes something happen once
 * (request_id, payment_id) is generated inside the mesh, never taken from a client.
 */
export interface PaymentVerifierServiceClient extends grpc.Client {
  /**
   * Challenge builds the 402 offers (PAYMENT-REQUIRED, WWW-Authenticate) for a resource.
   */
  Challenge(argument: _tollgate_payment_v1_ChallengeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_ChallengeResponse__Output>): grpc.ClientUnaryCall;
  Challenge(argument: _tollgate_payment_v1_ChallengeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_ChallengeResponse__Output>): grpc.ClientUnaryCall;
  Challenge(argument: _tollgate_payment_v1_ChallengeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_ChallengeResponse__Output>): grpc.ClientUnaryCall;
  Challenge(argument: _tollgate_payment_v1_ChallengeRequest, callback: grpc.requestCallback<_tollgate_payment_v1_ChallengeResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Challenge builds the 402 offers (PAYMENT-REQUIRED, WWW-Authenticate) for a resource.
   */
  challenge(argument: _tollgate_payment_v1_ChallengeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_ChallengeResponse__Output>): grpc.ClientUnaryCall;
  challenge(argument: _tollgate_payment_v1_ChallengeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_ChallengeResponse__Output>): grpc.ClientUnaryCall;
  challenge(argument: _tollgate_payment_v1_ChallengeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_ChallengeResponse__Output>): grpc.ClientUnaryCall;
  challenge(argument: _tollgate_payment_v1_ChallengeRequest, callback: grpc.requestCallback<_tollgate_payment_v1_ChallengeResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * DescribeMethods lists the accepted payment methods, for /api/pricing and docs.
   */
  DescribeMethods(argument: _tollgate_payment_v1_DescribeMethodsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_DescribeMethodsResponse__Output>): grpc.ClientUnaryCall;
  DescribeMethods(argument: _tollgate_payment_v1_DescribeMethodsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_DescribeMethodsResponse__Output>): grpc.ClientUnaryCall;
  DescribeMethods(argument: _tollgate_payment_v1_DescribeMethodsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_DescribeMethodsResponse__Output>): grpc.ClientUnaryCall;
  DescribeMethods(argument: _tollgate_payment_v1_DescribeMethodsRequest, callback: grpc.requestCallback<_tollgate_payment_v1_DescribeMethodsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * DescribeMethods lists the accepted payment methods, for /api/pricing and docs.
   */
  describeMethods(argument: _tollgate_payment_v1_DescribeMethodsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_DescribeMethodsResponse__Output>): grpc.ClientUnaryCall;
  describeMethods(argument: _tollgate_payment_v1_DescribeMethodsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_DescribeMethodsResponse__Output>): grpc.ClientUnaryCall;
  describeMethods(argument: _tollgate_payment_v1_DescribeMethodsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_DescribeMethodsResponse__Output>): grpc.ClientUnaryCall;
  describeMethods(argument: _tollgate_payment_v1_DescribeMethodsRequest, callback: grpc.requestCallback<_tollgate_payment_v1_DescribeMethodsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Exchange carries Challenge, Verify, Settle and Release calls as messages on one long-lived
   * stream (tollgate/mesh/v1/exchange.proto): the same handlers, answers and errors as the unary
   * methods, without a new HTTP/2 stream per call (in grpc-js a unary call costs about five times a
   * stream message, and a paid request makes two). Calls on one stream run concurrently; each
   * answer names its call's id. A stream ends when its caller ends it, or after its calls are
   * answered when the service drains; a call whose stream broke before its answer is retried like
   * a unary call that failed UNAVAILABLE (every method here is safe to repeat).
   */
  Exchange(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_tollgate_payment_v1_ExchangeRequest, _tollgate_payment_v1_ExchangeResponse__Output>;
  Exchange(options?: grpc.CallOptions): grpc.ClientDuplexStream<_tollgate_payment_v1_ExchangeRequest, _tollgate_payment_v1_ExchangeResponse__Output>;
  /**
   * Exchange carries Challenge, Verify, Settle and Release calls as messages on one long-lived
   * stream (tollgate/mesh/v1/exchange.proto): the same handlers, answers and errors as the unary
   * methods, without a new HTTP/2 stream per call (in grpc-js a unary call costs about five times a
   * stream message, and a paid request makes two). Calls on one stream run concurrently; each
   * answer names its call's id. A stream ends when its caller ends it, or after its calls are
   * answered when the service drains; a call whose stream broke before its answer is retried like
   * a unary call that failed UNAVAILABLE (every method here is safe to repeat).
   */
  exchange(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_tollgate_payment_v1_ExchangeRequest, _tollgate_payment_v1_ExchangeResponse__Output>;
  exchange(options?: grpc.CallOptions): grpc.ClientDuplexStream<_tollgate_payment_v1_ExchangeRequest, _tollgate_payment_v1_ExchangeResponse__Output>;
  
  /**
   * KeepAnswer hands over the answer a settled payment bought when its Verify asked for it
   * (VerifyResponse.answer_max_bytes: an x402 payment carrying a payment identifier), so a retry of
   * the same payment with that identifier gets it again instead of a second call and charge.
   */
  KeepAnswer(argument: _tollgate_payment_v1_KeepAnswerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_KeepAnswerResponse__Output>): grpc.ClientUnaryCall;
  KeepAnswer(argument: _tollgate_payment_v1_KeepAnswerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_KeepAnswerResponse__Output>): grpc.ClientUnaryCall;
  KeepAnswer(argument: _tollgate_payment_v1_KeepAnswerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_KeepAnswerResponse__Output>): grpc.ClientUnaryCall;
  KeepAnswer(argument: _tollgate_payment_v1_KeepAnswerRequest, callback: grpc.requestCallback<_tollgate_payment_v1_KeepAnswerResponse__Output>): grpc.ClientUnaryCall;
  /**
   * KeepAnswer hands over the answer a settled payment bought when its Verify asked for it
   * (VerifyResponse.answer_max_bytes: an x402 payment carrying a payment identifier), so a retry of
   * the same payment with that identifier gets it again instead of a second call and charge.
   */
  keepAnswer(argument: _tollgate_payment_v1_KeepAnswerRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_KeepAnswerResponse__Output>): grpc.ClientUnaryCall;
  keepAnswer(argument: _tollgate_payment_v1_KeepAnswerRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_KeepAnswerResponse__Output>): grpc.ClientUnaryCall;
  keepAnswer(argument: _tollgate_payment_v1_KeepAnswerRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_KeepAnswerResponse__Output>): grpc.ClientUnaryCall;
  keepAnswer(argument: _tollgate_payment_v1_KeepAnswerRequest, callback: grpc.requestCallback<_tollgate_payment_v1_KeepAnswerResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Release frees a verified payment whose call failed, so it can be used again.
   */
  Release(argument: _tollgate_payment_v1_ReleaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  Release(argument: _tollgate_payment_v1_ReleaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  Release(argument: _tollgate_payment_v1_ReleaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  Release(argument: _tollgate_payment_v1_ReleaseRequest, callback: grpc.requestCallback<_tollgate_payment_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Release frees a verified payment whose call failed, so it can be used again.
   */
  release(argument: _tollgate_payment_v1_ReleaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  release(argument: _tollgate_payment_v1_ReleaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  release(argument: _tollgate_payment_v1_ReleaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  release(argument: _tollgate_payment_v1_ReleaseRequest, callback: grpc.requestCallback<_tollgate_payment_v1_ReleaseResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Settle collects a verified payment after the upstream call succeeded.
   */
  Settle(argument: _tollgate_payment_v1_SettleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_SettleResponse__Output>): grpc.ClientUnaryCall;
  Settle(argument: _tollgate_payment_v1_SettleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_SettleResponse__Output>): grpc.ClientUnaryCall;
  Settle(argument: _tollgate_payment_v1_SettleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_SettleResponse__Output>): grpc.ClientUnaryCall;
  Settle(argument: _tollgate_payment_v1_SettleRequest, callback: grpc.requestCallback<_tollgate_payment_v1_SettleResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Settle collects a verified payment after the upstream call succeeded.
   */
  settle(argument: _tollgate_payment_v1_SettleRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_SettleResponse__Output>): grpc.ClientUnaryCall;
  settle(argument: _tollgate_payment_v1_SettleRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_SettleResponse__Output>): grpc.ClientUnaryCall;
  settle(argument: _tollgate_payment_v1_SettleRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_SettleResponse__Output>): grpc.ClientUnaryCall;
  settle(argument: _tollgate_payment_v1_SettleRequest, callback: grpc.requestCallback<_tollgate_payment_v1_SettleResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Verify checks a payment credential and reserves it so no replica serves it twice.
   */
  Verify(argument: _tollgate_payment_v1_VerifyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_VerifyResponse__Output>): grpc.ClientUnaryCall;
  Verify(argument: _tollgate_payment_v1_VerifyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_VerifyResponse__Output>): grpc.ClientUnaryCall;
  Verify(argument: _tollgate_payment_v1_VerifyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_VerifyResponse__Output>): grpc.ClientUnaryCall;
  Verify(argument: _tollgate_payment_v1_VerifyRequest, callback: grpc.requestCallback<_tollgate_payment_v1_VerifyResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Verify checks a payment credential and reserves it so no replica serves it twice.
   */
  verify(argument: _tollgate_payment_v1_VerifyRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_VerifyResponse__Output>): grpc.ClientUnaryCall;
  verify(argument: _tollgate_payment_v1_VerifyRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_VerifyResponse__Output>): grpc.ClientUnaryCall;
  verify(argument: _tollgate_payment_v1_VerifyRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_VerifyResponse__Output>): grpc.ClientUnaryCall;
  verify(argument: _tollgate_payment_v1_VerifyRequest, callback: grpc.requestCallback<_tollgate_payment_v1_VerifyResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * VerifySignIn checks a sign-in-with-x proof (the x402 `sign-in-with-x` extension, CAIP-122 /
   * EIP-4361): its domain and URI against this deployment's public origin, its time window, its
   * signature (a smart wallet's with a read of the settlement chain), and uses up its nonce so no
   * replica accepts it again. Not a payment: the gateway serves a valid proof on the wallet's
   * account (quota-meter's AuthorizeRequest.wallet). Safe to repeat for the same request_id.
   */
  VerifySignIn(argument: _tollgate_payment_v1_VerifySignInRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_VerifySignInResponse__Output>): grpc.ClientUnaryCall;
  VerifySignIn(argument: _tollgate_payment_v1_VerifySignInRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_VerifySignInResponse__Output>): grpc.ClientUnaryCall;
  VerifySignIn(argument: _tollgate_payment_v1_VerifySignInRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_VerifySignInResponse__Output>): grpc.ClientUnaryCall;
  VerifySignIn(argument: _tollgate_payment_v1_VerifySignInRequest, callback: grpc.requestCallback<_tollgate_payment_v1_VerifySignInResponse__Output>): grpc.ClientUnaryCall;
  /**
   * VerifySignIn checks a sign-in-with-x proof (the x402 `sign-in-with-x` extension, CAIP-122 /
   * EIP-4361): its domain and URI against this deployment's public origin, its time window, its
   * signature (a smart wallet's with a read of the settlement chain), and uses up its nonce so no
   * replica accepts it again. Not a payment: the gateway serves a valid proof on the wallet's
   * account (quota-meter's AuthorizeRequest.wallet). Safe to repeat for the same request_id.
   */
  verifySignIn(argument: _tollgate_payment_v1_VerifySignInRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_VerifySignInResponse__Output>): grpc.ClientUnaryCall;
  verifySignIn(argument: _tollgate_payment_v1_VerifySignInRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_tollgate_payment_v1_VerifySignInResponse__Output>): grpc.ClientUnaryCall;
  verifySignIn(argument: _tollgate_payment_v1_VerifySignInRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_tollgate_payment_v1_VerifySignInResponse__Output>): grpc.ClientUnaryCall;
  verifySignIn(argument: _tollgate_payment_v1_VerifySignInRequest, callback: grpc.requestCallback<_tollgate_payment_v1_VerifySignInResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * PaymentVerifierService owns every payment scheme (x402 `exact`, x402 `x402-batch`,
 * MPP `charge` and `session`). The gateway forwards the payment headers untouched and
 * copies back the headers this service returns; it never interprets a payment.
 * 
 * The call order for a paid request is Verify → upstream call → Settle (the node answered:
 * data, a revert, a not-found) or Release (no answer: 5xx, timeout, result too large), so a
 * call that got no answer is never charged. Every id that makes something happen once
 * (request_id, payment_id) is generated inside the mesh, never taken from a client.
 */
export interface PaymentVerifierServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Challenge builds the 402 offers (PAYMENT-REQUIRED, WWW-Authenticate) for a resource.
   */
  Challenge: grpc.handleUnaryCall<_tollgate_payment_v1_ChallengeRequest__Output, _tollgate_payment_v1_ChallengeResponse>;
  
  /**
   * DescribeMethods lists the accepted payment methods, for /api/pricing and docs.
   */
  DescribeMethods: grpc.handleUnaryCall<_tollgate_payment_v1_DescribeMethodsRequest__Output, _tollgate_payment_v1_DescribeMethodsResponse>;
  
  /**
   * Exchange carries Challenge, Verify, Settle and Release calls as messages on one long-lived
   * stream (tollgate/mesh/v1/exchange.proto): the same handlers, answers and errors as the unary
   * methods, without a new HTTP/2 stream per call (in grpc-js a unary call costs about five times a
   * stream message, and a paid request makes two). Calls on one stream run concurrently; each
   * answer names its call's id. A stream ends when its caller ends it, or after its calls are
   * answered when the service drains; a call whose stream broke before its answer is retried like
   * a unary call that failed UNAVAILABLE (every method here is safe to repeat).
   */
  Exchange: grpc.handleBidiStreamingCall<_tollgate_payment_v1_ExchangeRequest__Output, _tollgate_payment_v1_ExchangeResponse>;
  
  /**
   * KeepAnswer hands over the answer a settled payment bought when its Verify asked for it
   * (VerifyResponse.answer_max_bytes: an x402 payment carrying a payment identifier), so a retry of
   * the same payment with that identifier gets it again instead of a second call and charge.
   */
  KeepAnswer: grpc.handleUnaryCall<_tollgate_payment_v1_KeepAnswerRequest__Output, _tollgate_payment_v1_KeepAnswerResponse>;
  
  /**
   * Release frees a verified payment whose call failed, so it can be used again.
   */
  Release: grpc.handleUnaryCall<_tollgate_payment_v1_ReleaseRequest__Output, _tollgate_payment_v1_ReleaseResponse>;
  
  /**
   * Settle collects a verified payment after the upstream call succeeded.
   */
  Settle: grpc.handleUnaryCall<_tollgate_payment_v1_SettleRequest__Output, _tollgate_payment_v1_SettleResponse>;
  
  /**
   * Verify checks a payment credential and reserves it so no replica serves it twice.
   */
  Verify: grpc.handleUnaryCall<_tollgate_payment_v1_VerifyRequest__Output, _tollgate_payment_v1_VerifyResponse>;
  
  /**
   * VerifySignIn checks a sign-in-with-x proof (the x402 `sign-in-with-x` extension, CAIP-122 /
   * EIP-4361): its domain and URI against this deployment's public origin, its time window, its
   * signature (a smart wallet's with a read of the settlement chain), and uses up its nonce so no
   * replica accepts it again. Not a payment: the gateway serves a valid proof on the wallet's
   * account (quota-meter's AuthorizeRequest.wallet). Safe to repeat for the same request_id.
   */
  VerifySignIn: grpc.handleUnaryCall<_tollgate_payment_v1_VerifySignInRequest__Output, _tollgate_payment_v1_VerifySignInResponse>;
  
}

export interface PaymentVerifierServiceDefinition extends grpc.ServiceDefinition {
  Challenge: MethodDefinition<_tollgate_payment_v1_ChallengeRequest, _tollgate_payment_v1_ChallengeResponse, _tollgate_payment_v1_ChallengeRequest__Output, _tollgate_payment_v1_ChallengeResponse__Output>
  DescribeMethods: MethodDefinition<_tollgate_payment_v1_DescribeMethodsRequest, _tollgate_payment_v1_DescribeMethodsResponse, _tollgate_payment_v1_DescribeMethodsRequest__Output, _tollgate_payment_v1_DescribeMethodsResponse__Output>
  Exchange: MethodDefinition<_tollgate_payment_v1_ExchangeRequest, _tollgate_payment_v1_ExchangeResponse, _tollgate_payment_v1_ExchangeRequest__Output, _tollgate_payment_v1_ExchangeResponse__Output>
  KeepAnswer: MethodDefinition<_tollgate_payment_v1_KeepAnswerRequest, _tollgate_payment_v1_KeepAnswerResponse, _tollgate_payment_v1_KeepAnswerRequest__Output, _tollgate_payment_v1_KeepAnswerResponse__Output>
  Release: MethodDefinition<_tollgate_payment_v1_ReleaseRequest, _tollgate_payment_v1_ReleaseResponse, _tollgate_payment_v1_ReleaseRequest__Output, _tollgate_payment_v1_ReleaseResponse__Output>
  Settle: MethodDefinition<_tollgate_payment_v1_SettleRequest, _tollgate_payment_v1_SettleResponse, _tollgate_payment_v1_SettleRequest__Output, _tollgate_payment_v1_SettleResponse__Output>
  Verify: MethodDefinition<_tollgate_payment_v1_VerifyRequest, _tollgate_payment_v1_VerifyResponse, _tollgate_payment_v1_VerifyRequest__Output, _tollgate_payment_v1_VerifyResponse__Output>
  VerifySignIn: MethodDefinition<_tollgate_payment_v1_VerifySignInRequest, _tollgate_payment_v1_VerifySignInResponse, _tollgate_payment_v1_VerifySignInRequest__Output, _tollgate_payment_v1_VerifySignInResponse__Output>
}
