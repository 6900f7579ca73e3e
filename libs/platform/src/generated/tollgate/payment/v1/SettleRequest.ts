// Original file: ../../proto/tollgate/payment/v1/payment_verifier.proto

import type { Resource as _tollgate_payment_v1_Resource, Resource__Output as _tollgate_payment_v1_Resource__Output } from '../../../tollgate/payment/v1/Resource.ts';
import type { Header as _tollgate_payment_v1_Header, Header__Output as _tollgate_payment_v1_Header__Output } from '../../../tollgate/payment/v1/Header.ts';

export interface SettleRequest {
  'requestId'?: (string);
  'paymentId'?: (string);
  'resource'?: (_tollgate_payment_v1_Resource | null);
  'credentials'?: (_tollgate_payment_v1_Header)[];
}

export interface SettleRequest__Output {
  'requestId': (string);
  'paymentId': (string);
  'resource': (_tollgate_payment_v1_Resource__Output | null);
  'credentials': (_tollgate_payment_v1_Header__Output)[];
}
