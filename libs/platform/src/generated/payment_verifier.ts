import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { CallStatus as _tollgate_mesh_v1_CallStatus, CallStatus__Output as _tollgate_mesh_v1_CallStatus__Output } from './tollgate/mesh/v1/CallStatus.ts';
import type { Accrual as _tollgate_payment_v1_Accrual, Accrual__Output as _tollgate_payment_v1_Accrual__Output } from './tollgate/payment/v1/Accrual.ts';
import type { Answer as _tollgate_payment_v1_Answer, Answer__Output as _tollgate_payment_v1_Answer__Output } from './tollgate/payment/v1/Answer.ts';
import type { ChallengeRequest as _tollgate_payment_v1_ChallengeRequest, ChallengeRequest__Output as _tollgate_payment_v1_ChallengeRequest__Output } from './tollgate/payment/v1/ChallengeRequest.ts';
import type { ChallengeResponse as _tollgate_payment_v1_ChallengeResponse, ChallengeResponse__Output as _tollgate_payment_v1_ChallengeResponse__Output } from './tollgate/payment/v1/ChallengeResponse.ts';
import type { DescribeMethodsRequest as _tollgate_payment_v1_DescribeMethodsRequest, DescribeMethodsRequest__Output as _tollgate_payment_v1_DescribeMethodsRequest__Output } from './tollgate/payment/v1/DescribeMethodsRequest.ts';
import type { DescribeMethodsResponse as _tollgate_payment_v1_DescribeMethodsResponse, DescribeMethodsResponse__Output as _tollgate_payment_v1_DescribeMethodsResponse__Output } from './tollgate/payment/v1/DescribeMethodsResponse.ts';
import type { ExchangeRequest as _tollgate_payment_v1_ExchangeRequest, ExchangeRequest__Output as _tollgate_payment_v1_ExchangeRequest__Output } from './tollgate/payment/v1/ExchangeRequest.ts';
import type { ExchangeResponse as _tollgate_payment_v1_ExchangeResponse, ExchangeResponse__Output as _tollgate_payment_v1_ExchangeResponse__Output } from './tollgate/payment/v1/ExchangeResponse.ts';
import type { Header as _tollgate_payment_v1_Header, Header__Output as _tollgate_payment_v1_Header__Output } from './tollgate/payment/v1/Header.ts';
import type { KeepAnswerRequest as _tollgate_payment_v1_KeepAnswerRequest, KeepAnswerRequest__Output as _tollgate_payment_v1_KeepAnswerRequest__Output } from './tollgate/payment/v1/KeepAnswerRequest.ts';
import type { KeepAnswerResponse as _tollgate_payment_v1_KeepAnswerResponse, KeepAnswerResponse__Output as _tollgate_payment_v1_KeepAnswerResponse__Output } from './tollgate/payment/v1/KeepAnswerResponse.ts';
import type { PaymentMeta as _tollgate_payment_v1_PaymentMeta, PaymentMeta__Output as _tollgate_payment_v1_PaymentMeta__Output } from './tollgate/payment/v1/PaymentMeta.ts';
import type { PaymentMethod as _tollgate_payment_v1_PaymentMethod, PaymentMethod__Output as _tollgate_payment_v1_PaymentMethod__Output } from './tollgate/payment/v1/PaymentMethod.ts';
import type { PaymentVerifierServiceClient as _tollgate_payment_v1_PaymentVerifierServiceClient, PaymentVerifierServiceDefinition as _tollgate_payment_v1_PaymentVerifierServiceDefinition } from './tollgate/payment/v1/PaymentVerifierService.ts';
import type { Problem as _tollgate_payment_v1_Problem, Problem__Output as _tollgate_payment_v1_Problem__Output } from './tollgate/payment/v1/Problem.ts';
import type { ReleaseRequest as _tollgate_payment_v1_ReleaseRequest, ReleaseRequest__Output as _tollgate_payment_v1_ReleaseRequest__Output } from './tollgate/payment/v1/ReleaseRequest.ts';
import type { ReleaseResponse as _tollgate_payment_v1_ReleaseResponse, ReleaseResponse__Output as _tollgate_payment_v1_ReleaseResponse__Output } from './tollgate/payment/v1/ReleaseResponse.ts';
import type { Resource as _tollgate_payment_v1_Resource, Resource__Output as _tollgate_payment_v1_Resource__Output } from './tollgate/payment/v1/Resource.ts';
import type { SettleRequest as _tollgate_payment_v1_SettleRequest, SettleRequest__Output as _tollgate_payment_v1_SettleRequest__Output } from './tollgate/payment/v1/SettleRequest.ts';
import type { SettleResponse as _tollgate_payment_v1_SettleResponse, SettleResponse__Output as _tollgate_payment_v1_SettleResponse__Output } from './tollgate/payment/v1/SettleResponse.ts';
import type { VerifyRequest as _tollgate_payment_v1_VerifyRequest, VerifyRequest__Output as _tollgate_payment_v1_VerifyRequest__Output } from './tollgate/payment/v1/VerifyRequest.ts';
import type { VerifyResponse as _tollgate_payment_v1_VerifyResponse, VerifyResponse__Output as _tollgate_payment_v1_VerifyResponse__Output } from './tollgate/payment/v1/VerifyResponse.ts';
import type { VerifySignInRequest as _tollgate_payment_v1_VerifySignInRequest, VerifySignInRequest__Output as _tollgate_payment_v1_VerifySignInRequest__Output } from './tollgate/payment/v1/VerifySignInRequest.ts';
import type { VerifySignInResponse as _tollgate_payment_v1_VerifySignInResponse, VerifySignInResponse__Output as _tollgate_payment_v1_VerifySignInResponse__Output } from './tollgate/payment/v1/VerifySignInResponse.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  tollgate: {
    mesh: {
      v1: {
        CallStatus: MessageTypeDefinition<_tollgate_mesh_v1_CallStatus, _tollgate_mesh_v1_CallStatus__Output>
      }
    }
    payment: {
      v1: {
        Accrual: MessageTypeDefinition<_tollgate_payment_v1_Accrual, _tollgate_payment_v1_Accrual__Output>
        Answer: MessageTypeDefinition<_tollgate_payment_v1_Answer, _tollgate_payment_v1_Answer__Output>
        ChallengeRequest: MessageTypeDefinition<_tollgate_payment_v1_ChallengeRequest, _tollgate_payment_v1_ChallengeRequest__Output>
        ChallengeResponse: MessageTypeDefinition<_tollgate_payment_v1_ChallengeResponse, _tollgate_payment_v1_ChallengeResponse__Output>
        DescribeMethodsRequest: MessageTypeDefinition<_tollgate_payment_v1_DescribeMethodsRequest, _tollgate_payment_v1_DescribeMethodsRequest__Output>
        DescribeMethodsResponse: MessageTypeDefinition<_tollgate_payment_v1_DescribeMethodsResponse, _tollgate_payment_v1_DescribeMethodsResponse__Output>
        ExchangeRequest: MessageTypeDefinition<_tollgate_payment_v1_ExchangeRequest, _tollgate_payment_v1_ExchangeRequest__Output>
        ExchangeResponse: MessageTypeDefinition<_tollgate_payment_v1_ExchangeResponse, _tollgate_payment_v1_ExchangeResponse__Output>
        Header: MessageTypeDefinition<_tollgate_payment_v1_Header, _tollgate_payment_v1_Header__Output>
        KeepAnswerRequest: MessageTypeDefinition<_tollgate_payment_v1_KeepAnswerRequest, _tollgate_payment_v1_KeepAnswerRequest__Output>
        KeepAnswerResponse: MessageTypeDefinition<_tollgate_payment_v1_KeepAnswerResponse, _tollgate_payment_v1_KeepAnswerResponse__Output>
        PaymentError: EnumTypeDefinition
        PaymentMeta: MessageTypeDefinition<_tollgate_payment_v1_PaymentMeta, _tollgate_payment_v1_PaymentMeta__Output>
        PaymentMethod: MessageTypeDefinition<_tollgate_payment_v1_PaymentMethod, _tollgate_payment_v1_PaymentMethod__Output>
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
        PaymentVerifierService: SubtypeConstructor<typeof grpc.Client, _tollgate_payment_v1_PaymentVerifierServiceClient> & { service: _tollgate_payment_v1_PaymentVerifierServiceDefinition }
        Problem: MessageTypeDefinition<_tollgate_payment_v1_Problem, _tollgate_payment_v1_Problem__Output>
        ReleaseRequest: MessageTypeDefinition<_tollgate_payment_v1_ReleaseRequest, _tollgate_payment_v1_ReleaseRequest__Output>
        ReleaseResponse: MessageTypeDefinition<_tollgate_payment_v1_ReleaseResponse, _tollgate_payment_v1_ReleaseResponse__Output>
        Resource: MessageTypeDefinition<_tollgate_payment_v1_Resource, _tollgate_payment_v1_Resource__Output>
        SettleRequest: MessageTypeDefinition<_tollgate_payment_v1_SettleRequest, _tollgate_payment_v1_SettleRequest__Output>
        SettleResponse: MessageTypeDefinition<_tollgate_payment_v1_SettleResponse, _tollgate_payment_v1_SettleResponse__Output>
        SignInError: EnumTypeDefinition
        VerifyRequest: MessageTypeDefinition<_tollgate_payment_v1_VerifyRequest, _tollgate_payment_v1_VerifyRequest__Output>
        VerifyResponse: MessageTypeDefinition<_tollgate_payment_v1_VerifyResponse, _tollgate_payment_v1_VerifyResponse__Output>
        VerifySignInRequest: MessageTypeDefinition<_tollgate_payment_v1_VerifySignInRequest, _tollgate_payment_v1_VerifySignInRequest__Output>
        VerifySignInResponse: MessageTypeDefinition<_tollgate_payment_v1_VerifySignInResponse, _tollgate_payment_v1_VerifySignInResponse__Output>
      }
    }
  }
}

